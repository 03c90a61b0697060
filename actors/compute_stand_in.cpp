// The compute stand-in (compute_spawn_options::stand_in; "Stand-in" in compute_actor.hpp): an
// actor of the compute actor's protocol with no batch and no arithmetic, only timers that take
// a device's time for the forward, segment by segment as each push group's weights arrive, and
// for the backward, whose push groups leave when their share of the work is done. Its phases,
// requests, watchdog and checkpoint answers are the compute actor's (compute_phase.hpp); a
// validation has nothing to evaluate and is answered at once with no samples.
#include "actors/compute_stand_in_state.hpp"

#include <algorithm>

namespace troupe::compute_parts {

namespace {

void stand_in_forward(stand_in_pointer self);

// Its gradients and timing, from the replica's shapes and work.
void set_up(stand_in_state& st) {
  std::vector<shape_t> shapes;
  for (auto* p : st.replica->parameters())
    shapes.push_back(p->value.shape());
  st.gradients = stand_in_gradients(std::move(shapes), st.settings.seed, st.wiring.rank);
  std::vector<std::vector<key_slice>> route_keys;
  for (const auto& route : st.wiring.shards)
    route_keys.push_back(route.keys);
  st.timing = stand_in_timing(st.replica->forward_work_by_slot(), route_keys, st.wiring.groups);
}

// A step: no batch, no arithmetic; timers (see "Stand-in" in the header). Runs at the phase's
// start and when the previous step's backward has ended (its last push left).
void next_stand_in_step(stand_in_pointer self) {
  auto& st = self->state;
  if (st.end_requested || st.index >= st.wiring.batches_per_epoch) {
    st.ended = true;
    if (st.answers_missing == 0)
      finish_phase(st);
    return; // else the last answer ends the phase (push_stand_in_group)
  }
  const auto epoch = st.phase.epoch;
  st.header.samples = st.settings.samples;
  st.header.step = epoch * st.wiring.batches_per_epoch + st.index;
  st.header.epoch_position =
    static_cast<double>(epoch)
    + static_cast<double>(st.index)
        / static_cast<double>(std::max<std::int64_t>(1, st.wiring.batches_per_epoch));
  st.segment = 0;
  st.in_backward = false;
  stand_in_forward(self);
}

// The forward goes on: the next segment's timer when its group's weights are current, or
// nothing (its answer calls this again); after the last segment, backward's timers: group g
// final once backward's time has covered groups 0..g's shares of the work (stand_in_timing;
// without overlap all at its end).
//
// A segment starts on the device when the one before it has ended and its weights are in, and
// ends its share of the work later; a segment already over by then (a short one, or the actor
// came late) sets no timer. The times chain from `mark`, never from when a timer fired: a
// forward of 286 segments (ResNet-50 in 512 KiB slices) on timers each a little late on a busy
// host would otherwise take tens of milliseconds longer than the device would.
void stand_in_forward(stand_in_pointer self) {
  auto& st = self->state;
  if (st.timer || st.in_backward || st.ended)
    return;
  const auto groups = st.wiring.groups.size();
  const auto forward = st.settings.step / 3;
  const auto now = self->clock().now();
  while (st.segment < groups) {
    const auto k = st.segment;
    const auto ready = st.ready[groups - 1 - k];
    if (ready == stand_in_state::not_yet)
      return; // waits for the weights of the layers this segment runs
    const auto lasts = st.timing.forward_end(forward, k)
                       - (k == 0 ? caf::timespan{0} : st.timing.forward_end(forward, k - 1));
    const auto from = std::max(st.mark, ready);
    const auto end = st.settings.device ? st.settings.device->book(from, lasts) : from + lasts;
    if (end > now) {
      st.timer = true;
      st.segment_end = end;
      self->scheduled_send(self, end, stand_in_forward_atom::value, st.phases_begun, st.header.step,
                           k);
      return;
    }
    st.mark = end;
    ++st.segment;
  }
  st.in_backward = true;
  st.answers_missing = groups;
  std::fill(st.ready.begin(), st.ready.end(), stand_in_state::not_yet);
  const auto backward = st.settings.step - forward;
  if (st.settings.device) // it starts once the device has done what was booked before it
    st.mark = st.settings.device->book(st.mark, backward) - backward;
  for (std::size_t g = 0; g < groups; ++g) {
    auto at = st.wiring.overlap ? st.timing.backward_due(backward, g) : backward;
    self->scheduled_send(self, st.mark + at, stand_in_atom::value, st.phases_begun, st.header.step,
                         g);
  }
  st.mark += backward; // where the next step's forward starts on the device
}

// Segment k of the forward is done: the next one.
void segment_done(stand_in_pointer self, std::uint64_t phase, std::int64_t step, std::size_t k) {
  auto& st = self->state;
  if (!st.busy || phase != st.phases_begun || step != st.header.step || k != st.segment
      || !st.timer)
    return; // a timer of a phase that failed or ended
  st.timer = false;
  st.mark = st.segment_end;
  ++st.segment;
  stand_in_forward(self);
}

// Pushes group g: once its weights are installed, the forward waiting on them goes on; the
// step's last answer ends a phase with no step left.
void push_stand_in_group(stand_in_pointer self, std::size_t g) {
  auto& st = self->state;
  auto push = group_push(
    st, g, [&](std::size_t slot) { return st.gradients.gradient(slot, st.header.step); });
  const auto due = push.due;
  ask(
    self, st.wiring.groups[g].shard, due,
    [=] {
      self->state.ready[g] = self->clock().now();
      stand_in_forward(self);
    },
    [=] {
      if (self->state.ended)
        finish_phase(self->state);
    },
    push_atom::value, std::move(push));
}

// Group g of the step is final: push it; the last one ends the step's backward, and the next
// step's forward starts.
void group_due(stand_in_pointer self, std::uint64_t phase, std::int64_t step, std::size_t g) {
  auto& st = self->state;
  if (!st.busy || phase != st.phases_begun || step != st.header.step
      || g >= st.wiring.groups.size())
    return; // a timer of a phase that failed or ended
  push_stand_in_group(self, g);
  if (g + 1 != st.wiring.groups.size())
    return;
  const auto index = st.index++;
  st.phase.step_seconds += std::chrono::duration<double>(st.settings.step).count();
  st.phase.samples += st.settings.samples;
  if (st.wiring.metrics)
    self->send(st.wiring.metrics,
               batch_report{st.wiring.rank, st.phase.epoch, index, st.wiring.batches_per_epoch,
                            st.settings.samples, 0, 0.0, st.learning_rate, st.replica->top_k(), 0,
                            std::chrono::duration<double>(st.settings.step).count()});
  next_stand_in_step(self);
}

// A training phase begun: pulls the weights first when it has none.
void train(stand_in_pointer self) {
  auto& st = self->state;
  st.index = 0;
  st.timer = st.ended = false;
  // the weights are pulled, or the last phase's answers all came
  st.ready.assign(st.wiring.groups.size(), caf::actor_clock::time_point::min());
  auto start = [=] {
    self->state.mark = self->clock().now();
    next_stand_in_step(self);
  };
  if (st.have_weights) {
    st.answers_missing = 0; // a failed phase's answers are dropped
    return start();
  }
  pull_all(self, [=] {
    self->state.have_weights = true;
    start();
  });
}

} // namespace

} // namespace troupe::compute_parts

namespace troupe {

caf::actor_clock::time_point stand_in_device::book(caf::actor_clock::time_point from,
                                                   caf::timespan lasts) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_ = std::max(free_, from) + lasts;
  return free_;
}

} // namespace troupe

namespace troupe::compute_parts {

stand_in_self_actor::behavior_type stand_in_compute(stand_in_pointer self,
                                                    std::shared_ptr<model> replica,
                                                    compute_wiring wiring,
                                                    compute_stand_in settings) {
  auto& st = self->state;
  st.replica = std::move(replica);
  st.wiring = std::move(wiring);
  st.settings = settings;
  set_up(st);
  watch_peers(self);
  return {
    [=](train_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (begin_phase(self, epoch, false, due))
        train(self);
      return caf::delegated<phase_report>();
    },
    [=](end_epoch_atom, std::int64_t epoch) { request_end(self->state, epoch); },
    [=](watchdog_atom) { check_pending(self); },
    [=](stand_in_atom, std::uint64_t phase, std::int64_t step, std::size_t g) {
      group_due(self, phase, step, g);
    },
    [=](stand_in_forward_atom, std::uint64_t phase, std::int64_t step, std::size_t k) {
      segment_done(self, phase, step, k);
    },
    [=](snapshot_atom) { return snapshot_replica(self->state); },
    [=](position_atom) { return self->state.latest_train_epoch; },
    [=](restore_atom, const replica_state& state) { return restore_replica(self->state, state); },
    [=](validate_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (begin_phase(self, epoch, true, due)) // nothing to evaluate
        finish_phase(self->state);
      return caf::delegated<phase_report>();
    },
  };
}

} // namespace troupe::compute_parts
