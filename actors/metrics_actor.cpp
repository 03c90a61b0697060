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

#include "actors/running_figures.hpp"

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

using clock_type = std::chrono::steady_clock;

// Seconds since the Unix epoch: what a record's "time" holds, to line records up with logs.
double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct metrics_state {
  metrics_options options;
  std::shared_ptr<jsonl_writer> jsonl;
  // Speedometer window
  clock_type::time_point window_start;
  std::int64_t window_samples = 0;
  std::int64_t window_correct = 0;
  std::int64_t window_top_k_correct = 0;
  std::int64_t window_batches = 0;
  bool bar_drawn = false;
  // Since the last step record (every rank's batches) and since the epoch began (the bar's
  // speed, ETA and running loss).
  running_figures since_step, since_epoch;
  clock_type::time_point step_start, epoch_start;
  phase_report pending_train;
  bool have_pending_train = false;
  float learning_rate = 0;
  std::optional<run_watch> watch;
  /// What each epoch's compressed pushes sent, by epoch (batch_report::values_pushed).
  std::map<std::int64_t, push_counts> pushed;
  /// Warnings by epoch, for its JSON line.
  std::map<std::int64_t, std::vector<run_warning>> warnings;
  // JSON values a host added to an epoch's line (annotate_atom), by epoch.
  std::map<std::int64_t, std::vector<std::pair<std::string, std::string>>> annotations;
  std::ostream silent{nullptr}; // where lines go when the options name no stream
  static inline const char* name = "metrics";
};

using metrics_pointer = metrics_actor::stateful_pointer<metrics_state>;

std::string format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

void clear_bar(metrics_state& st) {
  if (st.bar_drawn) {
    *st.options.out << "\r\033[K";
    st.bar_drawn = false;
  }
}

// The bar's figures for report `r` (running_figures.hpp).
std::string bar_figures(const metrics_state& st, const batch_report& r) {
  const double seconds = std::chrono::duration<double>(clock_type::now() - st.epoch_start).count();
  return bar_figures(st.since_epoch, seconds, r.index, r.batches);
}

// The bar's line is "Epoch[e] [===>   ] i/n 1234/s ETA 0:42 loss 0.5321": the bar takes
// what the counters leave of the terminal's width, at most 30 columns, and the line stays one
// column short of the width so a terminal never wraps it (a wrapped line would not be redrawn by
// '\r').
void draw_bar(metrics_state& st, const batch_report& r) {
  const auto total = std::max<std::int64_t>(1, r.batches);
  const std::string head = "Epoch[" + std::to_string(r.epoch) + "] [";
  const std::string tail = "] " + std::to_string(r.index + 1) + "/" + std::to_string(r.batches);
  const int room = st.options.terminal_columns - 1 - static_cast<int>(head.size() + tail.size());
  const int width = std::min(30, room);
  if (width < 2) { // too narrow for a bar: the counters alone, if they fit
    const auto counters = tail.substr(2);
    if (static_cast<int>(counters.size()) < st.options.terminal_columns) {
      *st.options.out << "\r\033[K" << counters << std::flush;
      st.bar_drawn = true;
    }
    return;
  }
  const int filled = static_cast<int>(width * (r.index + 1) / total);
  std::string bar(filled, '=');
  if (filled < width)
    bar += '>' + std::string(width - filled - 1, ' ');
  // the figures where the bar leaves room for them; the line's end cleared, as they shorten
  auto figures = bar_figures(st, r);
  if (static_cast<int>(figures.size()) >= room - width)
    figures.clear();
  *st.options.out << "\r" << head << bar << tail << figures << "\033[K" << std::flush;
  st.bar_drawn = true;
}

void count_in_window(metrics_state& st, const batch_report& r) {
  st.window_samples += r.samples;
  st.window_correct += r.correct;
  st.window_top_k_correct += r.top_k_correct;
}

// A step record's times by rank, and by node in a cluster.
std::vector<std::pair<std::string, std::string>> step_record_times(const metrics_state& st,
                                                                   const running_figures& w) {
  std::vector<std::pair<std::string, std::string>> times{{"ranks", rank_times_json(w)}};
  if (!st.options.rank_nodes.empty())
    times.emplace_back("nodes", node_times_json(w, st.options.rank_nodes));
  return times;
}

// Every `step_records` of rank 0's batches, the steps since the last record (every rank's
// samples): their mean loss and accuracy, speed, and where the run is.
void write_step_line(metrics_state& st, const batch_report& r, clock_type::time_point now) {
  const auto every = st.options.step_records;
  if (st.step_start == clock_type::time_point{})
    st.step_start = now; // the first report opens the first record's window
  if (!st.jsonl || every <= 0 || (r.index + 1) % every != 0
      || r.epoch <= st.options.written_through)
    return;
  const auto& w = st.since_step;
  const double seconds = std::chrono::duration<double>(now - st.step_start).count();
  const double samples = static_cast<double>(std::max<std::int64_t>(w.samples, 1));
  const auto batches = std::max<std::int64_t>(r.batches, 1);
  st.jsonl->write(
    {{"step", static_cast<double>(r.epoch * batches + r.index + 1)},
     {"epoch", static_cast<double>(r.epoch)},
     {"epoch_progress", static_cast<double>(r.epoch)
                          + static_cast<double>(r.index + 1) / static_cast<double>(batches)},
     {"time", unix_seconds()},
     {"loss", w.loss_sum / samples},
     {"accuracy", static_cast<double>(w.correct) / samples},
     {"learning_rate", r.learning_rate},
     {"samples_per_s", seconds > 0 ? static_cast<double>(w.samples) / seconds : 0.0}},
    {{"record", "step"}}, step_record_times(st, w));
  st.since_step = {};
  st.step_start = now;
}

// With several workers every worker reports; worker 0's reports pace the window and the
// lines, the others' samples count towards the speed and accuracy.
void on_batch(metrics_state& st, const batch_report& r) {
  auto now = clock_type::now();
  if (st.options.status)
    st.options.status->batch(r);
  st.learning_rate = r.learning_rate;
  if (st.options.position && r.rank == 0) {
    st.options.position->epoch = r.epoch;
    st.options.position->batch = r.index;
    st.options.position->batches = r.batches;
    st.options.position->validating = false;
  }
  if (r.rank == 0 && r.index == 0) {
    st.since_epoch = {};
    st.epoch_start = now;
  }
  st.since_epoch.add(r);
  st.since_step.add(r);
  if (r.values_pushed > 0) {
    auto& p = st.pushed[r.epoch];
    p.values += r.values_pushed;
    p.sent += r.values_sent;
  }
  if (r.rank != 0) {
    count_in_window(st, r);
    return;
  }
  write_step_line(st, r, now);
  if (r.index == 0)
    record_event(st.options.events, "training",
                 {{{"epoch", r.epoch}, {"batches", static_cast<double>(r.batches)}}, {}});
  if (r.index == 0 || st.window_batches == 0) {
    // The first batch of an epoch opens the window; its own time is not measured.
    st.window_start = now;
    st.window_samples = st.window_correct = st.window_top_k_correct = st.window_batches = 0;
    if (r.index == 0) {
      st.window_batches = 1;
      return;
    }
  }
  count_in_window(st, r);
  ++st.window_batches;
  const auto shown = st.options.display_batches;
  if (shown > 0 && (r.index + 1) % shown == 0)
    record_event(st.options.events, "batch",
                 {{{"epoch", r.epoch}, {"batch", static_cast<double>(r.index + 1)}}, {}});
  if (shown > 0 && (r.index + 1) % shown == 0 && st.window_samples > 0) {
    double seconds = std::chrono::duration<double>(now - st.window_start).count();
    clear_bar(st);
    *st.options.out << "Epoch[" << r.epoch << "] Batch [" << (r.index + 1)
                    << "]\tSpeed: " << format("%.2f", st.window_samples / std::max(seconds, 1e-9))
                    << " samples/sec\taccuracy="
                    << format("%.6f", double(st.window_correct) / st.window_samples);
    if (r.top_k > 0) // as MXNet's Speedometer prints every metric: NAME=VALUE
      *st.options.out << "\ttop_k_accuracy_" << r.top_k << '='
                      << format("%.6f", double(st.window_top_k_correct) / st.window_samples);
    // Flushed now, not at the epoch's end: a pipe (troupe launch's relay, tee, a log
    // collector, scripts/chaos.py finding its moments) sees the line when the batch is done.
    *st.options.out << '\n' << std::flush;
    st.window_start = now;
    st.window_samples = st.window_correct = st.window_top_k_correct = 0;
  }
  if (st.options.progress_bar)
    draw_bar(st, r);
}

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
