// The channel's state and the few operations its skeletons use (cluster/remote/*.cpp): they
// run inside the channel's handlers, on its state, so serving a peer's request costs no actor
// hop. Private to the cluster layer.
//
// Thread-safety: the channel's own thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <troupe/cluster/channel.hpp>

#include "cluster/frame_socket.hpp"
#include "cluster/receive_pool.hpp"

namespace troupe {

using channel_clock = std::chrono::steady_clock;

enum class channel_stage { await_hello, await_proof, admitted, closed };

struct pending_call {
  caf::typed_response_promise<wire_message> promise;
  remote_interface interface = remote_interface::push_target;
  std::string target; // what it waits for, for errors ("shard 3")
  channel_clock::time_point asked;
  deadline due;
};

struct channel_state {
  std::optional<channel_options> options;
  std::shared_ptr<frame_socket> socket;
  channel_side side = channel_side::connecting;
  channel_stage at = channel_stage::await_hello;
  hello_message mine;
  std::optional<hello_message> peer;
  std::uint64_t peer_term = 0;        // the term of the peer's latest frame (0: none yet)
  std::string peer_name;              // for logs: the address until the hello names the node
  std::shared_ptr<receive_pool> pool; // reused receive buffers (the socket's reader fills them)
  unpacked_buffers unpack_into;       // reused buffers for values unpacked from compressed frames
  std::uint64_t next_request = 1;
  std::unordered_map<std::uint64_t, pending_call> pending;
  // Messages made before admission, with the request each belongs to (0: one way).
  std::vector<std::pair<wire_message, std::uint64_t>> queued;
  channel_clock::time_point last_received, last_sent;
  channel_clock::time_point last_tick; // when the last tick ran here: a gap is this process stopped
  std::uint64_t heartbeats = 0;
  // This channel's traffic: its entry in the node's registry, or its own without one.
  std::shared_ptr<traffic_registry::counters> counters =
    std::make_shared<traffic_registry::counters>();
  // Once this node has said goodbye (a shutdown frame): what the channel ends with, and when
  // at the latest. It waits for the peer to close the connection, so the frame is read before
  // this process may exit (closing drops what is not written yet).
  struct goodbye {
    caf::error end;
    channel_clock::time_point deadline;
  };
  std::optional<goodbye> leaving;
  static inline const char* name = "troupe.channel";
};

using tick_atom = caf::atom_constant<caf::atom("chantick")>;

/// The spawned channel: its typed interface plus what its connection's threads
/// (frame_socket.hpp) and its own tick send it. Handles given out are channel_actor.
using channel_self_actor = channel_actor::extend<
  caf::reacts_to<frame_in_atom, received_payload>, caf::reacts_to<frame_error_atom, std::string>,
  caf::reacts_to<socket_closed_atom, std::string>,
  caf::reacts_to<sequence_skip_atom, std::uint64_t, std::uint64_t>, caf::reacts_to<tick_atom>>;
using channel_pointer = channel_self_actor::stateful_pointer<channel_state>;

/// A channel over `socket`, a connection already made on `side` (connect_channel and the
/// listener use it). The seam of tests/cluster/remote_test.cpp: it gives the channel one end of
/// a socket pair and sends it, as its socket's reader would, the frames the other end "read"
/// (frame_in_atom), on CAF's deterministic test coordinator.
channel_self_actor spawn_channel(caf::actor_system& system, std::shared_ptr<frame_socket> socket,
                                 channel_options options, channel_side side);

/// Queues `message` on the connection (throws as encode_frame does, queuing nothing) (channel.cpp).
void write_frame(channel_pointer self, wire_message message);
/// Writes `message`; when the encoder refuses it, request `request` (0: none) fails with the
/// encoder's reason (a proxy's request) or the peer is told so (an answer).
void write_or_fail(channel_pointer self, wire_message message, std::uint64_t request);
/// Ends the channel: the node hears of it first, then every waiting request fails with `err`
/// (none: the channel ended normally); `why` is logged when it says something.
void close_channel(channel_pointer self, const caf::error& err, const std::string& why);
/// Ends a channel this node said goodbye on, with the end it chose then.
void leave(channel_pointer self);
/// A payload the connection's reader read (channel_receive.cpp): the peer's hello or proof
/// before admission, an admitted frame after.
void on_payload(channel_pointer self, received_payload& in);

/// One line to the channel's log, naming nothing (callers name the peer).
void channel_log(const channel_state& st, const std::string& text);
/// Ends the channel because the peer misbehaved (errc::bad_request, logged with `why`).
void refuse_peer(channel_pointer self, const std::string& why);
/// The peer's term is fenced (`why`): it is told so, and the channel ends (errc::peer_down).
void refuse_fenced(channel_pointer self, const std::string& why);
/// This process did not run for longer than the peer timeout (SIGSTOP, a paused VM): its peers
/// have written it off, so its node is told it is fenced (node_fences::note_fenced_here).
void note_if_stopped(channel_state& st);
/// Writes the answer to the peer's request `request` (if the encoder refuses it, a failure
/// frame tells the peer why). Nothing is written once the channel has left admission.
void write_answer(channel_pointer self, wire_message answer, std::uint64_t request);
/// Answers the peer's request `request` with `err` as a failure frame.
void write_failure(channel_pointer self, std::uint64_t request, const caf::error& err);
/// Refuses the peer's request `request` (0: a one-way message) for (interface, index), which
/// this node does not serve: logged, and a request is answered with a failure naming it.
void refuse_unserved(channel_pointer self, std::uint64_t request, remote_interface interface,
                     std::uint32_t index);
/// `err` as the peer should read it: CAF's own timeout of a skeleton's request to its target
/// (the frame's deadline passed here first) becomes errc::timeout naming `target` and this node.
caf::error as_served(channel_pointer self, caf::error err, const std::string& target);
/// The local deadline of a request whose frame said `remaining_ms` were left.
deadline deadline_of_frame(std::uint64_t remaining_ms);
/// This channel, as the node-control inboxes name it.
channel_actor channel_of(channel_pointer self);

} // namespace troupe
