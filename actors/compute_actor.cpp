// Implementation notes: every continuation is a non-blocking `request(...).then(...)`, so the
// actor never parks a scheduler thread while waiting for a loader or a shard. Pushes sent from
// inside backward (the model's gradient-ready callback) leave at once: CAF enqueues a message
// in the receiver's mailbox when it is sent, and the receiver runs on another scheduler thread
// while this actor finishes backward. Their answers are handled after train_step returns, so
// weights never change under a running backward.
//
// Training asks the loader for batch i + 1 as soon as step i's forward and backward are done,
// so the batch is in the mailbox when the step's last weights arrive: the loader's round trip
// (two thread wake-ups) is off the step's critical path, and the loader builds its next batch
// while the weights come back rather than beside the step's computation (on a machine whose
// cores all run the step, that would stall the step's threads). At most one such request is
// in flight, and a phase ends only once it is answered, so every answer belongs to the phase
// that asked (the loader learns of the next epoch only when the next phase starts). An epoch
// ended early drops the batch fetched ahead, as it would have skipped it.
#include "actors/compute_state.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace troupe::compute_parts {

namespace {

void fetch_training_batch(compute_pointer self);
void next_training_batch(compute_pointer self);

void send_group(compute_pointer self, std::size_t g) {
  auto& st = self->state;
  auto push = group_push(
    st, g, [&](std::size_t slot) -> const tensor& { return st.gradients.host_gradient(slot); });
  const auto due = push.due;
  st.marks.push_sent(g);
  std::function<void()> answered;
  if (st.wiring.timeline)
    answered = [self, g] { self->state.marks.push_answered(g); };
  ask(
    self, st.wiring.groups[g].shard, due, std::move(answered), [=] { next_training_batch(self); },
    push_atom::value, std::move(push));
}

void send_unsent(compute_pointer self) {
  auto groups = std::move(self->state.unsent);
  self->state.unsent.clear();
  for (auto g : groups)
    send_group(self, g);
}

void on_gradient_ready(compute_pointer self, std::size_t slot) {
  auto& st = self->state;
  st.gradients.gradient_ready(slot);
  st.tracker.slot_ready(slot, [&](std::size_t g) {
    if (st.wiring.overlap)
      send_group(self, g);
    else
      st.unsent.push_back(g);
  });
}

void on_training_batch(compute_pointer self, loader_item& item) {
  auto& st = self->state;
  if (item.end) {
    st.marks.training_done();
    return finish_phase(st);
  }
  st.header.samples = static_cast<std::int64_t>(item.data.labels.size());
  st.header.step = item.data.epoch * st.wiring.batches_per_epoch + item.data.index;
  st.header.epoch_position =
    static_cast<double>(item.data.epoch)
    + static_cast<double>(item.data.index)
        / static_cast<double>(std::max<std::int64_t>(1, st.wiring.batches_per_epoch));
  st.tracker.start_step();
  st.answers_missing = st.wiring.groups.size();
  st.unsent.clear();
  loss_result loss;
  const auto step_start = clock_type::now();
  const double wait_seconds = item.data.index == 0 || st.step_end == clock_type::time_point{}
                                ? 0.0
                                : std::chrono::duration<double>(step_start - st.step_end).count();
  st.marks.forward(st.header.step);
  try {
    loss = st.replica->train_step(
      item.data.images, item.data.labels,
      [self](std::size_t slot) { on_gradient_ready(self, slot); },
      [self] { self->state.marks.backward(); });
  } catch (const std::exception& e) {
    return fail_phase(self, make_error(classify_exception(e), std::string("compute: ") + e.what()));
  }
  st.step_end = clock_type::now();
  const double step_seconds = std::chrono::duration<double>(st.step_end - step_start).count();
  st.phase.step_seconds += step_seconds;
  st.marks.backward_done();
  // Training on from a NaN or infinite loss only spreads it into every weight: the run stops
  // here, saying where, rather than ending "successfully" with garbage.
  if (!std::isfinite(loss.loss_sum))
    return fail_phase(
      self, make_error(errc::bad_data, "the training loss became "
                                         + std::string(std::isnan(loss.loss_sum) ? "nan" : "inf")
                                         + " in epoch " + std::to_string(item.data.epoch)
                                         + ", batch " + std::to_string(item.data.index + 1)
                                         + " (a learning rate too high for the model? try a "
                                           "lower --lr or a longer --warmup-epochs)"));
  fetch_training_batch(self); // batch i + 1 travels while step i's weights come back
  st.phase.samples += loss.count;
  st.phase.correct += loss.correct;
  st.phase.top_k_correct += loss.top_k_correct;
  st.phase.loss_sum += loss.loss_sum;
  st.phase.skipped += item.data.skipped;
  if (st.wiring.metrics) {
    self->send(st.wiring.metrics,
               batch_report{st.wiring.rank, item.data.epoch, item.data.index,
                            st.wiring.batches_per_epoch, loss.count, loss.correct, loss.loss_sum,
                            st.learning_rate, st.replica->top_k(), loss.top_k_correct, step_seconds,
                            wait_seconds, st.values_pushed, st.values_sent});
    st.values_pushed = st.values_sent = 0;
  }
  if (!st.unsent.empty())
    send_unsent(self);
}

// Runs once the previous step is done (or at the start of the phase): starts the next step
// with the batch fetched ahead, or waits for it.
void next_training_batch(compute_pointer self) {
  auto& st = self->state;
  if (st.end_requested && !st.fetching) {
    st.fetched.reset(); // the epoch ends early: the batch fetched ahead is skipped
    st.marks.training_done();
    return finish_phase(st);
  }
  if (!st.fetched) {
    st.between_steps = true;
    if (!st.fetching)
      fetch_training_batch(self);
    return;
  }
  st.between_steps = false;
  auto item = std::move(*st.fetched);
  st.fetched.reset();
  if (!item.end && item.data.epoch * st.wiring.batches_per_epoch + item.data.index < st.resume_from)
    return next_training_batch(self); // adopted: summed already, before the step in flight
  on_training_batch(self, item);
}

void fetch_training_batch(compute_pointer self) {
  self->state.fetching = true;
  watched_request<loader_item>(
    self, self->state.wiring.train_loader, "a batch from its training loader",
    request_due(self->state),
    [=](loader_item& item) {
      auto& st = self->state;
      st.fetching = false;
      st.fetched = std::move(item);
      if (st.between_steps)
        next_training_batch(self);
    },
    next_atom::value);
}

void next_validation_batch(compute_pointer self) {
  watched_request<loader_item>(
    self, self->state.wiring.validation_loader, "a batch from the validation loader",
    request_due(self->state),
    [=](loader_item& item) {
      auto& st = self->state;
      if (item.end)
        return finish_phase(st);
      try {
        const auto start = st.marks.now();
        auto r = st.replica->evaluate(item.data.images, item.data.labels);
        st.marks.evaluated(start);
        st.phase.samples += r.count;
        st.phase.correct += r.correct;
        st.phase.top_k_correct += r.top_k_correct;
        st.phase.loss_sum += r.loss_sum;
        st.phase.skipped += item.data.skipped;
      } catch (const std::exception& e) {
        return fail_phase(self,
                          make_error(classify_exception(e), std::string("compute: ") + e.what()));
      }
      next_validation_batch(self);
    },
    next_atom::value);
}

// A training phase begun: the loader learns the epoch, and the first step runs once the
// replica has the weights (pulled, or an adopted compute's rewound ones).
void train(compute_pointer self, std::int64_t epoch) {
  auto& st = self->state;
  self->send(st.wiring.train_loader, epoch_atom::value, epoch);
  if (st.have_weights)
    return next_training_batch(self);
  auto first_step = [=] {
    self->state.have_weights = true;
    next_training_batch(self);
  };
  if (st.wiring.adopted)
    rewind_all(self, first_step);
  else
    pull_all(self, first_step);
}

void validate(compute_pointer self, std::int64_t epoch) {
  auto& st = self->state;
  self->send(st.wiring.validation_loader, epoch_atom::value, epoch);
  if (st.wiring.adopted && !st.have_weights) {
    // Adopted between an epoch's training and its validation: the weights are the shards'
    // current ones (no step is in flight).
    return pull_all(self, [=] {
      self->state.have_weights = true;
      next_validation_batch(self);
    });
  }
  next_validation_batch(self);
}

} // namespace

compute_self_actor::behavior_type compute(compute_pointer self, std::shared_ptr<model> replica,
                                          compute_wiring wiring) {
  auto& st = self->state;
  st.replica = std::move(replica);
  st.wiring = std::move(wiring);
  st.tracker = push_tracker(st.wiring.shards, st.wiring.groups, st.replica->parameters().size());
  st.gradients = gradient_staging(*st.replica);
  st.marks = step_timeline(st.wiring.timeline, st.wiring.rank, st.wiring.groups.size());
  watch_peers(self);
  return {
    [=](train_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (begin_phase(self, epoch, false, due))
        train(self, epoch);
      return caf::delegated<phase_report>();
    },
    [=](end_epoch_atom, std::int64_t epoch) { request_end(self->state, epoch); },
    [=](watchdog_atom) { check_pending(self); },
    [=](snapshot_atom) { return snapshot_replica(self->state); },
    [=](position_atom) { return self->state.latest_train_epoch; },
    [=](restore_atom, const replica_state& state) { return restore_replica(self->state, state); },
    [=](validate_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (begin_phase(self, epoch, true, due))
        validate(self, epoch);
      return caf::delegated<phase_report>();
    },
  };
}

} // namespace troupe::compute_parts
