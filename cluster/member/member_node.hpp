// The server or worker node's actor (member_node.cpp), for run_member and for the tests that
// drive it message by message (tests/cluster/member/member_node_test.cpp). Private to cluster/.
#pragma once

#include <memory>

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/node_control.hpp>

#include "cluster/node_common.hpp"

namespace troupe {

using connect_atom = caf::atom_constant<caf::atom("connect")>;

/// A member node: the node-control protocol its channels speak to it, the host's run request
/// (answered true when the run finished, else with the error that ended the node), a server's
/// shards' shard change (troupe ctl set), the channel to
/// its scheduler once connected, the word to start reaching its scheduler, and its host's word
/// to leave the run (worker_leave: a worker drains).
using member_node_actor =
  member_inbox::extend<caf::replies_to<run_atom>::with<bool>,
                       caf::replies_to<change_atom, shard_change, deadline>::with<std::uint32_t>,
                       caf::reacts_to<scheduler_channel_atom, channel_actor>,
                       caf::reacts_to<connect_atom>, caf::reacts_to<leave_asked_atom, std::string>>;

/// Spawns a member node (options.role: server or worker). `serving` is what its channels serve
/// (it registers itself as their control inbox; shards and computes once assigned); every
/// channel counts its frames in `traffic`.
/// It reaches its scheduler when told (connect_atom: connecting, retrying every
/// connect_retry until the join timeout), or joins over a channel it is given
/// (scheduler_channel_atom; rejoining, once it lost its scheduler in training: it rejoins over it).
/// Detached: on a thread of its own (a node's, so its set-up never holds up the shared scheduler);
/// a test spawns it scheduled, and its part's computes and checkpoint part then run scheduled too
/// (CAF's deterministic coordinator must run every actor of a test). A server given `listening`
/// (its port bound before it joined: run_member) listens for workers on it; without, it binds
/// options.listen_host:listen_port once assigned. Its channels stamp and check the terms in
/// `fences` (node_fences.hpp; null: one of its own), where the caller reads whether a peer
/// told it that it was fenced.
member_node_actor spawn_member_node(caf::actor_system& system, const member_options& options,
                                    std::shared_ptr<serving_registry> serving,
                                    std::shared_ptr<traffic_registry> traffic, bool detached = true,
                                    std::shared_ptr<listening_socket> listening = nullptr,
                                    std::shared_ptr<node_fences> fences = nullptr);

} // namespace troupe
