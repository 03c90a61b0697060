// A compressed route: two actors that stand at the ends of one gradient hop whose route says
// `compress = "..."` (docs/dsl.md), one at the sender, one at the receiver. Both speak
// push_target_actor, so a compute or an aggregator pushes to them as to any target, and
// neither end of the hop knows compression is there.
//
// Protocol (both): push_target_actor (messages.hpp)
//   (push_atom, gradient_push) -> weight_set
//   (pull_atom, deadline)      -> weight_set   passed through uncompressed: the full weights,
//                                              which both ends remember as what the sender holds
//
// The sender's end (spawn_compressing_sender: one per sender and hop, so its state is that
// sender's):
//   - pushes: each gradient plus the residual this end kept of it is quantized for the route's
//     push encoding (gradient_codec.hpp, quantize_push); what was not sent stays in the
//     residual for the next step (error feedback). The push goes on marked with its encoding.
//   - answers, where the route compresses them: deltas, added to the weights this end holds
//     for the sender (from the first pull on); the sender gets the sums, as if the weights had
//     come whole. An answer in another encoding is an errc::bad_data naming both.
// The receiver's end (spawn_compressing_receiver: one in front of each receiving aggregator or
// shard):
//   - pushes: refused with errc::bad_request unless encoded as the route says (a sender wired
//     to another route, or a peer of another config); passed on as plain floats otherwise.
//   - answers, where the route compresses them: each step's weights of a push group become a
//     delta against what every sender holds (quantize_answer: the difference not sent yet is
//     this end's residual), computed once per step and group and given to every source of
//     that step alike. This is why compressed answers need a barrier that answers all its
//     sources the same weights at the same step (an aggregate without `need`): every sender
//     then holds exactly the weights this end holds for them, and all replicas stay identical.
//     A push answered before any pull passed here is an errc::bad_request (nothing is held).
//
// In one process both ends run too, so a one-process run and a cluster run install the same
// weights bit for bit: the wire (frame_codec) only packs values already quantized.
//
// Each end monitors the actor it passes requests to and exits with that actor's reason.
// Requests wait for their own deadline (deadline.hpp), as every hop does.
#pragma once

#include <string>

#include <caf/actor_system.hpp>

#include <troupe/actors/messages.hpp>
#include <troupe/kernels/gradient_codec.hpp>

namespace troupe {

/// The sender's end of a compressed hop in front of `downstream` (a target, or a proxy for
/// a remote one). `route` names the hop in errors ("compute 2 -> aggregator_0").
/// Throws std::invalid_argument for a spec that compresses nothing.
push_target_actor spawn_compressing_sender(caf::actor_system& system, push_target_actor downstream,
                                           compression_spec spec, std::string route);

using hold_atom = caf::atom_constant<caf::atom("hold")>;
using mirror_atom = caf::atom_constant<caf::atom("mirror")>;

/// The receiver's end, with what a backup of its shard needs (shard_backups = 1) to answer, once
/// promoted, exactly as this end would have: the same held weights and the same step's delta.
/// The backup's copy of this end is fed what the primary's answered, never asked by a sender:
///   (hold_atom, weight_set)   -> bool  the weights the senders first pulled through the primary
///                                      (held for each key not held yet, as a pull would)
///   (mirror_atom, weight_set) -> bool  the weights the primary's shard answered a step's group
///                                      with: this end makes (and keeps) the same delta, its
///                                      held weights moving as the primary's did
using compressing_receiver_actor =
  push_target_actor::extend<caf::replies_to<hold_atom, weight_set>::with<bool>,
                            caf::replies_to<mirror_atom, weight_set>::with<bool>>;

/// The receiver's end of a compressed hop, in front of `target` (the aggregator or shard the
/// hop leads to). Throws std::invalid_argument for a spec that compresses nothing.
compressing_receiver_actor spawn_compressing_receiver(caf::actor_system& system,
                                                      push_target_actor target,
                                                      compression_spec spec, std::string route);

} // namespace troupe
