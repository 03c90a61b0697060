// The compute actor: owns one device's model replica. Batch and weights in, gradients out.
//
// Protocol: compute_actor
//   (train_atom, int64 epoch, deadline) -> phase_report
//                                                 trains one epoch: for each batch from the
//                                                 training loader, forward + backward; each push
//                                                 group goes to its shard as soon as backward
//                                                 has produced its keys (overlap); the weights
//                                                 each shard answers are installed; once every
//                                                 group is answered, next batch
//   (validate_atom, int64 epoch, deadline) -> phase_report
//                                                 evaluates every validation batch with the
//                                                 current weights (inference mode)
//   (end_epoch_atom, int64 epoch) -> ()           ends training epoch `epoch` after the step in
//                                                 flight (backup workers: the others are done)
// Internally (the spawned actor's own type, never handed out) it also sends itself
// (watchdog_atom): the check that no request has waited longer than its timeout (below); the
// stand-in (below) also sends itself its timers.
// Sends (batch_report) to the metrics actor after every training batch. Both reports carry
// top-k counts when the replica counts them (model::set_top_k; the node part sets the job's).
//
// A compute actor of this process (local_compute_actor) also answers, for checkpoints, between
// phases only (a phase in flight makes both an errc::bad_request):
//   (snapshot_atom)                -> replica_state  copies of the replica's buffers (batch-
//                                                    norm running statistics) and the
//                                                    positions of its random streams (dropout)
//   (restore_atom, replica_state)  -> bool           takes them over; buffers of other names or
//                                                    shapes, or a stream the model lacks, are
//                                                    an errc::bad_request and change nothing
// The weights are not part of it: the shards hold them, and a replica pulls them before its
// first step. And, at any time:
//   (position_atom)                -> int64          the latest epoch it was asked to train
//                                                    (-1: none yet): where a restarted
//                                                    scheduler's run goes on from
//
// A phase asked again (the same epoch, training or validation) while it runs is answered
// with it, to every asker; asked again once it finished (the last of its kind), it is
// answered with the same report at once. A scheduler restarted mid-epoch (docs/operations.md)
// so picks the run up where its computes are, and no batch is trained twice.
//
// Step ids are epoch * batches_per_epoch + batch index, not a running count, so a worker that
// skipped batches (an ended epoch) is back in line with the others at the next epoch.
//
// Liveness: the actor monitors its loaders, its routes' actors and the metrics sink. If one
// terminates, the phase in flight fails with errc::peer_down naming it, and the actor exits
// with that error. Every request has a deadline (deadline.hpp): `timeouts.step` from when it
// is asked, never past the phase's deadline (the coordinator's). Pushes and pulls carry it,
// so every hop to the shard waits for the same moment. A watchdog, one message to itself
// every quarter of `timeouts.step` while requests are pending, fails the phase
// (errc::timeout naming what it waited for) once one is answer_grace past its deadline. CAF's own
// request timeouts would set and cancel a timer on CAF's clock thread for every request, waking
// that thread twice per request, several times per step, on the cores the step computes on. A
// failed phase forgets its requests still in flight: their answers are ignored, and the next phase
// is never timed out on them.
//
// Threads: a training step runs forward and backward inside one handler, which takes
// milliseconds to seconds. Spawned `detached` (the session's default) the actor has a thread of
// its own, so a host's other actors on the shared scheduler never wait behind a step.
//
// An adopted compute (compute_wiring::adopted) rewinds instead of pulling: see there.
//
// Before its first step the actor pulls the weights from every shard, so the shards' values,
// not the replica's own initialization, are what trains. A step starts only when the weights
// of the previous step have arrived for every group (synchronous within one worker).
//
// A replica on a GPU (model::to_device before spawning) keeps its weights and gradients in
// device memory: each gradient is copied to a host buffer of its slot once it is final (one
// device-to-host copy per parameter per step, the buffer reused across steps:
// troupe/graph/gradient_staging.hpp), pushes view those buffers as below, and answered weights
// are copied into the device parameters (one host-to-device copy per key). The copies are
// synchronous and from pageable memory.
//
// Stand-in (compute_spawn_options::stand_in, for benchmarks of the communication): spawn_compute
// spawns another actor of this protocol, which computes nothing. A training step takes `step` of
// the clock, on timers (so no thread busy-waits or sleeps) set for the times a device would reach
// each point, chained from the device's previous point, not from when the actor ran (a timer that
// fires late makes no later one late): a third of it forward, the rest backward. The forward runs
// in one segment per push group, in forward order (the last group first), each taking its layers'
// share of the model's forward work (stand_in_timing.hpp: by arithmetic or memory traffic, as on a
// GPU), and a segment starts only once its group's weights of the previous step are installed: as a
// device whose forward waits per layer for its weights (MXNet's dependency engine does this), so
// answers that come first layers first (priority) let the next forward start before the last
// layers' weights are back. After the forward the push groups leave one by one over backward's
// time, each once backward has done its layers' share (in the groups' order; without overlap all at
// its end), and the next step's forward starts when the last has left. Its gradients have the
// model's shapes and pseudo-random values fixed by (seed, worker, step, parameter)
// (stand_in_gradients.hpp). The loaders are never asked (no batch is built; no activation is
// allocated); a step counts `samples` samples and reports a zero loss. Validation answers at once
// with no samples. Snapshot, restore and position are answered as above (its replica holds the
// answered weights and the model's buffers). A real compute still starts a step only once every
// group is answered.
//
// Keys that are whole parameters travel by handle both ways. A parameter cut into slices is
// pushed as views of the gradient buffer (no copy) and its answered slices are copied into the
// replica's own buffer (one contiguous tensor is what the kernels read).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <troupe/actors/loader_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/graph/model.hpp>
#include <troupe/io/timeline.hpp>

namespace troupe {

using compute_actor =
  caf::typed_actor<caf::replies_to<train_atom, std::int64_t, deadline>::with<phase_report>,
                   caf::replies_to<validate_atom, std::int64_t, deadline>::with<phase_report>,
                   caf::reacts_to<end_epoch_atom, std::int64_t>>;

/// A compute actor spawned in this process: the coordinator's protocol plus snapshot/restore.
using local_compute_actor =
  compute_actor::extend<caf::replies_to<snapshot_atom>::with<replica_state>,
                        caf::replies_to<restore_atom, replica_state>::with<bool>,
                        caf::replies_to<position_atom>::with<std::int64_t>>;

/// Which keys (parameters or slices of them) a shard owns, in the order the shard keeps them.
struct shard_route {
  push_target_actor shard;
  std::vector<key_slice> keys;
  int source_index = 0; ///< the `worker` field this compute actor's pushes carry on the route
};

/// Where a compute actor gets data and sends gradients. A shard route's actor may be a
/// parameter shard or an aggregator in front of one: both answer (push) with weights.
struct compute_wiring {
  int rank = 0; ///< this compute's rank (its data part, its slot in aggregators)
  loader_actor train_loader;
  loader_actor validation_loader;
  std::vector<shard_route> shards;
  /// The pushes of one step (push_group::shard indexes `shards`), in the order backward
  /// completes them. Must cover every key of every route exactly once.
  std::vector<push_group> groups;
  /// Push each group as soon as backward produced it (true) or all after backward (false).
  bool overlap = true;
  metrics_sink_actor metrics; ///< may be invalid: no per-batch reports
  std::int64_t batches_per_epoch = 0;
  request_timeouts timeouts;
  /// Adopted: spawned on another worker process after this rank's own was lost, in a run in
  /// flight. Before its first step it asks every route for the weights before the step in
  /// flight (push_target_actor's rewind: the earliest step some route has not summed yet, the same
  /// for all routes) rather than the current ones, and starts its epoch at that step: the
  /// batches before it are skipped (their contributions are summed already). Before a
  /// validation with no step trained yet it pulls the current weights.
  bool adopted = false;
  /// Adopted: called (on the compute's thread) with the step it recomputes from, once known.
  std::function<void(std::int64_t step)> on_rewound;
  /// Where the compute records its steps and pushes (actors/step_timeline.hpp); null: nowhere.
  /// The compute stand-in records nothing.
  std::shared_ptr<timeline_recorder> timeline;
};

/// One device that several compute stand-ins share (a worker process's GPU serving its ranks
/// in turn): each piece of a step's work (a forward segment, a backward) is booked on it, and
/// starts once it is free. Thread-safe: the stand-ins run on threads of their own.
class stand_in_device {
public:
  /// Books `lasts` of the device from `from` on, or from when it is next free, whichever is
  /// later; returns when that work ends.
  caf::actor_clock::time_point book(caf::actor_clock::time_point from, caf::timespan lasts);

private:
  std::mutex mutex_;
  caf::actor_clock::time_point free_ = caf::actor_clock::time_point::min();
};

/// A compute that takes a fixed time per batch instead of computing (see "Stand-in" above): a
/// GPU of a given speed, so a cluster's communication runs as in training on any model.
struct compute_stand_in {
  caf::timespan step{0};    ///< time per training batch; 0: compute for real
  std::int64_t samples = 0; ///< samples one batch counts (the job's batch size)
  std::uint64_t seed = 0;   ///< with the worker and step, fixes the gradients' values
  /// The device its steps' work is booked on, shared with the other stand-ins of its process;
  /// null: a device of its own.
  std::shared_ptr<stand_in_device> device;
  bool active() const { return step.count() > 0; }
};

struct compute_spawn_options {
  /// Run on a thread of its own (true) or on the actor system's shared scheduler threads.
  bool detached = true;
  /// Inactive (the default): a real compute.
  compute_stand_in stand_in;
  /// A detached compute binds its thread (and the kernel threads it starts) to these CPUs
  /// (kernels/threading.hpp, bind_this_thread). Empty, or not detached: no binding.
  std::vector<int> cpus;
};

/// Which push groups backward has completed in the current step. A group waits on the distinct
/// parameter slots its keys come from; `slot_ready` reports each group once, when its last slot
/// is final. Used by the compute actor and by the messaging bench's stand-in workers.
class push_tracker {
public:
  push_tracker() = default;
  push_tracker(const std::vector<shard_route>& routes, const std::vector<push_group>& groups,
               std::size_t slots);
  /// Every group waits again (call before each backward).
  void start_step() { missing_ = slots_per_group_; }
  /// Marks `slot` final and calls on_group_ready(g) for each group that it completes.
  template <typename F> void slot_ready(std::size_t slot, F&& on_group_ready) {
    if (slot >= groups_of_slot_.size())
      return;
    for (auto g : groups_of_slot_[slot])
      if (--missing_[g] == 0)
        on_group_ready(g);
  }

private:
  std::vector<std::vector<std::size_t>> groups_of_slot_;
  std::vector<std::size_t> slots_per_group_, missing_;
};

/// The gradients a push of `group` carries on `route`: each key's view of the gradient of its
/// slot, `gradient_of(slot)`. No bytes are copied.
template <typename GradientOf>
std::vector<tensor> group_gradients(const shard_route& route, const push_group& group,
                                    GradientOf&& gradient_of) {
  std::vector<tensor> out;
  out.reserve(group.keys.size());
  for (auto k : group.keys)
    out.push_back(key_view(gradient_of(route.keys[k].slot), route.keys[k]));
  return out;
}

/// Throws std::invalid_argument if the wiring has no shard, or groups that do not cover every
/// key of every route exactly once, or keys outside the replica's parameters.
local_compute_actor spawn_compute(caf::actor_system& system, std::unique_ptr<model> replica,
                                  compute_wiring wiring, compute_spawn_options options = {});

} // namespace troupe
