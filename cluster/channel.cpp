// The channel actor (see channel.hpp). One connection, three stages: the peer's hello, its
// proof, then admitted traffic. The connection's own threads (frame_socket.hpp) read each
// payload into a buffer of its own, which the decoder reads in place and the tensors it yields
// keep alive, and write each frame's pieces straight from its tensors. What an admitted frame
// means is the interfaces' business (cluster/remote/interface_codec.hpp): requests and one-way
// messages go to their interface's skeleton, answers to the request they answer.
#include <troupe/cluster/channel.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <type_traits>
#include <variant>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/frame_codec.hpp>

#include "cluster/channel_internals.hpp"
#include "cluster/frame_socket.hpp"
#include "cluster/log_budget.hpp"
#include "cluster/receive_pool.hpp"
#include "cluster/remote/interface_codec.hpp"

namespace troupe {

namespace {

using stage = channel_stage;

// 1, 10, 100, ...: which of a repeated event's occurrences get a line.
bool is_power_of_ten(std::uint64_t n) {
  while (n >= 10 && n % 10 == 0)
    n /= 10;
  return n == 1;
}

} // namespace

// Queues `message` on the connection (throws as encode_frame does, queuing nothing), ranked
// for a writer with priority on (frame_priority.hpp).
void write_frame(channel_pointer self, wire_message message) {
  auto& st = self->state;
  const auto rank = st.options->priority ? frame_rank(message, st.options->order) : control_rank;
  const bool sequenced = std::holds_alternative<push_message>(message) && rank != unranked;
  auto frame = encode_frame(std::move(message), st.options->fences->own());
  st.counters->count_out(frame.kind(), frame.bytes());
  st.last_sent = channel_clock::now();
  st.socket->send(std::move(frame), rank, sequenced);
}

namespace {

// Tells the node this channel belongs to that the channel ends, and why.
void tell_node_lost(channel_pointer self, const caf::error& err) {
  auto& serving = *self->state.options->serving;
  if (auto node = serving.find<remote_interface::scheduler_control>(0))
    self->send(node, channel_lost_atom::value, channel_of(self), err);
  if (auto node = serving.find<remote_interface::member_control>(0))
    self->send(node, channel_lost_atom::value, channel_of(self), err);
}

} // namespace

// Ends the channel: the node hears of it first, then every waiting request fails with `err`
// (so the node learns the cause before any failure it causes).
void close_channel(channel_pointer self, const caf::error& err, const std::string& why) {
  auto& st = self->state;
  if (st.at == stage::closed)
    return;
  st.at = stage::closed;
  if (err && !why.empty()) // a finished run's end is not news
    channel_log(st, "channel to " + st.peer_name + ": " + why);
  tell_node_lost(self, err);
  for (auto& [id, request] : st.pending)
    request.promise.deliver(
      err ? err : make_error(errc::peer_down, "the channel to " + st.peer_name + " closed"));
  st.pending.clear();
  st.queued.clear();
  st.socket->close();
  self->quit(err);
}

// Ends a channel this node said goodbye on, with the end it chose then.
void leave(channel_pointer self) {
  close_channel(self, self->state.leaving->end, "");
}

namespace {

// Tells the peer how the channel ends (`m`), fails what waits on it, logs `why` when the end
// is an error, and closes once the peer has closed (or after connection_timeout).
void say_goodbye(channel_pointer self, const shutdown_message& m, caf::error end,
                 const std::string& why) {
  auto& st = self->state;
  if (st.at == stage::closed || st.leaving)
    return;
  if (end) {
    const auto line = "channel to " + st.peer_name + ": " + why;
    if (st.at == stage::admitted || !st.options->refusal_budget)
      channel_log(st, line);
    else if (auto budgeted = st.options->refusal_budget->take(line))
      channel_log(st, *budgeted);
  }
  const auto waiting =
    end ? end : make_error(errc::peer_down, "the channel to " + st.peer_name + " closed");
  for (auto& [id, request] : st.pending)
    request.promise.deliver(waiting);
  st.pending.clear();
  st.queued.clear();
  st.leaving =
    channel_state::goodbye{std::move(end), channel_clock::now() + st.options->connection_timeout};
  try {
    write_frame(self, m);
  } catch (const std::exception&) {
    leave(self); // the reason does not fit a frame: closing says enough
  }
}

// The failure a request ends with, as the frame that says so.
failure_message failure_of(std::uint64_t request, const caf::error& err) {
  return failure_message{request, troupe_code(err),
                         error_text(err).substr(0, failure_message::max_text_bytes)};
}

// Request kinds carry their number and the time left to their deadline (wire_messages.hpp).
template <class T, class = void> struct is_request_kind : std::false_type {};
template <class T>
struct is_request_kind<T, std::void_t<decltype(std::declval<T&>().remaining_ms)>> : std::true_type {
};

// Stamps request `id` into `message` with the milliseconds left until `due` (at least 1: a
// request written is one its originator still waits for).
void stamp(wire_message& message, std::uint64_t id, const deadline& due) {
  std::visit(
    [&](auto& m) {
      if constexpr (is_request_kind<std::decay_t<decltype(m)>>::value) {
        m.request = id;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due.left()).count();
        m.remaining_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(left, 1));
      }
    },
    message);
}

} // namespace

// Writes `message`; when the encoder refuses it, request `request` (0: none) fails with the
// encoder's complaint and a one-way message is logged.
void write_or_fail(channel_pointer self, wire_message message, std::uint64_t request) {
  auto& st = self->state;
  const auto kind = message.index();
  if (auto it = st.pending.find(request); request != 0 && it != st.pending.end())
    stamp(message, request, it->second.due);
  try {
    write_frame(self, std::move(message));
    return;
  } catch (const std::exception& e) {
    const std::string problem = std::string("cannot send a ") + kind_name(kind) + ": " + e.what();
    if (auto it = st.pending.find(request); request != 0 && it != st.pending.end()) {
      it->second.promise.deliver(
        make_error(errc::bad_request, "channel to " + st.peer_name + ": " + problem));
      st.pending.erase(it);
    } else {
      channel_log(st, "channel to " + st.peer_name + ": " + problem);
    }
  }
}

namespace {

// Writes `message` now, or queues it until admission (see write_or_fail for `request`).
void send_or_queue(channel_pointer self, wire_message message, std::uint64_t request = 0) {
  auto& st = self->state;
  if (st.at == stage::closed || st.leaving)
    return;
  if (st.at != stage::admitted)
    st.queued.emplace_back(std::move(message), request);
  else
    write_or_fail(self, std::move(message), request);
}

// This node ends the channel: the peer hears why (or that the run finished) first.
void shut_down_channel(channel_pointer self, const shutdown_message& m) {
  say_goodbye(self, m,
              m.finished ? caf::error{}
                         : make_error(errc::peer_down, "channel to " + self->state.peer_name
                                                         + " shut down here: " + m.reason),
              "shut down here: " + m.reason);
}

// A proxy's request: numbered here, failed at `due` unless answered before.
caf::result<wire_message> call(channel_pointer self, wire_message& request, const deadline& due) {
  auto& st = self->state;
  const auto* codec = codec_taking(request.index(), kind_role::request);
  if (!codec)
    return make_error(errc::bad_request,
                      std::string("a ") + kind_name(request) + " is no request of any interface");
  if (st.leaving || st.at == stage::closed)
    return st.leaving && st.leaving->end
             ? st.leaving->end
             : make_error(errc::peer_down, "the channel to " + st.peer_name + " is closing");
  const auto id = st.next_request++;
  auto promise = self->make_response_promise<wire_message>();
  st.pending.emplace(id, pending_call{promise, codec->interface, codec->target_of(request),
                                      channel_clock::now(), due});
  send_or_queue(self, std::move(request), id);
  return promise;
}

// Fails every request whose deadline passed more than remote_failure_grace ago, naming what it
// waited for: within the grace, the far hop's failure frame (which names the cause) wins.
void expire_requests(channel_pointer self, channel_clock::time_point now) {
  auto& st = self->state;
  for (auto it = st.pending.begin(); it != st.pending.end();) {
    if (it->second.due.at <= now - remote_failure_grace) {
      const auto& r = it->second;
      const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - r.asked).count();
      it->second.promise.deliver(make_error(
        errc::timeout, r.target + " on " + st.peer_name + " did not answer by its deadline (waited "
                         + std::to_string(waited) + " ms)"));
      it = st.pending.erase(it);
    } else {
      ++it;
    }
  }
}

void on_tick(channel_pointer self) {
  auto& st = self->state;
  if (st.at == stage::closed)
    return;
  note_if_stopped(st);
  const auto now = channel_clock::now();
  st.last_tick = now;
  if (st.leaving) {
    if (now >= st.leaving->deadline)
      leave(self);
    return;
  }
  if (auto why = st.options->fences->fenced(st.peer_term))
    return refuse_fenced(self, *why);
  // Heard: the last whole frame, or the last bytes of one still arriving (a big frame on a
  // slow channel takes seconds, and the heartbeats queue behind it).
  const auto heard =
    st.socket ? std::max(st.last_received, st.socket->last_bytes_at()) : st.last_received;
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - heard);
  if (silent >= st.options->connection_timeout)
    return close_channel(self,
                         make_error(errc::peer_down, "no frame from " + st.peer_name + " for "
                                                       + std::to_string(silent.count()) + " ms"),
                         "lost: no frame for " + std::to_string(silent.count()) + " ms");
  expire_requests(self, now);
  if (st.at == stage::admitted && now - st.last_sent >= st.options->heartbeat_interval)
    write_frame(self, heartbeat_message{++st.heartbeats});
}

std::chrono::milliseconds tick_period(const channel_options& options) {
  const auto half_grace =
    std::chrono::duration_cast<std::chrono::milliseconds>(remote_failure_grace / 2);
  return std::max(
    std::chrono::milliseconds{1},
    std::min({options.heartbeat_interval / 2, options.connection_timeout / 4, half_grace}));
}

channel_traffic traffic_of(const traffic_registry::counters& c) {
  channel_traffic t;
  for (std::size_t k = 0; k < wire_kinds; ++k) {
    t.bytes_in[k] = c.bytes_in[k].load(std::memory_order_relaxed);
    t.bytes_out[k] = c.bytes_out[k].load(std::memory_order_relaxed);
    t.frames_in[k] = c.frames_in[k].load(std::memory_order_relaxed);
    t.frames_out[k] = c.frames_out[k].load(std::memory_order_relaxed);
  }
  return t;
}

// Before the first frame: the congestion control and pacing the options ask for (the
// algorithm shapes how this channel shares the hosts' links), and the fixed push order.
void tune_connection(channel_state& st) {
  if (!st.socket->local() && !st.options->tcp_congestion.empty()
      && !st.socket->set_congestion(st.options->tcp_congestion)) {
    const int why = errno; // before the text's allocations
    channel_log(st, "channel with " + st.peer_name + ": TCP congestion control "
                      + st.options->tcp_congestion + " refused (" + std::strerror(why)
                      + "); it keeps the host's default");
  }
  if (!st.socket->local() && st.options->pacing_bytes_per_second > 0
      && !st.socket->set_pacing(st.options->pacing_bytes_per_second)) {
    const int why = errno;
    channel_log(st, "channel with " + st.peer_name + ": pacing at "
                      + std::to_string(st.options->pacing_bytes_per_second)
                      + " bytes/s with at most "
                      + std::to_string(paced_unsent_bytes(st.options->pacing_bytes_per_second))
                      + " bytes unsent refused (" + std::strerror(why)
                      + "); the channel goes on without what was refused");
  }
  // The fixed order is for a paced channel, whose bytes trickle out at its share: over a same-host
  // socket (not paced, and not on the host's link) every push goes as soon as it is there, by
  // rank. Held back for the order, the middle layers' pushes would wait for backward's end and
  // then delay the next forward (one colocated worker at 100 ms: 138 ms a step against 104).
  if (st.options->priority && !st.options->push_sequence.empty() && !st.socket->local())
    st.socket->set_sequence(st.options->push_sequence, st.options->sequence_patience);
}

// The fixed order assumes every push comes each step; a push that does not is worth a line, but
// not one per step: the 1st, 10th, 100th... of the channel.
void on_sequence_skip(channel_pointer self, std::uint64_t rank, std::uint64_t skips) {
  auto& st = self->state;
  if (is_power_of_ten(skips))
    channel_log(st, "channel to " + st.peer_name + ": the fixed push order waited "
                      + std::to_string(st.options->sequence_patience.count())
                      + " ms for the push of rank " + std::to_string(rank)
                      + " and went on without it (" + std::to_string(skips)
                      + (skips == 1 ? " time" : " times") + " on this channel so far)");
}

// The node's one-way message: a goodbye ends the channel; a kind no interface sends one way is not
// sent.
void on_send(channel_pointer self, wire_message& message) {
  if (auto* end = std::get_if<shutdown_message>(&message))
    return shut_down_channel(self, *end);
  if (!codec_taking(message.index(), kind_role::one_way))
    return channel_log(self->state, "channel to " + self->state.peer_name + ": a "
                                      + kind_name(message)
                                      + " is no one-way message of any interface: not sent");
  send_or_queue(self, std::move(message));
}

channel_self_actor::behavior_type channel(channel_pointer self,
                                          std::shared_ptr<frame_socket> socket,
                                          channel_options options, channel_side side) {
  auto& st = self->state;
  st.options.emplace(std::move(options));
  st.pool = std::make_shared<receive_pool>(st.options->receive_pool_bytes);
  // Unpacked values come from a pool of their own: new, a step's worth of them (16 times a
  // 2-bit frame) would have fresh pages faulted in and zeroed every step, a sixth of a
  // compressed VGG-16 step's CPU time.
  st.unpack_into = unpacked_from(std::make_shared<receive_pool>(st.options->unpacked_pool_bytes));
  st.socket = std::move(socket);
  st.side = side;
  st.peer_name = st.socket->peer();
  st.last_received = st.last_sent = st.last_tick = channel_clock::now();
  if (st.options->traffic)
    st.counters = st.options->traffic->add(self->address(), st.peer_name);
  st.mine.role = st.options->role;
  st.mine.name = st.options->name;
  st.mine.challenge = fresh_nonce();
  st.mine.plan_hash = st.options->plan_hash;
  tune_connection(st);
  st.socket->start(socket_owner_actor{self}, st.options->max_frame_bytes, st.pool,
                   st.options->priority ? write_order::by_rank : write_order::fifo);
  write_frame(self, st.mine);
  const auto period = tick_period(*st.options);
  self->delayed_send(self, period, tick_atom::value);
  return {
    [=](call_atom, wire_message& request, const deadline& due) -> caf::result<wire_message> {
      return call(self, request, due);
    },
    [=](send_atom, wire_message& message) { on_send(self, message); },
    [=](stats_atom) { return traffic_of(*self->state.counters); },
    [=](plan_atom, std::uint64_t plan_hash, wire_keys& keys) {
      self->state.options->plan_hash = plan_hash;
      self->state.options->keys = std::move(keys);
    },
    [=](frame_in_atom, received_payload& payload) { on_payload(self, payload); },
    [=](sequence_skip_atom, std::uint64_t rank, std::uint64_t skips) {
      on_sequence_skip(self, rank, skips);
    },
    [=](frame_error_atom, const std::string& why) {
      auto& st = self->state;
      if (st.at != stage::closed && !st.leaving)
        refuse_peer(self, why);
    },
    [=](socket_closed_atom, const std::string& why) {
      note_if_stopped(self->state);
      if (self->state.leaving)
        return leave(self);
      close_channel(
        self, make_error(errc::peer_down, "the connection to " + self->state.peer_name + " closed"),
        "the connection closed (" + why + ")");
    },
    [=](tick_atom) {
      on_tick(self);
      if (self->state.at != stage::closed)
        self->delayed_send(self, period, tick_atom::value);
    },
  };
}

} // namespace

void channel_log(const channel_state& st, const std::string& text) {
  if (st.options->log)
    st.options->log(text);
  else
    std::cerr << ("troupe: " + text + "\n"); // one write: processes may share the stream
}

void refuse_peer(channel_pointer self, const std::string& why) {
  // The peer learns why, so its error names the reason (a raw TCP client gets a frame it can
  // ignore).
  say_goodbye(self,
              shutdown_message{("refused by " + self->state.options->name + ": " + why)
                                 .substr(0, failure_message::max_text_bytes)},
              make_error(errc::bad_request, "channel to " + self->state.peer_name + ": " + why),
              "refused: " + why);
}

void note_if_stopped(channel_state& st) {
  // The tick runs every tick_period, well within the timeout; a gap past it is no slow peer
  // (that is the silence check) but this process not running.
  const auto gap =
    std::chrono::duration_cast<std::chrono::milliseconds>(channel_clock::now() - st.last_tick);
  if (st.at == stage::closed || gap <= st.options->connection_timeout)
    return;
  st.options->fences->note_fenced_here("this process did not run for " + std::to_string(gap.count())
                                       + " ms, past the peer timeout ("
                                       + std::to_string(st.options->connection_timeout.count())
                                       + " ms): its peers have declared it lost");
}

void refuse_fenced(channel_pointer self, const std::string& why) {
  auto& st = self->state;
  shutdown_message told{
    ("fenced by " + st.options->name + ": " + why).substr(0, failure_message::max_text_bytes)};
  told.fenced = true;
  say_goodbye(self, told, make_error(errc::peer_down, st.peer_name + " is fenced: " + why),
              "fenced: " + why);
}

void write_answer(channel_pointer self, wire_message answer, std::uint64_t request) {
  if (self->state.at != stage::admitted || self->state.leaving)
    return;
  const auto kind = answer.index();
  try {
    write_frame(self, std::move(answer));
  } catch (const std::exception& e) {
    const std::string problem = std::string("cannot send a ") + kind_name(kind) + ": " + e.what();
    write_frame(self, failure_message{request, errc::bad_request,
                                      problem.substr(0, failure_message::max_text_bytes)});
  }
}

void write_failure(channel_pointer self, std::uint64_t request, const caf::error& err) {
  if (self->state.at == stage::admitted && !self->state.leaving)
    write_frame(self, failure_of(request, err));
}

void refuse_unserved(channel_pointer self, std::uint64_t request, remote_interface interface,
                     std::uint32_t index) {
  auto& st = self->state;
  const std::string what = std::string(to_string(interface)) + " " + std::to_string(index);
  channel_log(st, "channel to " + st.peer_name + ": refused its "
                    + (request != 0 ? "request" : "message") + " to " + what
                    + ", which this node does not serve");
  if (request != 0)
    write_failure(self, request,
                  make_error(errc::bad_request, st.options->name + " serves no " + what));
}

caf::error as_served(channel_pointer self, caf::error err, const std::string& target) {
  if (err.category() == error_category || troupe_code(err) != errc::timeout)
    return err;
  return make_error(errc::timeout, target + " on " + self->state.options->name
                                     + " did not answer by its deadline");
}

deadline deadline_of_frame(std::uint64_t remaining_ms) {
  return deadline::after(std::chrono::milliseconds(static_cast<std::int64_t>(remaining_ms)));
}

channel_actor channel_of(channel_pointer self) {
  return channel_actor{self};
}

std::uint64_t channel_traffic::total_in() const {
  return std::accumulate(bytes_in.begin(), bytes_in.end(), std::uint64_t{0});
}

std::uint64_t channel_traffic::total_out() const {
  return std::accumulate(bytes_out.begin(), bytes_out.end(), std::uint64_t{0});
}

caf::expected<channel_actor> connect_channel(caf::actor_system& system, const std::string& host,
                                             std::uint16_t port, channel_options options,
                                             bool* over_local_socket) {
  auto socket =
    frame_socket::connect(host, port, options.connection_timeout, options.same_host_shortcut);
  if (!socket)
    return std::move(socket.error());
  if (over_local_socket)
    *over_local_socket = (*socket)->local();
  return spawn_channel(system, std::move(*socket), std::move(options), channel_side::connecting);
}

channel_self_actor spawn_channel(caf::actor_system& system, std::shared_ptr<frame_socket> socket,
                                 channel_options options, channel_side side) {
  return system.spawn(channel, std::move(socket), std::move(options), side);
}

} // namespace troupe
