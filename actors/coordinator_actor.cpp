// Implementation notes: the epoch loop is a chain of continuations (train -> validate -> next
// epoch), so the coordinator stays responsive while the epoch runs.
#include <troupe/actors/coordinator_actor.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <type_traits>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>

namespace troupe {

namespace {

struct coordinator_state {
  std::vector<compute_actor> computes;
  metrics_sink_actor metrics;
  coordinator_options options;
  caf::typed_response_promise<training_result> promise;
  training_result result;
  bool running = false;
  std::vector<bool> lost;       // computes dropped after their peer was lost (drop_lost_computes)
  std::int64_t save_asked = -1; // an epoch the gate asked to be saved although none was due
  static inline const char* name = "coordinator";
};

using coordinator_pointer = coordinator_actor::stateful_pointer<coordinator_state>;

void run_epoch(coordinator_pointer self, std::int64_t epoch);

// Whether a compute's failure drops it from the run (its peer is gone and the options allow
// going on) rather than ending the run. At least one compute must remain.
bool drop_if_lost(coordinator_pointer self, std::size_t compute, const caf::error& err) {
  auto& st = self->state;
  if (!st.options.drop_lost_computes || troupe_code(err) != errc::peer_down)
    return false;
  st.lost[compute] = true;
  return std::count(st.lost.begin(), st.lost.end(), false) > 0;
}

void fail(coordinator_pointer self, const caf::error& err) {
  auto& st = self->state;
  if (!st.running)
    return;
  st.running = false;
  st.promise.deliver(err);
}

void record(coordinator_pointer self, const phase_report& report) {
  self->state.result.phases.push_back(report);
  if (self->state.metrics)
    self->send(self->state.metrics, report);
}

void finish(coordinator_pointer self) {
  auto& st = self->state;
  auto done = [=] {
    self->state.running = false;
    self->state.promise.deliver(std::move(self->state.result));
  };
  if (!st.metrics)
    return done();
  self->request(st.metrics, st.options.timeouts.step, flush_atom::value)
    .then([=](bool) { done(); }, [=](caf::error& err) { fail(self, err); });
}

// Sums the workers' reports; the epoch took as long as its slowest worker.
void merge(phase_report& into, const phase_report& part) {
  into.samples += part.samples;
  into.correct += part.correct;
  into.top_k_correct += part.top_k_correct;
  into.top_k = std::max(into.top_k, part.top_k); // a dropped worker's empty report has 0
  into.loss_sum += part.loss_sum;
  into.skipped += part.skipped;
  into.seconds = std::max(into.seconds, part.seconds);
  into.step_seconds = std::max(into.step_seconds, part.step_seconds);
}

// The parts of one phase merged in the order given (not the order the replies arrived in), so
// the loss sum does not depend on arrival (floating-point addition).
phase_report merged_in_order(const std::vector<phase_report>& parts, std::int64_t epoch,
                             bool validation) {
  phase_report merged;
  merged.epoch = epoch;
  merged.validation = validation;
  for (const auto& p : parts)
    merge(merged, p);
  return merged;
}

// Asks compute `compute` to train or validate `epoch`; `done` gets its report, or an empty one
// when the compute is dropped as lost (drop_if_lost). Any other failure ends the run.
template <class Atom, class Done>
void ask_phase(coordinator_pointer self, std::size_t compute, Atom phase, std::int64_t epoch,
               Done done) {
  auto& st = self->state;
  const auto due = deadline::after(st.options.timeouts.phase);
  self->request(st.computes[compute], due.left_with_grace(), phase, epoch, due)
    .then([=](phase_report& report) { done(std::move(report)); },
          [=](caf::error& err) {
            if (!drop_if_lost(self, compute, err))
              return fail(self, err);
            phase_report none;
            none.epoch = epoch;
            none.validation = std::is_same<Atom, validate_atom>::value;
            done(none);
          });
}

bool saves_after(const coordinator_state& st, std::int64_t epoch) {
  const auto& o = st.options;
  if (!o.checkpoint || o.save_period <= 0)
    return false;
  return (epoch + 1) % o.save_period == 0 || epoch + 1 == o.first_epoch + o.epochs
         || epoch == st.save_asked;
}

// The end of epoch `epoch`: a checkpoint when one is due, then the next epoch.
void after_epoch(coordinator_pointer self, std::int64_t epoch) {
  auto& st = self->state;
  if (!saves_after(st, epoch))
    return run_epoch(self, epoch + 1);
  self->request(st.options.checkpoint, st.options.timeouts.phase, save_atom::value, epoch + 1)
    .then([=](const std::string&) { run_epoch(self, epoch + 1); },
          [=](caf::error& err) { fail(self, err); });
}

void validate_epoch(coordinator_pointer self, std::int64_t epoch) {
  auto& st = self->state;
  // A lost validator's part of the validation set is not covered any more.
  std::vector<std::size_t> validators;
  for (auto v : st.options.validators)
    if (!st.lost[v])
      validators.push_back(v);
  if (validators.empty())
    return after_epoch(self, epoch);
  auto parts = std::make_shared<std::vector<phase_report>>(validators.size());
  auto outstanding = std::make_shared<std::size_t>(validators.size());
  for (std::size_t i = 0; i < validators.size(); ++i) {
    auto done = [=](phase_report report) {
      (*parts)[i] = std::move(report);
      if (--*outstanding > 0)
        return;
      auto merged = merged_in_order(*parts, epoch, true);
      // The parts not covered (lost before or during this validation) go with the report, so
      // the log and the metrics file can say what the figures cover.
      for (auto v : self->state.options.validators)
        if (self->state.lost[v])
          merged.lost_parts.push_back(static_cast<std::int32_t>(v));
      record(self, merged);
      after_epoch(self, epoch);
    };
    ask_phase(self, validators[i], validate_atom::value, epoch, done);
  }
}

// Counted from epoch 0, not from first_epoch, so a resumed run validates after the same
// epochs as the run it continues.
bool validates_after(const coordinator_options& o, std::int64_t epoch) {
  if (!o.validate)
    return false;
  return (epoch + 1) % o.validate_every == 0 || epoch + 1 == o.first_epoch + o.epochs;
}

// Backup workers: whether enough computes finished the epoch for the rest to end theirs.
bool enough_finished(const coordinator_state& st, const std::vector<bool>& finished) {
  const auto& o = st.options;
  if (o.finish_after == 0 && o.finish_groups_needed == 0)
    return false;
  if (o.finish_groups.empty())
    return static_cast<std::size_t>(std::count(finished.begin(), finished.end(), true))
           >= o.finish_after;
  std::map<int, std::pair<std::size_t, std::size_t>> groups; // group -> (finished, members)
  for (std::size_t i = 0; i < finished.size(); ++i) {
    auto& g = groups[o.finish_groups[i]];
    g.first += finished[i] ? 1 : 0;
    g.second += 1;
  }
  std::size_t full = 0;
  for (const auto& [group, count] : groups)
    if (count.first >= (o.finish_after == 0 ? count.second : o.finish_after))
      ++full;
  return full >= (o.finish_groups_needed == 0 ? groups.size() : o.finish_groups_needed);
}

// After epoch `epoch`'s training: asks the gate between epochs, if there is one, and goes on
// (`next`) once it has answered; save_epoch has `epoch` saved (where the run saves checkpoints)
// although no save is due, last_epoch makes it the run's last. Its failure ends the run, naming
// the gate.
template <class Next> void through_gate(coordinator_pointer self, std::int64_t epoch, Next next) {
  const auto& gate = self->state.options.between_epochs;
  if (!gate)
    return next();
  const auto due = deadline::after(self->state.options.timeouts.step);
  const auto failed = [=](errc code, const std::string& why) {
    fail(self, make_error(code, "coordinator: the gate between epochs failed after epoch "
                                  + std::to_string(epoch) + ": " + why));
  };
  self->request(gate, due.left_with_grace(), epoch_done_atom::value, epoch, due)
    .then(
      [=](after_gate answer) {
        auto& o = self->state.options;
        if (answer == after_gate::last_epoch && epoch + 1 < o.first_epoch + o.epochs)
          o.epochs = epoch + 1 - o.first_epoch; // its validation and save are the last's now
        if (answer == after_gate::save_epoch)
          self->state.save_asked = epoch;
        next();
      },
      [=](caf::error& err) { failed(troupe_code(err), error_text(err)); });
}

void run_epoch(coordinator_pointer self, std::int64_t epoch) {
  auto& st = self->state;
  if (epoch >= st.options.first_epoch + st.options.epochs)
    return finish(self);
  auto parts = std::make_shared<std::vector<phase_report>>(st.computes.size());
  const auto active = static_cast<std::size_t>(std::count(st.lost.begin(), st.lost.end(), false));
  auto outstanding = std::make_shared<std::size_t>(active);
  auto finished = std::make_shared<std::vector<bool>>(st.computes.size(), false);
  auto ended = std::make_shared<bool>(false);
  for (std::size_t i = 0; i < st.computes.size(); ++i) {
    if (st.lost[i])
      continue; // its part of the data goes untrained from now on
    auto done = [=](phase_report part) {
      (*parts)[i] = std::move(part);
      --*outstanding;
      (*finished)[i] = true;
      if (!*ended && *outstanding > 0 && enough_finished(self->state, *finished)) {
        *ended = true;
        for (auto& c : self->state.computes) // the finished ones ignore it
          self->send(c, end_epoch_atom::value, epoch);
      }
      if (*outstanding > 0)
        return;
      through_gate(self, epoch, [=, report = merged_in_order(*parts, epoch, false)] {
        record(self, report);
        if (validates_after(self->state.options, epoch))
          validate_epoch(self, epoch);
        else
          after_epoch(self, epoch);
      });
    };
    ask_phase(self, i, train_atom::value, epoch, done);
  }
}

void watch_peers(coordinator_pointer self) {
  for (auto& c : self->state.computes)
    self->monitor(c);
  if (self->state.metrics)
    self->monitor(self->state.metrics);
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    std::string who;
    for (std::size_t i = 0; i < st.computes.size(); ++i)
      if (msg.source == st.computes[i].address())
        who = "compute " + std::to_string(i);
    if (st.metrics && msg.source == st.metrics.address())
      who = "the metrics sink";
    if (who.empty())
      return;
    auto err = make_error(errc::peer_down, "coordinator: " + who + " terminated ("
                                             + caf::to_string(msg.reason) + ")");
    fail(self, err);
    self->quit(err);
  });
}

coordinator_actor::behavior_type coordinator(coordinator_pointer self,
                                             std::vector<compute_actor> computes,
                                             metrics_sink_actor metrics,
                                             coordinator_options options) {
  self->state.computes = std::move(computes);
  self->state.metrics = std::move(metrics);
  self->state.options = options;
  self->state.lost.assign(self->state.computes.size(), false);
  watch_peers(self);
  return {
    [=](run_atom) -> caf::result<training_result> {
      auto& st = self->state;
      if (st.running)
        return make_error(errc::bad_request, "coordinator: a run is already in progress");
      st.running = true;
      st.result = training_result{};
      st.promise = self->make_response_promise<training_result>();
      if (!st.options.restore) {
        run_epoch(self, st.options.first_epoch);
        return caf::delegated<training_result>();
      }
      self->request(st.options.checkpoint, st.options.timeouts.phase, restore_atom::value)
        .then([=](bool) { run_epoch(self, self->state.options.first_epoch); },
              [=](caf::error& err) { fail(self, err); });
      return caf::delegated<training_result>();
    },
  };
}

} // namespace

coordinator_actor spawn_coordinator(caf::actor_system& system, std::vector<compute_actor> computes,
                                    metrics_sink_actor metrics, coordinator_options options) {
  if (computes.empty())
    throw std::invalid_argument("coordinator: no compute actors to drive");
  if (options.epochs < 0)
    throw std::invalid_argument("coordinator: negative epoch count");
  if (options.validate_every < 1)
    throw std::invalid_argument("coordinator: validate_every must be at least 1, got "
                                + std::to_string(options.validate_every));
  if (options.validators.empty())
    throw std::invalid_argument("coordinator: no compute actor to validate");
  if (options.save_period < 0)
    throw std::invalid_argument("coordinator: negative save period");
  if ((options.save_period > 0 || options.restore) && !options.checkpoint)
    throw std::invalid_argument("coordinator: checkpoints asked for without a checkpoint actor");
  if (!options.finish_groups.empty() && options.finish_groups.size() != computes.size())
    throw std::invalid_argument("coordinator: finish groups name "
                                + std::to_string(options.finish_groups.size())
                                + " computes, there are " + std::to_string(computes.size()));
  for (auto v : options.validators)
    if (v >= computes.size())
      throw std::invalid_argument("coordinator: validator " + std::to_string(v)
                                  + " is not one of the " + std::to_string(computes.size())
                                  + " compute actors");
  return system.spawn(coordinator, std::move(computes), std::move(metrics), options);
}

} // namespace troupe
