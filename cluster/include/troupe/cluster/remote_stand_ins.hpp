// Stand-ins for actors on another node: each offers exactly the typed protocol of the actor it
// stands for and forwards to the peer link that reaches it, so the actors beside it (a compute
// actor pushing to a shard, the coordinator driving computes) cannot tell that the peer is
// remote. Each watches its link: once the link has ended, every waiting request and every
// later one fails at once with the link's reason (a request to a terminated actor would only
// fail with CAF's generic receiver-down error).
//
//   spawn_remote_shard:   push_target_actor   (push, pull) -> the link -> the peer's shard
//   spawn_remote_compute: compute_actor       (train, validate, end epoch) -> the peer's compute
// A worker node's compute actors report to their scheduler through the link itself, which is
// a metrics sink (peer_link.hpp).
#pragma once

#include <chrono>
#include <cstdint>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/messages.hpp>

namespace troupe {

/// Shard `shard` of the peer behind `link`. `request_timeout` is the link's: the stand-in's
/// own deadline is longer, so the link's error (which names the shard) arrives first.
push_target_actor spawn_remote_shard(caf::actor_system& system, caf::actor link, std::uint32_t shard,
                                     std::chrono::milliseconds request_timeout);

/// Compute actor `worker` of the peer behind `link`; `phase_timeout` as for a shard.
compute_actor spawn_remote_compute(caf::actor_system& system, caf::actor link, std::uint32_t worker,
                                   std::chrono::milliseconds phase_timeout);

} // namespace troupe
