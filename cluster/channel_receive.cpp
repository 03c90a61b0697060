// What arrives on a channel (channel_internals.hpp): each payload is decoded in place; before
// admission it is the peer's hello, then its proof; once admitted, a heartbeat, a goodbye, an
// answer to a request of this node, or a request or one-way message of an interface, which
// goes to that interface's skeleton (cluster/remote/interface_codec.hpp).
#include <type_traits>
#include <variant>

#include <caf/stateful_actor.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/admission.hpp>
#include <troupe/cluster/frame_codec.hpp>

#include "cluster/channel_internals.hpp"
#include "cluster/frame_socket.hpp"
#include "cluster/remote/interface_codec.hpp"

namespace troupe {

namespace {

using stage = channel_stage;

// The peer answered request `request` with `answer` (a failure answers any request; other
// kinds must be an answer of the request's interface). An answer after the request's
// deadline finds nothing: the requester already has its timeout, and the answer is dropped.
void on_answer(channel_pointer self, std::uint64_t request, wire_message& answer) {
  auto& st = self->state;
  auto it = st.pending.find(request);
  if (it == st.pending.end())
    return;
  if (auto* failure = std::get_if<failure_message>(&answer)) {
    auto promise = std::move(it->second.promise);
    st.pending.erase(it);
    promise.deliver(make_error(failure->code, st.peer_name + ": " + failure->text));
    return;
  }
  const auto& codec = codec_of(it->second.interface);
  if (!codec.takes(answer.index(), kind_role::answer))
    return refuse_peer(self, "answered request " + std::to_string(request) + " ("
                               + to_string(codec.interface) + ") with a " + kind_name(answer));
  auto promise = std::move(it->second.promise);
  st.pending.erase(it);
  promise.deliver(std::move(answer));
}

// The kinds that answer a request carry the request's number.
template <class T>
inline constexpr bool is_answer_kind =
  std::disjunction_v<std::is_same<T, weights_message>, std::is_same<T, report_message>,
                     std::is_same<T, checkpoint_done_message>, std::is_same<T, replicated_message>,
                     std::is_same<T, command_result_message>, std::is_same<T, changed_message>,
                     std::is_same<T, failure_message>>;

std::uint64_t request_of(const wire_message& answer) {
  return std::visit(
    [](const auto& m) -> std::uint64_t {
      if constexpr (is_answer_kind<std::decay_t<decltype(m)>>)
        return m.request;
      else
        return 0;
    },
    answer);
}

// The peer ends the channel and says why; the node hears it before the channel's end. Before
// admission that is the peer refusing this node (a wrong secret, another plan): errc::bad_request,
// which no retry mends.
void on_peer_goodbye(channel_pointer self, const shutdown_message& m) {
  auto& st = self->state;
  if (m.fenced)
    st.options->fences->note_fenced_here(m.reason);
  auto& serving = *st.options->serving;
  if (auto node = serving.find<remote_interface::scheduler_control>(0))
    self->send(node, goodbye_atom::value, channel_of(self), m);
  if (auto node = serving.find<remote_interface::member_control>(0))
    self->send(node, goodbye_atom::value, channel_of(self), m);
  if (st.at != stage::admitted)
    return close_channel(self, make_error(errc::bad_request, st.peer_name + ": " + m.reason),
                         "refused by the peer: " + m.reason);
  close_channel(self,
                m.finished ? caf::error{}
                           : make_error(errc::peer_down, st.peer_name + " shut down: " + m.reason),
                "the peer shut down: " + m.reason);
}

void on_admitted_message(channel_pointer self, wire_message& message) {
  const auto kind = message.index();
  if (std::holds_alternative<heartbeat_message>(message))
    return; // last_received is updated for every frame
  if (auto* m = std::get_if<shutdown_message>(&message))
    return on_peer_goodbye(self, *m);
  if (std::holds_alternative<failure_message>(message) || codec_taking(kind, kind_role::answer))
    return on_answer(self, request_of(message), message);
  const auto* codec = codec_taking(kind, kind_role::request);
  if (!codec)
    codec = codec_taking(kind, kind_role::one_way);
  if (!codec)
    return refuse_peer(self, std::string("sent a ") + kind_name(message)
                               + ", which no interface takes here");
  codec->serve(self, message);
}

void on_handshake_message(channel_pointer self, wire_message& message) {
  auto& st = self->state;
  if (auto* m = std::get_if<shutdown_message>(&message))
    return on_peer_goodbye(self, *m);
  if (st.at == stage::await_hello) {
    auto* hello = std::get_if<hello_message>(&message);
    if (!hello)
      return refuse_peer(self, std::string("sent a ") + kind_name(message) + " before its hello");
    // A node names itself after its role ("worker (pid 42)", "worker_1"): the role is said once.
    const std::string role = to_string(hello->role);
    st.peer_name = (hello->name.rfind(role, 0) == 0 ? hello->name : role + " '" + hello->name + "'")
                   + " at " + st.peer_name;
    if (hello->plan_hash != 0 && st.mine.plan_hash != 0 && hello->plan_hash != st.mine.plan_hash)
      return refuse_peer(self, "it runs plan " + std::to_string(hello->plan_hash)
                                 + ", this node runs plan " + std::to_string(st.mine.plan_hash)
                                 + " (another config or version)");
    st.peer = *hello;
    if (st.options->traffic)
      st.options->traffic->rename(self->address(), hello->name);
    st.at = stage::await_proof;
    write_frame(self,
                proof_message{membership_proof(st.options->secret, st.side, st.mine, *st.peer)});
    return;
  }
  auto* proof = std::get_if<proof_message>(&message);
  if (!proof)
    return refuse_peer(self, std::string("sent a ") + kind_name(message) + " instead of its proof");
  const auto peer_side =
    st.side == channel_side::connecting ? channel_side::accepting : channel_side::connecting;
  if (!proof_is_valid(st.options->secret, peer_side, *st.peer, st.mine, proof->proof))
    return refuse_peer(self, "its proof of the cluster secret is wrong");
  st.at = stage::admitted;
  if (auto node = st.options->serving->find<remote_interface::member_control>(0))
    self->send(node, channel_up_atom::value, channel_of(self), st.peer_name);
  auto queued = std::move(st.queued);
  st.queued.clear();
  // What waited for admission is ordered as a whole (with priority: first layers first), not
  // by which frame the writer happened to take before the next was queued.
  frame_socket::holding held(*st.socket);
  for (auto& [message, request] : queued)
    write_or_fail(self, std::move(message), request);
}

} // namespace

void on_payload(channel_pointer self, received_payload& in) {
  auto& st = self->state;
  if (st.at == stage::closed)
    return;
  auto payload = std::move(in.bytes);
  if (st.leaving) {
    // After goodbye, whatever the peer still sends is dropped; but when it said goodbye too
    // (both ended at once), neither waits for the other to close first.
    auto decoded = decode_payload(payload, st.options->keys);
    if (decoded.ok() && std::holds_alternative<shutdown_message>(decoded.message))
      leave(self);
    return;
  }
  note_if_stopped(st);
  st.last_received = channel_clock::now();
  auto decoded = decode_payload(payload, st.options->keys, st.unpack_into);
  if (!decoded.ok())
    return refuse_peer(self, "undecodable frame: " + decoded.error);
  if (decoded.term != 0)
    st.peer_term = decoded.term;
  if (auto why = st.options->fences->fenced(st.peer_term))
    return refuse_fenced(self, *why);
  const auto kind = decoded.message.index();
  st.counters->count_in(kind, frame_header_bytes + payload->size());
  if (st.at == stage::admitted)
    on_admitted_message(self, decoded.message);
  else
    on_handshake_message(self, decoded.message);
}

} // namespace troupe
