// A channel: one TCP connection to another node, as an actor whose connection has a reader
// and a writer thread of its own (cluster/frame_socket.hpp). It frames and decodes Cap'n Proto
// messages (frame_codec.hpp), admits the peer (admission.hpp) before anything else, sends
// heartbeats, numbers requests and fails each at its deadline, and counts bytes per kind. It
// knows no interface: what it carries is described by one codec table per interface
// (cluster/remote/interface_codec.hpp), whose skeletons run inside the channel when a frame
// for their interface arrives and find its target in the node's serving_registry.
//
//   interface (push_target_actor, compute_actor, metrics_sink_actor, node control)
//     -> proxy (a typed_actor of that interface, cluster/remote/*,
//     troupe/cluster/remote_proxies.hpp)
//     -> channel (this; typed: channel_actor.hpp)  -> wire ->  channel
//     -> skeleton (a function of the interface's codec table, inside the channel)
//     -> the serving actor, found in the serving_registry by (interface, index)
//
// Deadlines: a request carries the deadline its originator set (call_atom's deadline), and the
// frame carries the time left, from which the peer's skeleton makes the deadline of its own
// request to the target. The far hop gives up at that deadline and answers with a failure
// naming what it waited for; so the channel holds the request `remote_failure_grace` past the
// deadline (deadline.hpp) for that failure to arrive, and only then fails it itself with
// errc::timeout naming the silent target (checked every tick, which is at most half that grace
// long, so the originator's own wait, the grace of answer_grace, is never reached first).
// The channel's own limits are about the connection (heartbeat, connection_timeout).
//
// What fails, and how:
//   - the peer's proof does not verify, its hello names another plan, a frame does not
//     decode, a message comes out of turn or of a kind no interface takes there: the channel
//     logs the reason naming the peer, closes the connection and quits with errc::bad_request;
//   - a request for an (interface, index) this node does not serve: answered with a failure
//     frame naming it (the peer's request fails; the channel stays up);
//   - the connection closes, or no frame arrives for `connection_timeout`: errc::peer_down;
//   - the peer answers a request with a failure: the request fails with the peer's error;
//   - a frame of a fenced term arrives, or the peer's term is fenced while the channel is up
//     (node_fences.hpp): the channel tells the peer it is fenced, and ends with errc::peer_down
//     naming why; nothing of that term reaches the node.
// On quitting, the node first hears (channel_lost_atom, channel, caf::error), then every waiting
// request fails with the channel's error: whatever the loss makes fail reaches the node after
// the loss itself. A member node hears (channel_up_atom, channel, peer name) once the peer is
// admitted.
//
// Copies: none in user space. An outgoing tensor is written from its own bytes (one sendmsg of
// the frame's pieces); an incoming one is read where the frame landed (tensor views keep that
// buffer alive). Proxies and skeletons add no actor hop to the data path.
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

#include <troupe/actors/metrics_actor.hpp>
#include <troupe/cluster/admission.hpp>
#include <troupe/cluster/channel_actor.hpp>
#include <troupe/cluster/frame_priority.hpp>
#include <troupe/cluster/node_control.hpp>
#include <troupe/cluster/node_fences.hpp>
#include <troupe/cluster/serving_registry.hpp>
#include <troupe/cluster/traffic_registry.hpp>
#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

class log_budget; // cluster/log_budget.hpp

struct channel_options {
  /// A channel needs the secret: there is no unauthenticated mode.
  explicit channel_options(cluster_secret cluster) : secret(std::move(cluster)) {}

  node_kind role = node_kind::worker; ///< this node's role
  std::string name;                   ///< this node's name in the peer's logs ("worker 0")
  std::uint64_t plan_hash = 0;        ///< 0: not known yet (the peer's hash is not checked)
  cluster_secret secret;
  wire_keys keys; ///< the plan's key shapes, to check what arrives
  /// Write control frames first, then tensor frames first layers first (frame_priority.hpp);
  /// off: every frame as queued. `order` ranks the tensor frames (the plan's keys).
  bool priority = false;
  forward_order order;
  /// With priority: the order this channel writes a step's pushes in (fixed_push_order in
  /// frame_priority.hpp; frame_socket's set_sequence), waiting at most `sequence_patience` for
  /// the next. Empty, or a same-host socket: pushes by rank like every other tensor frame.
  std::vector<std::uint64_t> push_sequence;
  std::chrono::milliseconds sequence_patience{2000};
  /// TCP: the most bytes per second the channel sends (its share of the host's link, so that the
  /// connections sharing it keep equal shares); 0: no limit.
  std::uint64_t pacing_bytes_per_second = 0;
  /// The congestion control a TCP channel runs (tcp_congestion.hpp, choose_tcp_congestion's
  /// algorithm); empty: the host's default. Same-host Unix sockets have none.
  std::string tcp_congestion;
  /// What this node serves to peers: shards, computes, the metrics actor, its control inbox
  /// (shared with a listener's other channels; may be filled in later). A node's inbox
  /// (scheduler_control or member_control, index 0) also hears of the channel's end.
  std::shared_ptr<serving_registry> serving = std::make_shared<serving_registry>();
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds connection_timeout{5000};
  /// Peers on this host connect through a Unix socket instead of TCP
  /// (cluster/transport/unix_connection.hpp): a connecting channel takes the local socket its
  /// listener offers, a listener offers one. Off for channels whose listener must see the peer's
  /// address (the scheduler's).
  bool same_host_shortcut = false;
  std::size_t max_frame_bytes = std::size_t{1} << 30;
  /// Idle receive buffers a channel keeps for reuse (a step's worth of frames).
  std::size_t receive_pool_bytes = std::size_t{256} << 20;
  /// Idle buffers a channel keeps for the values it unpacks from compressed frames (float32:
  /// twice an fp16 frame, 16 times a 2-bit one), reused by the next step's frames.
  std::size_t unpacked_pool_bytes = std::size_t{2} << 30;
  /// Where the computes this channel serves are (a worker's channel to its scheduler): the epochs
  /// asked over it and the batch reports it carries keep it up to date, so the worker can say
  /// where it was when interrupted. May be null.
  std::shared_ptr<run_position> position;
  /// The node's traffic registry: the channel counts its frames there too (may be null).
  std::shared_ptr<traffic_registry> traffic;
  /// The node's terms (node_fences.hpp): the one its frames carry, and the fenced ones whose
  /// frames the channel refuses, ending the channel with a goodbye that tells the peer so.
  std::shared_ptr<node_fences> fences = std::make_shared<node_fences>();
  /// Where a channel reports refusals and losses (default: standard error, one line each). Called
  /// from the channel's thread until the channel has terminated: what it refers to must live as
  /// long (e.g. longer than the actor system).
  std::function<void(const std::string&)> log;
  /// How many refusals of peers not yet admitted this channel may log (a listener's channels share
  /// one: a peer retrying with a wrong secret in a loop would fill the log); null: every one.
  /// A listener given none makes one of 5 lines per 10 s.
  std::shared_ptr<log_budget> refusal_budget;
};

/// Connects to `host:port` and returns the channel once the connection stands (admission
/// follows asynchronously; requests wait for it). Blocks while connecting; the error names
/// the address when nothing listens there. `over_local_socket`, where given, says whether the
/// connection took the same-host shortcut (channel_options::same_host_shortcut).
caf::expected<channel_actor> connect_channel(caf::actor_system& system, const std::string& host,
                                             std::uint16_t port, channel_options options,
                                             bool* over_local_socket = nullptr);

/// A node's listening socket on `host:port` (port 0: any free port): every connection it
/// accepts becomes a channel with `options` (peers are admitted one by one; a refused or broken
/// connection does not disturb the others). Answers (port_atom) -> uint16 with the bound port.
/// Binds only `host` (127.0.0.1 unless told otherwise).
using port_atom = caf::atom_constant<caf::atom("port")>;
using listener_actor = caf::typed_actor<caf::replies_to<port_atom>::with<std::uint16_t>>;
caf::expected<listener_actor> spawn_listener(caf::actor_system& system, const std::string& host,
                                             std::uint16_t port, channel_options options);

class listening_socket;
/// The same on a socket bound beforehand (listening_socket::bind, cluster/frame_socket.hpp): a
/// server binds its port before it joins, so that a port in use ends it at once.
listener_actor spawn_listener(caf::actor_system& system, std::shared_ptr<listening_socket> bound,
                              channel_options options);

} // namespace troupe
