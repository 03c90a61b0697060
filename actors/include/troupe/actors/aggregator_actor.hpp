// The aggregator actor: sums the gradients of several sources for one step and forwards one
// push downstream (a parameter shard, or another aggregator in a hierarchy). To its sources it
// looks exactly like a shard: (push) is answered with the weights that came back.
//
// Protocol: aggregator_actor = push_target_actor (troupe/actors/messages.hpp) plus stats
//   (push_atom, gradient_push) -> weight_set   a source's gradients of one push group for step
//                                              s; answered once the group's sum for s went
//                                              downstream and weights came back. A push for a
//                                              step already forwarded (a late backup worker) is
//                                              dropped, counted, and answered with the newest
//                                              weights of its keys at once.
//   (pull_atom, deadline)      -> weight_set   forwarded downstream
//   (stats_atom)               -> int64, int64 sums forwarded, late pushes dropped
//   (rewind_atom, step, source, deadline) -> weight_set  every key's weights before `step` (-1: the
//                                              step in flight here), as push_target_actor
//                                              (messages.hpp) says; with keep_previous each
//                                              group keeps its weights one step back for it
//   (repeats_atom)             -> int64        contributions a source sent again, dropped
//   (waits_atom)               -> vector<double>, vector<int64>
//                                              by source: the seconds this barrier waited for
//                                              it while every other source of a step had come
//                                              (its first contribution to the step after the
//                                              second-to-last source's), and the steps it came
//                                              last in; totals since the aggregator started
//   (seed_atom, vector<applied_group>) -> ()     a promoted backup's aggregator (shard_backups = 1)
//                                              starts where its downstream is: each group
//                                              listed counts as summed and answered through
//                                              its step, so a source repeating that step (its
//                                              answer was lost with the primary) gets the
//                                              downstream's current weights of the group,
//                                              and the next step is summed as usual
// A rank's contribution to a step is accepted once, by (source, step, group): a source that
// pushes a step again (a compute adopted after its worker process was lost, recomputing the
// step in flight) is answered with that step's weights (waiting for them if its sum is not
// back yet) and its gradients, equal to the first ones, are dropped.
// It monitors its downstream: if that actor terminates, every waiting push is answered with
// errc::peer_down and the aggregator exits with the same error. A sum is due when the earliest
// of its contributions is (gradient_push::due): a downstream that has not answered by then
// fails the waiting pushes with errc::timeout. The aggregator has no limit of its own.
//
// Each push group (the keys one push lists) is aggregated on its own: a step of a model with
// G groups is G independent sums, forwarded as each completes, which keeps the overlap the
// compute actors create by pushing during backward.
//
// The sum is the sample-weighted mean, sum_i(n_i * g_i) / sum_i(n_i), which makes N workers at
// batch B/N equal to one worker at batch B. Deterministic mode adds the contributions in source
// order 0..N-1 whatever order they arrived in, so reruns give bit-identical weights; otherwise
// they are added as they arrive (no waiting on order, same value up to float rounding).
// Sums are written into buffers no downstream reader still holds (copy-on-write pool).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>

#include <troupe/actors/messages.hpp>
#include <troupe/io/timeline.hpp>

namespace troupe {

using repeats_atom = caf::atom_constant<caf::atom("repeats")>;
using seed_atom = caf::atom_constant<caf::atom("seed")>;
using waits_atom = caf::atom_constant<caf::atom("waits")>;

using aggregator_actor = push_target_actor::extend<
  caf::replies_to<stats_atom>::with<std::int64_t, std::int64_t>,
  caf::replies_to<repeats_atom>::with<std::int64_t>,
  caf::replies_to<waits_atom>::with<std::vector<double>, std::vector<std::int64_t>>,
  caf::reacts_to<seed_atom, std::vector<applied_group>>>;

struct aggregator_options {
  int sources = 1; ///< contributors per step
  int need = 0;    ///< contributions that complete a step; 0 means all sources
  bool deterministic = true;
  int position = 0; ///< this aggregator's source index in its downstream aggregator
  /// Keep each group's weights one step back (a model-sized set of handles, which holds one
  /// more buffer per key at the shard), so that an adopted compute can rewind to the step in
  /// flight (on_worker_loss = adopt); without, a rewind before the latest step is refused.
  bool keep_previous = false;
  /// Where each summed step is recorded (troupe/io/timeline.hpp), on a track per push group
  /// named "<track> group G" (G: the group's first key): its "barrier" from the first
  /// contribution to the last one needed, then its "sum" from the forward to downstream's
  /// answer. Null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
  std::string track = "aggregator";
};

/// Throws std::invalid_argument for sources < 1, need outside [0, sources] (0: all sources)
/// or an invalid downstream.
aggregator_actor spawn_aggregator(caf::actor_system& system, push_target_actor downstream,
                                  aggregator_options options);

} // namespace troupe
