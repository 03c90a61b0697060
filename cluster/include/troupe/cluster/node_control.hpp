// The node-control protocol as typed actor interfaces: what a channel (channel.hpp) hands the
// node it belongs to. A channel decodes a frame and, for a node-level message, its skeleton
// (cluster/remote/node_control_remote.cpp) sends the node one of the messages below, naming the
// channel; the compiler checks that the node takes it. A node speaks to a peer node through the
// one node-control proxy of their channel (scheduler_control_actor, member_control_actor below;
// remote_proxies.hpp), so it cannot send a message this protocol lacks. The scheduler
// and member nodes (cluster_node.hpp) implement these interfaces as state machines whose
// states are listed here too, so a test (tests/cluster/node_control_test.cpp) drives them
// message by message with CAF's deterministic test coordinator.
//
// Causes travel in messages, never in timing: a channel that ends tells its node why (channel_lost,
// with the error) before it fails any request still waiting on it, so whatever a lost peer
// makes fail later reaches the node after the loss itself. A member that stops because it
// lost a peer names that peer's plan node in its goodbye (shutdown_message::lost_node).
//
//   scheduler_inbox (a channel accepted by the scheduler -> the scheduler node):
//     (join_atom, channel, join_message)         a server or worker asks for its place
//     (ready_atom, channel, ready_message)       it runs its part (a server: where it listens)
//     (traffic_atom, channel, traffic_message)   its answer to a traffic query
//     (leave_atom, channel, leave_message)       a worker asks to leave, its computes moved
//                                                to other workers (drain); answered by a release
//     (goodbye_atom, channel, shutdown_message)  it stops, and why (before the channel ends)
//     (channel_lost_atom, channel, caf::error)      the channel ended (an empty error: normally)
//   member_inbox (a member's channels -> the member node):
//     (assignment_atom, channel, assignment_message)      the scheduler assigns the node
//     (traffic_query_atom, channel, traffic_query_message) the scheduler asks what moved
//     (adopt_atom, channel, adopt_message)               the scheduler asks it to adopt the
//                                                      computes of a lost worker node; it
//                                                      spawns them and says ready naming
//                                                      that node (on_worker_loss = adopt)
//     (promote_atom, channel, promote_message)           lost server node `node`'s shards are
//                                                      served by server `server` now
//                                                      (shard_backups = 1): that server promotes
//                                                      their backups and says ready naming `node`;
//                                                      a worker sends their pushes there
//     (release_atom, channel, release_message)           the answer to its leave: granted
//                                                      (it ends, exit 0) or refused (why)
//     (cede_atom, channel, cede_message)                 stop running the computes of worker
//                                                      node `node`, which it adopted: a worker
//                                                      that joined in training serves them now
//     (drain_atom, channel, drain_message)               leave the run (troupe ctl drain): a
//                                                      worker asks to leave as on SIGTERM
//     (fence_atom, channel, fence_message)               the scheduler declared the process of
//                                                      a term lost: nothing of that term is
//                                                      taken again (node_fences.hpp)
//     (goodbye_atom, channel, shutdown_message)           the peer stops, and why (`fenced`:
//                                                      this node's own term is fenced)
//     (channel_up_atom, channel, std::string peer)            a channel was admitted (a server's
//                                                      channels from workers)
//     (channel_lost_atom, channel, caf::error)               a channel ended
//   shard_change_actor (the scheduler, through its channel to a server -> the server node):
//     (change_atom, shard_change, deadline) -> uint32
//                                                      every shard it holds takes the change
//                                                      (troupe ctl set), between two epochs
//   run_control_actor (troupe ctl, through its channel to the scheduler -> the scheduler node):
//     (command_atom, command_message, deadline) -> command_result_message
//                                                      run a verb ("status", "drain NODE"); a
//                                                      verb it refuses fails with
//                                                      errc::bad_request, saying why
//
// Thread-safety: plain declarations.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/deadline.hpp>
#include <troupe/cluster/channel_actor.hpp>
#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

using join_atom = caf::atom_constant<caf::atom("join")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using traffic_atom = caf::atom_constant<caf::atom("traffic")>;
using traffic_query_atom = caf::atom_constant<caf::atom("trafquery")>;
using assignment_atom = caf::atom_constant<caf::atom("assignment")>;
using goodbye_atom = caf::atom_constant<caf::atom("goodbye")>;
using channel_up_atom = caf::atom_constant<caf::atom("chanup")>;
using channel_lost_atom = caf::atom_constant<caf::atom("chanlost")>;
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
using promote_atom = caf::atom_constant<caf::atom("promote")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using cede_atom = caf::atom_constant<caf::atom("cede")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using command_atom = caf::atom_constant<caf::atom("command")>;
using fence_atom = caf::atom_constant<caf::atom("fence")>;

/// What the scheduler's channels tell the scheduler node.
using scheduler_inbox =
  caf::typed_actor<caf::reacts_to<join_atom, channel_actor, join_message>,
                   caf::reacts_to<ready_atom, channel_actor, ready_message>,
                   caf::reacts_to<traffic_atom, channel_actor, traffic_message>,
                   caf::reacts_to<leave_atom, channel_actor, leave_message>,
                   caf::reacts_to<goodbye_atom, channel_actor, shutdown_message>,
                   caf::reacts_to<channel_lost_atom, channel_actor, caf::error>>;

/// What a server's or worker's channels tell their node.
using member_inbox =
  caf::typed_actor<caf::reacts_to<assignment_atom, channel_actor, assignment_message>,
                   caf::reacts_to<traffic_query_atom, channel_actor, traffic_query_message>,
                   caf::reacts_to<adopt_atom, channel_actor, adopt_message>,
                   caf::reacts_to<promote_atom, channel_actor, promote_message>,
                   caf::reacts_to<release_atom, channel_actor, release_message>,
                   caf::reacts_to<cede_atom, channel_actor, cede_message>,
                   caf::reacts_to<drain_atom, channel_actor, drain_message>,
                   caf::reacts_to<fence_atom, channel_actor, fence_message>,
                   caf::reacts_to<goodbye_atom, channel_actor, shutdown_message>,
                   caf::reacts_to<channel_up_atom, channel_actor, std::string>,
                   caf::reacts_to<channel_lost_atom, channel_actor, caf::error>>;

/// What a server or worker says to its scheduler: the proxy on its channel to the scheduler
/// (spawn_scheduler_control_proxy) takes exactly these, so a node cannot send the scheduler
/// a message this protocol lacks. The scheduler's inbox hears them with the channel they came on.
using scheduler_control_actor = caf::typed_actor<
  caf::reacts_to<join_atom, join_message>, caf::reacts_to<ready_atom, ready_message>,
  caf::reacts_to<traffic_atom, traffic_message>, caf::reacts_to<leave_atom, leave_message>,
  caf::reacts_to<goodbye_atom, shutdown_message>>;

/// What the scheduler says to a server or worker (and a member to a peer member: goodbye only),
/// through the proxy on its channel to that node (spawn_member_control_proxy).
using member_control_actor = caf::typed_actor<
  caf::reacts_to<assignment_atom, assignment_message>,
  caf::reacts_to<traffic_query_atom, traffic_query_message>,
  caf::reacts_to<adopt_atom, adopt_message>, caf::reacts_to<promote_atom, promote_message>,
  caf::reacts_to<release_atom, release_message>, caf::reacts_to<cede_atom, cede_message>,
  caf::reacts_to<drain_atom, drain_message>, caf::reacts_to<fence_atom, fence_message>,
  caf::reacts_to<goodbye_atom, shutdown_message>>;

/// What the scheduler changes in a server's shards between epochs (troupe ctl set): each shard
/// it holds, its own and the backups of another server's, takes `change` (param_shard_actor's
/// change_atom); the answer is how many did. The first refusal is the answer, naming the shard.
using shard_change_actor =
  caf::typed_actor<caf::replies_to<change_atom, shard_change, deadline>::with<std::uint32_t>>;

/// What troupe ctl asks of a run's scheduler (served on the scheduler's channels; the proxy on
/// ctl's channel is spawn_run_control_proxy).
using run_control_actor = caf::typed_actor<
  caf::replies_to<command_atom, command_message, deadline>::with<command_result_message>>;

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::join_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::ready_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::traffic_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::shutdown_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::assignment_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::traffic_query_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::adopt_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::promote_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::leave_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::release_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::cede_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::drain_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::fence_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::command_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::command_result_message)
