// The backup of a shard whose answers a compressed hop quantizes (`2bit:fit`, `fp16` both ways)
// with shard_backups = 1. The primary's receiving end makes each step's answer a delta against
// the weights every sender holds, and moves those held weights by it; the backup's copy of that
// end must hold the same, or once promoted it would answer deltas the workers cannot add up.
// Nothing needs to travel for it: the backup's shard applies what the primary's applied, so the
// weights after each step are the same, and the backup's end makes the same delta of them.
//
// Protocol: shard_backup_actor (param_shard_actor.hpp), what the backup's server serves for
// the primary's replication:
//   (replicate_atom, gradient_push) -> int64   the backup shard applies the push; then the
//          backup's receiving end is given the weights of the push's keys after it (mirror_atom,
//          compressed_hop.hpp), and the answer is the shard's count, as the shard's own
// On spawning it gives that end the shard's start weights (hold_atom), which the workers' first
// pull through the primary's end held there. The first failure is the answer.
//
// Thread-safety: an actor; the handle is thread-safe.
#pragma once

#include <caf/actor_system.hpp>

#include <troupe/actors/compressed_hop.hpp>
#include <troupe/actors/param_shard_actor.hpp>

namespace troupe {

shard_backup_actor spawn_backup_mirror(caf::actor_system& system, param_shard_actor shard,
                                       compressing_receiver_actor receiver);

} // namespace troupe
