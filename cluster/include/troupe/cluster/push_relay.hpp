// A push target that can be moved: what a node's computes (and the scheduler's final pull)
// reach a remote shard through when the run keeps a backup of every shard (shard_backups = 1).
//
// Protocol: push_relay_actor = push_target_actor (messages.hpp), plus
//   (repoint_atom, push_target_actor) -> ()   the shard now lives behind this target (its
//                                             backup was promoted): requests held since the
//                                             old one was lost are asked there again
// Each request goes to the current target with the deadline its originator set. One that fails
// with errc::peer_down (the channel to the target's process ended) is held, not answered, until
// the relay is re-pointed, then asked again with the same deadline; a held request whose
// deadline has passed by then fails with errc::timeout. Any other failure is passed on as is.
//
// Asking again is safe: a promoted shard answers a group and step it had applied already with
// its current weights, and its aggregator a step it had answered (param_shard_actor.hpp).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/messages.hpp>

namespace troupe {

using repoint_atom = caf::atom_constant<caf::atom("repoint")>;

using push_relay_actor = push_target_actor::extend<caf::reacts_to<repoint_atom, push_target_actor>>;

/// `name` says which shard, in a held request's timeout ("shard 0").
push_relay_actor spawn_push_relay(caf::actor_system& system, push_target_actor target,
                                  std::string name);

} // namespace troupe
