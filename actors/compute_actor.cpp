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

#include <troupe/kernels/threading.hpp>

#include <chrono>
#include <cmath>
#include <stdexcept>

#include <troupe/graph/model_state.hpp>

namespace troupe::compute_parts {

void fetch_training_batch(compute_pointer self);

// Every group of the step answered: the next step (a stand-in's forward has gone on group by
// group already; it ends the phase here when no step is left).
void step_answered(compute_pointer self) {
  auto& st = self->state;
  if (!st.stand_in.active())
    next_training_batch(self);
  else if (st.stand_in_ended)
    finish_phase(self);
}

void send_group(compute_pointer self, std::size_t g) {
  auto& st = self->state;
  const auto& group = st.wiring.groups[g];
  const auto& route = st.wiring.shards[group.shard];
  auto& params = st.replica->parameters();
  gradient_push push;
  push.step = st.header.step;
  push.epoch_position = st.header.epoch_position;
  push.samples = st.header.samples;
  push.worker = route.source_index;
  push.keys = group.keys;
  push.due = request_due(st);
  push.gradients = group_gradients(route, group, [&](std::size_t slot) {
    if (st.stand_in.active())
      return st.stand_in_values.gradient(slot, st.header.step);
    return st.on_gpu ? st.host_gradients[slot] : params[slot]->grad;
  });
  const auto due = push.due;
  std::function<void()> each;
  if (st.stand_in.active())
    each = [=] { // this group's layers are current: the forward waiting on them goes on
      self->state.stand_in_ready[g] = self->clock().now();
      stand_in_forward(self);
    };
  ask(
    self, group.shard, due, std::move(each), [=] { step_answered(self); }, push_atom::value,
    std::move(push));
}

void send_unsent(compute_pointer self) {
  auto groups = std::move(self->state.unsent);
  self->state.unsent.clear();
  for (auto g : groups)
    send_group(self, g);
}

// A GPU replica's gradient leaves the device once, as soon as it is final: one copy into the
// slot's host buffer, which the step's pushes then view. The buffer is reused while no push
// of an earlier step still holds it (the shard has summed it), else replaced.
void stage_gradient(compute_state& st, std::size_t slot) {
  const auto& grad = st.replica->parameters()[slot]->grad;
  auto& host = st.host_gradients[slot];
  if (!host.unique() || host.shape() != grad.shape())
    host = tensor::uninitialized(grad.shape());
  host.copy_from(grad);
}

void on_gradient_ready(compute_pointer self, std::size_t slot) {
  auto& st = self->state;
  if (st.on_gpu && slot < st.host_gradients.size())
    stage_gradient(st, slot);
  st.tracker.slot_ready(slot, [&](std::size_t g) {
    if (st.wiring.overlap)
      send_group(self, g);
    else
      st.unsent.push_back(g);
  });
}

void on_training_batch(compute_pointer self, loader_item& item) {
  auto& st = self->state;
  if (item.end)
    return finish_phase(self);
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
  try {
    loss = st.replica->train_step(item.data.images, item.data.labels,
                                  [self](std::size_t slot) { on_gradient_ready(self, slot); });
  } catch (const std::exception& e) {
    return fail_phase(self, make_error(classify_exception(e), std::string("compute: ") + e.what()));
  }
  st.phase.step_seconds += std::chrono::duration<double>(clock_type::now() - step_start).count();
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
  if (st.wiring.metrics)
    self->send(st.wiring.metrics,
               batch_report{st.wiring.worker, item.data.epoch, item.data.index,
                            st.wiring.batches_per_epoch, loss.count, loss.correct, loss.loss_sum,
                            st.learning_rate, st.replica->top_k(), loss.top_k_correct});
  if (!st.unsent.empty())
    send_unsent(self);
}

// Runs once the previous step is done (or at the start of the phase): starts the next step
// with the batch fetched ahead, or waits for it.
void next_training_batch(compute_pointer self) {
  auto& st = self->state;
  if (st.end_requested && !st.fetching) {
    st.fetched.reset(); // the epoch ends early: the batch fetched ahead is skipped
    return finish_phase(self);
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
        return finish_phase(self);
      try {
        auto r = st.replica->evaluate(item.data.images, item.data.labels);
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

// The replica's own state for a checkpoint (model_state.hpp), only between phases.
caf::result<replica_state> snapshot_replica(compute_pointer self) {
  if (self->state.busy)
    return make_error(errc::bad_request, "compute: snapshot asked while a phase is running");
  try {
    return capture_replica_state(*self->state.replica);
  } catch (const std::exception& e) {
    return make_error(classify_exception(e), std::string("compute: snapshot: ") + e.what());
  }
}

caf::result<bool> restore_replica(compute_pointer self, const replica_state& state) {
  if (self->state.busy)
    return make_error(errc::bad_request, "compute: restore asked while a phase is running");
  try {
    restore_replica_state(*self->state.replica, state);
  } catch (const std::exception& e) {
    return make_error(errc::bad_request, "compute " + std::to_string(self->state.wiring.worker)
                                           + ": restore: " + e.what());
  }
  return true;
}

compute_self_actor::behavior_type compute(compute_pointer self, std::shared_ptr<model> replica,
                                          compute_wiring wiring, compute_stand_in stand_in) {
  auto& st = self->state;
  st.replica = std::move(replica);
  st.wiring = std::move(wiring);
  st.stand_in = stand_in;
  if (stand_in.active())
    set_up_stand_in(st);
  st.tracker = push_tracker(st.wiring.shards, st.wiring.groups, st.replica->parameters().size());
  st.on_gpu = st.replica->device().kind != device_kind::cpu;
  if (st.on_gpu)
    st.host_gradients.resize(st.replica->parameters().size());
  watch_peers(self);
  return {
    [=](train_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (!begin_phase(self, epoch, false, due))
        return caf::delegated<phase_report>();
      if (self->state.stand_in.active()) {
        train_stand_in(self);
        return caf::delegated<phase_report>();
      }
      self->send(self->state.wiring.train_loader, epoch_atom::value, epoch);
      if (self->state.have_weights) {
        next_training_batch(self);
      } else if (self->state.wiring.adopted) {
        rewind_all(self, [=] {
          self->state.have_weights = true;
          next_training_batch(self);
        });
      } else {
        pull_all(self, [=] {
          self->state.have_weights = true;
          next_training_batch(self);
        });
      }
      return caf::delegated<phase_report>();
    },
    [=](end_epoch_atom, std::int64_t epoch) {
      auto& s = self->state;
      if (s.busy && !s.phase.validation && s.phase.epoch == epoch)
        s.end_requested = true;
    },
    [=](watchdog_atom) { check_pending(self); },
    [=](stand_in_atom, std::uint64_t phase, std::int64_t step, std::size_t g) {
      stand_in_group_due(self, phase, step, g);
    },
    [=](stand_in_forward_atom, std::uint64_t phase, std::int64_t step, std::size_t k) {
      stand_in_segment_done(self, phase, step, k);
    },
    [=](snapshot_atom) { return snapshot_replica(self); },
    [=](position_atom) { return self->state.latest_train_epoch; },
    [=](restore_atom, const replica_state& state) { return restore_replica(self, state); },
    [=](validate_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (!begin_phase(self, epoch, true, due))
        return caf::delegated<phase_report>();
      if (self->state.stand_in.active()) { // nothing to evaluate
        finish_phase(self);
        return caf::delegated<phase_report>();
      }
      self->send(self->state.wiring.validation_loader, epoch_atom::value, epoch);
      if (self->state.wiring.adopted && !self->state.have_weights) {
        // Adopted between an epoch's training and its validation: the weights are the
        // shards' current ones (no step is in flight).
        pull_all(self, [=] {
          self->state.have_weights = true;
          next_validation_batch(self);
        });
        return caf::delegated<phase_report>();
      }
      next_validation_batch(self);
      return caf::delegated<phase_report>();
    },
  };
}

} // namespace troupe::compute_parts

namespace troupe {

using namespace compute_parts;

local_compute_actor spawn_compute(caf::actor_system& system, std::unique_ptr<model> replica,
                                  compute_wiring wiring, compute_spawn_options options) {
  if (!replica)
    throw std::invalid_argument("compute: no model replica");
  check_wiring(*replica, wiring);
  if (!wiring.train_loader || !wiring.validation_loader)
    throw std::invalid_argument("compute: no training or validation loader");
  if (options.stand_in.step.count() < 0 || options.stand_in.samples < 0)
    throw std::invalid_argument("compute: a stand-in needs a step time and samples >= 0");
  std::shared_ptr<model> shared(std::move(replica));
  if (options.detached && !options.cpus.empty())
    // A detached actor builds its behaviour on its own thread: bound there, before any kernel.
    return system.spawn<caf::detached>(
      [cpus = options.cpus](compute_pointer self, std::shared_ptr<model> r, compute_wiring w,
                            compute_stand_in s) {
        bind_this_thread(cpus);
        return compute(self, std::move(r), std::move(w), s);
      },
      std::move(shared), std::move(wiring), options.stand_in);
  if (options.detached)
    return system.spawn<caf::detached>(compute, std::move(shared), std::move(wiring),
                                       options.stand_in);
  return system.spawn(compute, std::move(shared), std::move(wiring), options.stand_in);
}

} // namespace troupe
