// A peer link: one TCP connection to another node, as an actor whose connection has a reader
// and a writer thread of its own (cluster/frame_socket.hpp). It frames and decodes
// Cap'n Proto messages (frame_codec.hpp), admits the peer (admission.hpp) before anything
// else, forwards this node's requests for remote shards and answers the peer's requests from
// this node's own shards. Every outstanding request has a deadline, heartbeats flow both ways,
// and the connection's end fails every request still waiting on it.
//
// Protocol (dynamically typed):
//   (push_atom, uint32 shard, gradient_push) -> weight_set   sent to the peer's shard `shard`;
//                                        answered when its weights come back
//   (pull_atom, uint32 shard)           -> weight_set   the peer's shard's current weights
//   (stats_atom)                        -> link_traffic  bytes and frames per kind, both ways
//   (train_atom, uint32 worker, int64 epoch)    -> phase_report   compute `worker` on the peer
//   (validate_atom, uint32 worker, int64 epoch) -> phase_report   trains / validates an epoch
//   (end_epoch_atom, uint32 worker, int64 epoch) -> ()            ends its epoch early
//   (batch_report) -> ()  (phase_report) -> ()  (flush_atom) -> true
//                                        the link is a metrics sink: compute actors of a
//                                        worker node report to the scheduler through it, in
//                                        order with their answers (flush: nothing is held here)
//   (send_atom, wire_message)           -> ()            writes a node-level message (join,
//                                        assignment, ready); a shutdown is written and then
//                                        ends the link (quitting normally when `finished`)
//   (plan_atom, uint64 plan hash, wire_keys) -> ()       the node learned its plan after
//                                        connecting (a member's link to its scheduler): what
//                                        arrives from now on is checked against these keys
// Requests and messages made before admission completes wait for it (within their deadline).
//
// Node-level messages from the peer go to the node this link belongs to, typed
// (troupe/cluster/node_control.hpp): a link accepted by the scheduler hands join, ready,
// traffic and goodbye to `scheduler_node`; a member's links hand assignment, traffic query and
// goodbye to `member_node`. A message of a kind the node does not take (or a link with no
// node) is refused as out of turn: the compiler keeps a node from missing a kind it is sent.
//
// What fails, and how:
//   - the peer's proof does not verify, its hello names another plan, a frame does not
//     decode, a message comes out of turn: the link logs the reason naming the peer, closes
//     the connection and quits with errc::bad_request;
//   - the connection closes, or no frame arrives for `connection_timeout`: errc::peer_down;
//   - a request waits longer than `request_timeout`: that request fails with errc::timeout,
//     the link stays up;
//   - the peer answers a request with a failure: the request fails with the peer's error.
// On quitting, the node first hears (link_lost_atom, link, caf::error), then every waiting
// request fails with the link's error: whatever the loss makes fail reaches the node after the
// loss itself. A member node hears (link_up_atom, link, peer name) once the peer is admitted.
//
// Copies: none in user space. An outgoing tensor is written from its own bytes (one sendmsg of
// the frame's pieces); an incoming one is read where the frame landed (tensor views keep that
// buffer alive).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/cluster/admission.hpp>
#include <troupe/cluster/node_control.hpp>
#include <troupe/cluster/traffic_registry.hpp>
#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

using send_atom = caf::atom_constant<caf::atom("send")>;
using plan_atom = caf::atom_constant<caf::atom("plan")>;

/// The actors a node serves to its peers, by index: push targets by the plan's shard index
/// (the shard, or the aggregator in front of it), compute actors by worker. Shared by a
/// listener and every link it accepts, and filled in when the node knows its part of the plan
/// (a server joins before it is assigned shards). Thread-safe.
template <class Handle>
class actor_directory {
public:
  void set(std::uint32_t index, Handle target) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (targets_.size() <= index)
      targets_.resize(index + std::size_t{1});
    targets_[index] = std::move(target);
  }
  /// Forgets every actor (a node that ends drops its handles: a directory shared with links
  /// would otherwise keep terminated actors, and the links they hold, alive).
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    targets_.clear();
  }
  /// The actor at `index`, or a null handle when this node holds none.
  Handle find(std::uint32_t index) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return index < targets_.size() ? targets_[index] : Handle{};
  }

private:
  mutable std::mutex mutex_;
  std::vector<Handle> targets_;
};
using shard_directory = actor_directory<push_target_actor>;
using compute_directory = actor_directory<compute_actor>;

struct link_options {
  /// A link needs the secret: there is no unauthenticated mode.
  explicit link_options(cluster_secret cluster) : secret(std::move(cluster)) {}

  node_role role = node_role::worker;  ///< this node's role
  std::string name;                    ///< this node's name in the peer's logs ("worker 0")
  std::uint64_t plan_hash = 0;         ///< 0: not known yet (the peer's hash is not checked)
  cluster_secret secret;
  wire_keys keys;                      ///< the plan's key shapes, to check what arrives
  /// Shards this node serves to peers (shared; may be filled in later).
  std::shared_ptr<shard_directory> local_shards = std::make_shared<shard_directory>();
  /// Compute actors this node serves to the peer's coordinator (shared; filled in later).
  std::shared_ptr<compute_directory> local_computes = std::make_shared<compute_directory>();
  /// Where the peer's batch reports go (the scheduler's metrics actor); null: refused.
  metrics_sink_actor metrics;
  /// How long a compute may take to train or validate an epoch asked over this link.
  std::chrono::milliseconds phase_timeout{std::chrono::hours(48)};
  /// The node that takes the peer's node-level messages and hears of the link's end: the
  /// scheduler (on its links to members), or a server or worker (on its links). At most one;
  /// neither: node-level messages are refused.
  scheduler_inbox scheduler_node;
  member_inbox member_node;
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds connection_timeout{5000};
  std::size_t max_frame_bytes = std::size_t{1} << 30;
  /// Idle receive buffers a link keeps for reuse (a step's worth of frames).
  std::size_t receive_pool_bytes = std::size_t{256} << 20;
  /// Where the computes this link serves are (a worker's link to its scheduler): the epochs
  /// asked over it and the batch reports it carries keep it up to date, so the worker can say
  /// where it was when interrupted. May be null.
  std::shared_ptr<run_position> position;
  /// The node's traffic registry: the link counts its frames there too (may be null).
  std::shared_ptr<traffic_registry> traffic;
  /// Where a link reports refusals and losses (default: standard error, one line each). Called
  /// from the link's thread until the link has terminated: what it refers to must live as
  /// long (e.g. longer than the actor system).
  std::function<void(const std::string&)> log;
};

/// Bytes and frames that crossed one link, per message kind (kind_name order), headers
/// included.
struct link_traffic {
  std::array<std::uint64_t, wire_kinds> bytes_in{}, bytes_out{}, frames_in{}, frames_out{};
  std::uint64_t total_in() const;
  std::uint64_t total_out() const;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_traffic& x) {
  return f(caf::meta::type_name("troupe.link_traffic"), x.bytes_in, x.bytes_out, x.frames_in,
           x.frames_out);
}

/// Connects to `host:port` and returns the link once the TCP connection stands (admission
/// follows asynchronously; requests wait for it). Blocks while connecting; the error names
/// the address when nothing listens there.
caf::expected<caf::actor> connect_link(caf::actor_system& system, const std::string& host,
                                       std::uint16_t port, link_options options);

/// A node's listening socket on `host:port` (port 0: any free port): every connection it
/// accepts becomes a link with `options` (peers are admitted one by one; a refused or broken
/// connection does not disturb the others). Answers (port_atom) -> uint16 with the bound port.
/// Binds only `host` (127.0.0.1 unless told otherwise).
using port_atom = caf::atom_constant<caf::atom("port")>;
caf::expected<caf::actor> spawn_listener(caf::actor_system& system, const std::string& host,
                                         std::uint16_t port, link_options options);

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::wire_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::wire_keys)
