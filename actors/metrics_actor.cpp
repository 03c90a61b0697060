// Implementation notes: the JSON line of an epoch needs both phases, so the training report
// is held until the validation report of the same epoch arrives. Speed is measured between
// report arrivals, which trails the compute actor by one message at most.
#include <troupe/actors/metrics_actor.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/io/metrics_log.hpp>
#include <troupe/io/node_events.hpp>

#include "actors/metrics_state.hpp"

namespace troupe {

std::string run_position::text() const {
  const auto e = std::to_string(epoch.load());
  if (validating)
    return "epoch " + e + " at validation";
  if (batch < 0)
    return "epoch " + e + " before its first batch";
  return "epoch " + e + " at batch " + std::to_string(batch.load() + 1) + " of "
         + std::to_string(batches.load());
}

namespace {

using metrics_pointer = metrics_actor::stateful_pointer<metrics_state>;

double ratio(double a, std::int64_t b) {
  return b > 0 ? a / static_cast<double>(b) : 0.0;
}

void write_epoch_line(metrics_state& st, const phase_report& train, const phase_report* val) {
  if (!st.jsonl)
    return;
  if (train.epoch <= st.options.written_through) { // in the file already (a restarted scheduler)
    st.annotations.erase(train.epoch);
    return;
  }
  std::vector<std::pair<std::string, double>> numbers{
    {"epoch", static_cast<double>(train.epoch)},
    {"time", unix_seconds()},
    {"train_accuracy", ratio(train.correct, train.samples)},
    {"train_loss", ratio(train.loss_sum, train.samples)},
    {"time_s", train.seconds},
    {"samples_per_s", train.seconds > 0 ? train.samples / train.seconds : 0.0},
    {"train_samples", static_cast<double>(train.samples)},
    {"train_skipped", static_cast<double>(train.skipped)},
    {"learning_rate", st.learning_rate},
  };
  if (train.top_k > 0) {
    numbers.push_back({"top_k", static_cast<double>(train.top_k)});
    numbers.push_back({"train_top_k_accuracy", ratio(train.top_k_correct, train.samples)});
  }
  for (const auto& [key, value] : st.options.number_tags)
    numbers.push_back({key, value});
  if (const auto p = st.pushed.find(train.epoch); p != st.pushed.end() && p->second.values > 0) {
    numbers.push_back({"pushed_values", static_cast<double>(p->second.values)});
    numbers.push_back({"sent_share", ratio(p->second.sent, p->second.values)});
  }
  st.pushed.erase(st.pushed.begin(), st.pushed.upper_bound(train.epoch));
  if (val) {
    numbers.push_back({"val_accuracy", ratio(val->correct, val->samples)});
    numbers.push_back({"val_loss", ratio(val->loss_sum, val->samples)});
    numbers.push_back({"val_time_s", val->seconds});
    numbers.push_back({"val_samples", static_cast<double>(val->samples)});
    if (st.options.validation_examples > 0)
      numbers.push_back({"val_examples", static_cast<double>(st.options.validation_examples)});
    if (val->top_k > 0)
      numbers.push_back({"val_top_k_accuracy", ratio(val->top_k_correct, val->samples)});
  }
  auto extra = std::move(st.annotations[train.epoch]);
  st.annotations.erase(train.epoch);
  if (auto w = st.warnings.find(train.epoch); w != st.warnings.end()) {
    std::string list;
    for (const auto& warning : w->second)
      list += (list.empty() ? "" : ",") + warning_json(warning);
    extra.emplace_back("warnings", "[" + list + "]");
    st.warnings.erase(w);
  }
  auto strings = st.options.tags;
  strings.insert(strings.begin(), {"record", "epoch"});
  st.jsonl->write(numbers, strings, extra);
}

// Writes the held training epoch without validation figures, if one is held.
void write_unvalidated(metrics_state& st) {
  if (!st.have_pending_train)
    return;
  write_epoch_line(st, st.pending_train, nullptr);
  st.have_pending_train = false;
}

// What a validation's figures cover when it is less than the whole set (a lost worker's
// part goes unvalidated under on_worker_loss = continue): " (on 5000 of 10000 examples:
// worker 1 lost)"; empty when it covers the whole set (or nothing says otherwise). After the
// value, so MXNet's parse_log still reads the number.
std::string coverage_note(const metrics_state& st, const phase_report& r) {
  const auto total = st.options.validation_examples;
  if (!r.validation || (r.lost_parts.empty() && (total <= 0 || r.samples >= total)))
    return "";
  std::string note = " (on " + std::to_string(r.samples);
  if (total > 0)
    note += " of " + std::to_string(total);
  note += " examples";
  if (!r.lost_parts.empty()) {
    note += r.lost_parts.size() == 1 ? ": worker " : ": workers ";
    for (std::size_t i = 0; i < r.lost_parts.size(); ++i)
      note += (i ? ", " : "") + std::to_string(r.lost_parts[i]);
    note += " lost";
  }
  return note + ")";
}

// The watch's warnings for this phase, printed and kept for the epoch's line (before the line
// is written, which may be now).
std::vector<run_warning> watch_phase(metrics_state& st, const phase_report& r) {
  const double loss = ratio(r.loss_sum, r.samples), accuracy = ratio(r.correct, r.samples);
  auto found = r.validation ? st.watch->validated(r.epoch, loss, accuracy)
                            : st.watch->trained(r.epoch, loss, accuracy,
                                                st.options.expect_validation, st.pushed[r.epoch]);
  for (const auto& w : found) {
    *st.options.out << "Warning: " << w.message << '\n';
    if (st.options.status)
      st.options.status->warning(w);
    st.warnings[w.epoch].push_back(w);
    record_event(st.options.events, "warning", {{{"epoch", w.epoch}}, {{"kind", w.kind}}});
  }
  return found;
}

std::vector<run_warning> on_phase(metrics_state& st, const phase_report& r) {
  clear_bar(st);
  if (st.options.status)
    st.options.status->phase(r);
  auto& out = *st.options.out;
  const char* prefix = r.validation ? "Validation" : "Train";
  const auto note = coverage_note(st, r);
  out << "Epoch[" << r.epoch << "] " << prefix
      << "-accuracy=" << format("%.6f", ratio(r.correct, r.samples)) << note << '\n';
  out << "Epoch[" << r.epoch << "] " << prefix
      << "-cross-entropy: " << format("%.6f", ratio(r.loss_sum, r.samples)) << note << '\n';
  if (r.top_k > 0) // after a colon too, or parse_log would average it into the accuracy
    out << "Epoch[" << r.epoch << "] " << prefix << "-top_k_accuracy_" << r.top_k << ": "
        << format("%.6f", ratio(r.top_k_correct, r.samples)) << note << '\n';
  if (r.skipped > 0)
    out << "Epoch[" << r.epoch << "] " << prefix << "-skipped-records=" << r.skipped << '\n';
  if (!r.validation && st.options.position && st.options.expect_validation) {
    st.options.position->epoch = r.epoch;
    st.options.position->validating = true;
  }
  if (!r.validation)
    out << "Epoch[" << r.epoch << "] Time cost=" << format("%.3f", r.seconds) << '\n';
  auto warnings = watch_phase(st, r);
  if (!r.validation) {
    write_unvalidated(st); // the previous epoch had no validation (validate_every > 1)
    if (st.options.expect_validation) {
      st.pending_train = r;
      st.have_pending_train = true;
    } else {
      write_epoch_line(st, r, nullptr);
    }
  } else if (st.have_pending_train && st.pending_train.epoch == r.epoch) {
    write_epoch_line(st, st.pending_train, &r);
    st.have_pending_train = false;
  }
  out.flush();
  record_event(st.options.events, r.validation ? "validated" : "trained",
               {{{"epoch", r.epoch},
                 {"samples", static_cast<double>(r.samples)},
                 {"accuracy", ratio(r.correct, r.samples)},
                 {"loss", ratio(r.loss_sum, r.samples)},
                 {"seconds", r.seconds}},
                {}});
  return warnings;
}

metrics_actor::behavior_type metrics(metrics_pointer self, metrics_options options,
                                     std::shared_ptr<jsonl_writer> jsonl) {
  self->state.options = std::move(options);
  if (self->state.options.out == nullptr)
    self->state.options.out = &self->state.silent;
  self->state.jsonl = std::move(jsonl);
  self->state.watch.emplace(self->state.options.watch);
  return {
    [=](const batch_report& r) {
      try {
        on_batch(self->state, r);
      } catch (const std::exception& e) { // a step record the file did not take
        self->quit(make_error(errc::bad_data, std::string("metrics: ") + e.what()));
      }
    },
    [=](const phase_report& r) {
      try {
        const auto warnings = on_phase(self->state, r);
        if (self->state.options.fail_on_stall && !warnings.empty()) {
          write_unvalidated(self->state); // the epoch's line, warnings and all, before stopping
          self->state.options.out->flush();
          self->quit(
            make_error(errc::bad_data, "stopped by --fail-on-stall: " + warnings.front().message));
        }
      } catch (const std::exception& e) {
        self->quit(make_error(errc::bad_data, std::string("metrics: ") + e.what()));
      }
    },
    [=](annotate_atom, std::int64_t epoch, const std::string& key, const std::string& json,
        const std::string& line) {
      auto& st = self->state;
      if (!line.empty()) {
        clear_bar(st);
        *st.options.out << line << '\n';
      }
      st.annotations[epoch].emplace_back(key, json);
      if (st.options.status)
        st.options.status->annotation(epoch, key, json);
    },
    [=](flush_atom) -> caf::result<bool> {
      clear_bar(self->state);
      try {
        write_unvalidated(self->state);
      } catch (const std::exception& e) {
        return make_error(errc::bad_data, std::string("metrics: ") + e.what());
      }
      self->state.options.out->flush();
      return true;
    },
  };
}

} // namespace

metrics_actor spawn_metrics(caf::actor_system& system, metrics_options options) {
  std::shared_ptr<jsonl_writer> jsonl = options.jsonl;
  if (!jsonl && !options.jsonl_path.empty())
    jsonl = std::make_shared<jsonl_writer>(options.jsonl_path);
  return system.spawn(metrics, std::move(options), std::move(jsonl));
}

} // namespace troupe
