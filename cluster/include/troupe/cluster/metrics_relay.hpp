// A worker's way to the scheduler's metrics actor that outlives one scheduler: its computes
// report every training batch here, and a scheduler restarted with --resume
// (docs/operations.md, "A lost scheduler") is reached by re-pointing it.
//
// Protocol: metrics_relay_actor = metrics_sink_actor (metrics_actor.hpp), plus
//   (repoint_atom, metrics_sink_actor) -> ()   reports go here from now on; invalid: nowhere
//                                              (the scheduler is lost), until re-pointed
// Reports that come while it points nowhere are dropped and counted: the batch lines of a
// scheduler's absence are not shown; the epoch's report (the computes' own, answered to the
// restarted scheduler) still counts every batch. A flush is passed on, or answered at once
// while it points nowhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/metrics_actor.hpp>
#include <troupe/cluster/push_relay.hpp>

namespace troupe {

using metrics_relay_actor =
  metrics_sink_actor::extend<caf::reacts_to<repoint_atom, metrics_sink_actor>>;

/// `dropped` is told, at each re-pointing after an absence, how many reports went nowhere.
metrics_relay_actor spawn_metrics_relay(caf::actor_system& system, metrics_sink_actor target,
                                        std::function<void(std::int64_t)> dropped = nullptr);

} // namespace troupe
