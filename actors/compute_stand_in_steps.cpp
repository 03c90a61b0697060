// The compute stand-in (compute_spawn_options::stand_in; "Stand-in" in compute_actor.hpp):
// no batch and no arithmetic, only timers that take a device's time for the forward, segment by
// segment as each push group's weights arrive, and for the backward, whose push groups leave
// when their share of the work is done.
#include "actors/compute_state.hpp"

#include <algorithm>

namespace troupe::compute_parts {

void next_stand_in_step(compute_pointer self);

void set_up_stand_in(compute_state& st) {
  std::vector<shape_t> shapes;
  for (auto* p : st.replica->parameters())
    shapes.push_back(p->value.shape());
  st.stand_in_values = stand_in_gradients(std::move(shapes), st.stand_in.seed, st.wiring.worker);
  std::vector<std::vector<key_slice>> route_keys;
  for (const auto& route : st.wiring.shards)
    route_keys.push_back(route.keys);
  st.stand_in_times =
    stand_in_timing(st.replica->forward_work_by_slot(), route_keys, st.wiring.groups);
}

// A stand-in's step: no batch, no arithmetic; timers (see "Stand-in" in the header). Runs at
// the phase's start and when the previous step's backward has ended (its last push left).
void next_stand_in_step(compute_pointer self) {
  auto& st = self->state;
  if (st.end_requested || st.stand_in_index >= st.wiring.batches_per_epoch) {
    st.stand_in_ended = true;
    if (st.answers_missing == 0)
      finish_phase(self);
    return; // else the last answer ends the phase (step_answered)
  }
  const auto epoch = st.phase.epoch;
  st.header.samples = st.stand_in.samples;
  st.header.step = epoch * st.wiring.batches_per_epoch + st.stand_in_index;
  st.header.epoch_position =
    static_cast<double>(epoch)
    + static_cast<double>(st.stand_in_index)
        / static_cast<double>(std::max<std::int64_t>(1, st.wiring.batches_per_epoch));
  st.stand_in_segment = 0;
  st.stand_in_backward = false;
  stand_in_forward(self);
}

// The forward goes on: the next segment's timer when its group's weights are current, or
// nothing (its answer calls this again); after the last segment, backward's timers: group g
// final once backward's time has covered groups 0..g's shares of the work (stand_in_timing;
// without overlap all at its end).
//
// A segment starts on the device when the one before it has ended and its weights are in, and
// ends its share of the work later; a segment already over by then (a short one, or the actor
// came late) sets no timer. The times chain from `stand_in_mark`, never from when a timer
// fired: a forward of 286 segments (ResNet-50 in 512 KiB slices) on timers each a little late
// on a busy host would otherwise take tens of milliseconds longer than the device would.
void stand_in_forward(compute_pointer self) {
  auto& st = self->state;
  if (st.stand_in_timer || st.stand_in_backward || st.stand_in_ended)
    return;
  const auto groups = st.wiring.groups.size();
  const auto forward = st.stand_in.step / 3;
  const auto& times = st.stand_in_times;
  const auto now = self->clock().now();
  while (st.stand_in_segment < groups) {
    const auto k = st.stand_in_segment;
    const auto ready = st.stand_in_ready[groups - 1 - k];
    if (ready == compute_state::not_yet)
      return; // waits for the weights of the layers this segment runs
    const auto lasts = times.forward_end(forward, k)
                       - (k == 0 ? caf::timespan{0} : times.forward_end(forward, k - 1));
    const auto end = std::max(st.stand_in_mark, ready) + lasts;
    if (end > now) {
      st.stand_in_timer = true;
      st.stand_in_segment_end = end;
      self->scheduled_send(self, end, stand_in_forward_atom::value, st.phases_begun, st.header.step,
                           k);
      return;
    }
    st.stand_in_mark = end;
    ++st.stand_in_segment;
  }
  st.stand_in_backward = true;
  st.answers_missing = groups;
  std::fill(st.stand_in_ready.begin(), st.stand_in_ready.end(), compute_state::not_yet);
  const auto backward = st.stand_in.step - forward;
  for (std::size_t g = 0; g < groups; ++g) {
    auto at = st.wiring.overlap ? times.backward_due(backward, g) : backward;
    self->scheduled_send(self, st.stand_in_mark + at, stand_in_atom::value, st.phases_begun,
                         st.header.step, g);
  }
  st.stand_in_mark += backward; // where the next step's forward starts on the device
}

// Segment k of the stand-in's forward is done: the next one.
void stand_in_segment_done(compute_pointer self, std::uint64_t phase, std::int64_t step,
                           std::size_t k) {
  auto& st = self->state;
  if (!st.busy || phase != st.phases_begun || step != st.header.step || k != st.stand_in_segment
      || !st.stand_in_timer)
    return; // a timer of a phase that failed or ended
  st.stand_in_timer = false;
  st.stand_in_mark = st.stand_in_segment_end;
  ++st.stand_in_segment;
  stand_in_forward(self);
}

// Group g of the stand-in's step is final: push it; the last one ends the step's backward,
// and the next step's forward starts.
void stand_in_group_due(compute_pointer self, std::uint64_t phase, std::int64_t step,
                        std::size_t g) {
  auto& st = self->state;
  if (!st.busy || phase != st.phases_begun || step != st.header.step
      || g >= st.wiring.groups.size())
    return; // a timer of a phase that failed or ended
  send_group(self, g);
  if (g + 1 != st.wiring.groups.size())
    return;
  const auto index = st.stand_in_index++;
  st.phase.step_seconds += std::chrono::duration<double>(st.stand_in.step).count();
  st.phase.samples += st.stand_in.samples;
  if (st.wiring.metrics)
    self->send(st.wiring.metrics,
               batch_report{st.wiring.worker, st.phase.epoch, index, st.wiring.batches_per_epoch,
                            st.stand_in.samples, 0, 0.0, st.learning_rate, st.replica->top_k(), 0});
  next_stand_in_step(self);
}

void train_stand_in(compute_pointer self) {
  auto& st = self->state;
  st.stand_in_index = 0;
  st.stand_in_timer = st.stand_in_ended = false;
  // the weights are pulled, or the last phase's answers all came
  st.stand_in_ready.assign(st.wiring.groups.size(), caf::actor_clock::time_point::min());
  auto start = [=] {
    self->state.stand_in_mark = self->clock().now();
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

} // namespace troupe::compute_parts
