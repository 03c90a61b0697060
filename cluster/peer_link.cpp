// The peer link actor (see peer_link.hpp). One connection, three stages: the peer's hello,
// its proof, then admitted traffic. The connection's own threads (frame_socket.hpp) read each
// payload into a buffer of its own, which the decoder reads in place and the tensors it yields
// keep alive, and write each frame's pieces straight from its tensors.
#include <troupe/cluster/peer_link.hpp>

#include <algorithm>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/frame_codec.hpp>

#include "cluster/frame_socket.hpp"
#include "cluster/receive_pool.hpp"

namespace troupe {

namespace {

using clock_type = std::chrono::steady_clock;
using tick_atom = caf::atom_constant<caf::atom("linktick")>;

enum class stage { await_hello, await_proof, admitted, closed };

struct pending_request {
  caf::response_promise promise;
  std::uint32_t shard = 0;  // or the worker, for a control request
  bool control = false;     // answered by a report, not by weights
  clock_type::time_point deadline;
};

struct link_state {
  std::optional<link_options> options;
  std::shared_ptr<frame_socket> socket;
  link_side side = link_side::connecting;
  stage at = stage::await_hello;
  hello_message mine;
  std::optional<hello_message> peer;
  std::string peer_name;  // for logs: the address until the hello names the node
  // Reused receive buffers (the socket's reader fills them).
  std::shared_ptr<receive_pool> pool;
  std::uint64_t next_request = 1;
  std::unordered_map<std::uint64_t, pending_request> pending;
  // Messages made before admission, with the request each belongs to (0: one way).
  std::vector<std::pair<wire_message, std::uint64_t>> queued;
  clock_type::time_point last_received, last_sent;
  std::uint64_t heartbeats = 0;
  // This link's traffic: its entry in the node's registry, or its own without one.
  std::shared_ptr<traffic_registry::counters> counters = std::make_shared<traffic_registry::counters>();
  // Once this node has said goodbye (a shutdown frame): what the link ends with, and when at
  // the latest. It waits for the peer to close the connection, so the frame is read before
  // this process may exit (closing drops what is not written yet).
  struct goodbye {
    caf::error end;
    clock_type::time_point deadline;
  };
  std::optional<goodbye> leaving;
  static inline const char* name = "troupe.peer_link";
};

using link_pointer = caf::stateful_actor<link_state>*;

void log_line(const link_state& st, const std::string& text) {
  if (st.options->log)
    st.options->log(text);
  else
    std::cerr << ("troupe: " + text + "\n");  // one write: processes may share the stream
}

// Queues `message` on the connection (throws as encode_frame does, queuing nothing).
void write_frame(link_pointer self, wire_message message) {
  auto& st = self->state;
  auto frame = encode_frame(std::move(message));
  st.counters->count_out(frame.kind(), frame.bytes());
  st.last_sent = clock_type::now();
  st.socket->send(std::move(frame));
}

// Tells the node this link belongs to that the link ends, and why.
void tell_node_lost(link_pointer self, const caf::error& err) {
  auto& st = self->state;
  const auto me = caf::actor_cast<caf::actor>(self);
  if (st.options->scheduler_node)
    self->send(st.options->scheduler_node, link_lost_atom::value, me, err);
  if (st.options->member_node)
    self->send(st.options->member_node, link_lost_atom::value, me, err);
}

// Ends the link: the node hears of it first, then every waiting request fails with `err`
// (so the node learns the cause before any failure it causes).
void close_link(link_pointer self, const caf::error& err, const std::string& why) {
  auto& st = self->state;
  if (st.at == stage::closed)
    return;
  st.at = stage::closed;
  if (err && !why.empty())  // a finished run's end is not news
    log_line(st, "link to " + st.peer_name + ": " + why);
  tell_node_lost(self, err);
  for (auto& [id, request] : st.pending)
    request.promise.deliver(err ? err : make_error(errc::peer_down, "the link to " + st.peer_name + " closed"));
  st.pending.clear();
  st.queued.clear();
  st.socket->close();
  self->quit(err);
}

// Ends a link this node said goodbye on, with the end it chose then.
void leave(link_pointer self) { close_link(self, self->state.leaving->end, ""); }

// Tells the peer how the link ends (`m`), fails what waits on the link, logs `why` when the
// end is an error, and closes once the peer has closed (or after connection_timeout).
void say_goodbye(link_pointer self, const shutdown_message& m, caf::error end, const std::string& why) {
  auto& st = self->state;
  if (st.at == stage::closed || st.leaving)
    return;
  if (end)
    log_line(st, "link to " + st.peer_name + ": " + why);
  const auto waiting = end ? end : make_error(errc::peer_down, "the link to " + st.peer_name + " closed");
  for (auto& [id, request] : st.pending)
    request.promise.deliver(waiting);
  st.pending.clear();
  st.queued.clear();
  st.leaving = link_state::goodbye{std::move(end), clock_type::now() + st.options->connection_timeout};
  try {
    write_frame(self, m);
  } catch (const std::exception&) {
    leave(self);  // the reason does not fit a frame: closing says enough
  }
}

void refuse_peer(link_pointer self, const std::string& why) {
  // The peer learns why, so its error names the reason (a raw TCP client gets a frame it can
  // ignore).
  say_goodbye(self,
              shutdown_message{("refused by " + self->state.options->name + ": " + why).substr(0, failure_message::max_text_bytes)},
              make_error(errc::bad_request, "link to " + self->state.peer_name + ": " + why), "refused: " + why);
}

// The failure a request ends with, as the frame that says so.
failure_message failure_of(std::uint64_t request, const caf::error& err) {
  return failure_message{request, troupe_code(err),
                         error_text(err).substr(0, failure_message::max_text_bytes)};
}

// Writes `message`; when the encoder refuses it, request `request` (0: none) fails with the
// encoder's complaint and a one-way message is logged. Both a request of this node and a reply
// to the peer's: the peer then learns why instead of waiting for its deadline.
void write_or_fail(link_pointer self, wire_message message, std::uint64_t request,
                   bool reply = false) {
  auto& st = self->state;
  const auto kind = message.index();
  try {
    write_frame(self, std::move(message));
    return;
  } catch (const std::exception& e) {
    const std::string problem = std::string("cannot send a ") + kind_name(kind) + ": " + e.what();
    if (reply) {
      write_frame(self, failure_message{request, errc::bad_request,
                                        problem.substr(0, failure_message::max_text_bytes)});
    } else if (auto it = st.pending.find(request); request != 0 && it != st.pending.end()) {
      it->second.promise.deliver(make_error(errc::bad_request, "link to " + st.peer_name + ": " + problem));
      st.pending.erase(it);
    } else {
      log_line(st, "link to " + st.peer_name + ": " + problem);
    }
  }
}

// Writes `message` now, or queues it until admission (see write_or_fail for `request`).
void send_or_queue(link_pointer self, wire_message message, std::uint64_t request = 0) {
  auto& st = self->state;
  if (st.at == stage::closed || st.leaving)
    return;
  if (st.at != stage::admitted)
    st.queued.emplace_back(std::move(message), request);
  else
    write_or_fail(self, std::move(message), request);
}

// This node ends the link: the peer hears why (or that the run finished) first.
void shut_down_link(link_pointer self, const shutdown_message& m) {
  say_goodbye(self, m,
              m.finished ? caf::error{}
                         : make_error(errc::peer_down, "link to " + self->state.peer_name + " shut down here: " + m.reason),
              "shut down here: " + m.reason);
}

// A request to the peer, numbered here: `make(number)` builds its message. Its answer (or
// failure, or timeout: `phase_timeout` for control, else `request_timeout`) answers the
// current request of this link.
template <class Make>
void send_request(link_pointer self, std::uint32_t index, bool control, Make make) {
  auto& st = self->state;
  if (st.leaving || st.at == stage::closed) {
    auto why = st.leaving && st.leaving->end ? st.leaving->end
                                             : make_error(errc::peer_down, "the link to " + st.peer_name + " is closing");
    self->make_response_promise().deliver(std::move(why));
    return;
  }
  const auto id = st.next_request++;
  const auto timeout = control ? st.options->phase_timeout : st.options->request_timeout;
  st.pending.emplace(id, pending_request{self->make_response_promise(), index, control,
                                         clock_type::now() + timeout});
  send_or_queue(self, make(id), id);
}

// The peer asked one of this node's shards; its answer (or failure) goes back as a frame.
template <typename... Ts>
void serve(link_pointer self, std::uint64_t request, std::uint32_t shard, Ts&&... message) {
  auto& st = self->state;
  const auto target = st.options->local_shards->find(shard);
  if (!target) {
    log_line(st, "link to " + st.peer_name + ": refused its request to shard " + std::to_string(shard)
                   + ", which this node does not hold");
    write_frame(self, failure_message{request, errc::bad_request,
                                      st.options->name + " holds no shard " + std::to_string(shard)});
    return;
  }
  self->request(target, st.options->request_timeout, std::forward<Ts>(message)...)
    .then(
      [=](weight_set& ws) {
        if (self->state.at == stage::admitted)
          write_or_fail(self, weights_message{request, shard, std::move(ws)}, request, true);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        // A request the shard refuses (a bad key, a step from the future) is the peer's
        // fault: logged here naming the peer, and the peer's request fails with the reason.
        if (troupe_code(err) == errc::bad_request)
          log_line(st, "link to " + st.peer_name + ": refused its request to shard " + std::to_string(shard)
                         + ": " + error_text(err));
        if (st.at == stage::admitted)
          write_frame(self, failure_of(request, err));
      });
}

enum class answer_kind { weights, report, failure };

// The peer answered request `request`: weights (of shard `shard`) and reports must answer the
// kind of request that was made; a failure answers any. An answer after its deadline is
// dropped: the requester already has its timeout.
void answer(link_pointer self, std::uint64_t request, answer_kind kind, std::uint32_t shard,
            caf::message result) {
  auto& st = self->state;
  auto it = st.pending.find(request);
  if (it == st.pending.end())
    return;
  const auto& asked = it->second;
  if (kind == answer_kind::weights && asked.control)
    return refuse_peer(self, "answered control request " + std::to_string(request) + " with weights");
  if (kind == answer_kind::report && !asked.control)
    return refuse_peer(self, "answered request " + std::to_string(request) + " with a report");
  if (kind == answer_kind::weights && asked.shard != shard)
    return refuse_peer(self, "answered request " + std::to_string(request) + " with shard "
                               + std::to_string(shard) + "'s weights, shard "
                               + std::to_string(asked.shard) + " was asked");
  auto promise = std::move(it->second.promise);
  st.pending.erase(it);
  promise.deliver(std::move(result));
}

// The peer's coordinator drives one of this node's compute actors.
void serve_control(link_pointer self, const control_message& m) {
  auto& st = self->state;
  const auto compute = st.options->local_computes->find(m.worker);
  if (!compute) {
    if (m.kind != control_kind::end_epoch)
      write_frame(self, failure_message{m.request, errc::bad_request,
                                        st.options->name + " holds no compute " + std::to_string(m.worker)});
    return;
  }
  if (m.kind == control_kind::end_epoch) {
    self->send(compute, end_epoch_atom::value, m.epoch);
    return;
  }
  if (auto& at = st.options->position) {
    at->epoch = m.epoch;
    at->batch = -1;
    at->validating = m.kind == control_kind::validate;
  }
  auto on_report = [=](phase_report& report) {
    if (self->state.at == stage::admitted)
      write_frame(self, report_message{m.request, report});
  };
  auto on_error = [=](caf::error& err) {
    if (self->state.at == stage::admitted)
      write_frame(self, failure_of(m.request, err));
  };
  const auto due = deadline::after(st.options->phase_timeout);
  if (m.kind == control_kind::train)
    self->request(compute, due.left_with_grace(), train_atom::value, m.epoch, due).then(on_report, on_error);
  else
    self->request(compute, due.left_with_grace(), validate_atom::value, m.epoch, due).then(on_report, on_error);
}

// Hands a node-level message to the node this link belongs to, typed; false when that node
// does not take its kind (or the link has no node).
template <class T>
bool relay_to_node(link_pointer self, T& m) {
  auto& st = self->state;
  const auto me = caf::actor_cast<caf::actor>(self);
  const auto& scheduler = st.options->scheduler_node;
  const auto& member = st.options->member_node;
  if constexpr (std::is_same_v<T, join_message>) {
    m.seen_from = st.socket->peer();  // where the node really is, whatever it says
    if (scheduler)
      return self->send(scheduler, join_atom::value, me, std::move(m)), true;
  } else if constexpr (std::is_same_v<T, ready_message>) {
    if (scheduler)
      return self->send(scheduler, ready_atom::value, me, std::move(m)), true;
  } else if constexpr (std::is_same_v<T, traffic_message>) {
    if (scheduler)
      return self->send(scheduler, traffic_atom::value, me, std::move(m)), true;
  } else if constexpr (std::is_same_v<T, assignment_message>) {
    if (member)
      return self->send(member, assignment_atom::value, me, std::move(m)), true;
  } else if constexpr (std::is_same_v<T, traffic_query_message>) {
    if (member)
      return self->send(member, traffic_query_atom::value, me, std::move(m)), true;
  }
  return false;
}

void on_admitted_message(link_pointer self, wire_message& message) {
  auto& st = self->state;
  std::visit(
    [&](auto& m) {
      using T = std::decay_t<decltype(m)>;
      if constexpr (std::is_same_v<T, push_message>) {
        m.push.due = deadline::after(st.options->request_timeout);
        serve(self, m.request, m.shard, push_atom::value, std::move(m.push));
      } else if constexpr (std::is_same_v<T, pull_message>) {
        serve(self, m.request, m.shard, pull_atom::value, deadline::after(st.options->request_timeout));
      } else if constexpr (std::is_same_v<T, weights_message>) {
        answer(self, m.request, answer_kind::weights, m.shard, caf::make_message(std::move(m.weights)));
      } else if constexpr (std::is_same_v<T, failure_message>) {
        answer(self, m.request, answer_kind::failure, 0,
               caf::make_message(make_error(m.code, st.peer_name + ": " + m.text)));
      } else if constexpr (std::is_same_v<T, heartbeat_message>) {
        // last_received is updated for every frame
      } else if constexpr (std::is_same_v<T, shutdown_message>) {
        const auto me = caf::actor_cast<caf::actor>(self);
        if (st.options->scheduler_node)
          self->send(st.options->scheduler_node, goodbye_atom::value, me, m);
        if (st.options->member_node)
          self->send(st.options->member_node, goodbye_atom::value, me, m);
        close_link(self, m.finished ? caf::error{} : make_error(errc::peer_down, st.peer_name + " shut down: " + m.reason),
                   "the peer shut down: " + m.reason);
      } else if constexpr (std::is_same_v<T, control_message>) {
        serve_control(self, m);
      } else if constexpr (std::is_same_v<T, report_message>) {
        answer(self, m.request, answer_kind::report, 0, caf::make_message(std::move(m.report)));
      } else if constexpr (std::is_same_v<T, batch_report_message>) {
        if (st.options->metrics)
          self->send(st.options->metrics, m.report);
        else
          refuse_peer(self, "sent a batch report, which this node does not take");
      } else if constexpr (std::is_same_v<T, hello_message> || std::is_same_v<T, proof_message>) {
        refuse_peer(self, std::string("sent a ") + kind_name(message) + " after admission");
      } else if (!relay_to_node(self, m)) {
        refuse_peer(self, std::string("sent a ") + kind_name(message) + ", which this node does not take");
      }
    },
    message);
}

void on_handshake_message(link_pointer self, wire_message& message) {
  auto& st = self->state;
  if (st.at == stage::await_hello) {
    auto* hello = std::get_if<hello_message>(&message);
    if (!hello)
      return refuse_peer(self, std::string("sent a ") + kind_name(message) + " before its hello");
    // A node names itself after its role ("worker (pid 42)", "worker_1"): the role is said once.
    const std::string role = to_string(hello->role);
    st.peer_name = (hello->name.rfind(role, 0) == 0 ? hello->name : role + " '" + hello->name + "'") + " at "
                   + st.peer_name;
    if (hello->plan_hash != 0 && st.mine.plan_hash != 0 && hello->plan_hash != st.mine.plan_hash)
      return refuse_peer(self, "it runs plan " + std::to_string(hello->plan_hash) + ", this node runs plan "
                                 + std::to_string(st.mine.plan_hash) + " (another config or version)");
    st.peer = *hello;
    if (st.options->traffic)
      st.options->traffic->rename(self->address(), hello->name);
    st.at = stage::await_proof;
    write_frame(self, proof_message{membership_proof(st.options->secret, st.side, st.mine, *st.peer)});
    return;
  }
  auto* proof = std::get_if<proof_message>(&message);
  if (!proof)
    return refuse_peer(self, std::string("sent a ") + kind_name(message) + " instead of its proof");
  const auto peer_side = st.side == link_side::connecting ? link_side::accepting : link_side::connecting;
  if (!proof_is_valid(st.options->secret, peer_side, *st.peer, st.mine, proof->proof))
    return refuse_peer(self, "its proof of the cluster secret is wrong");
  st.at = stage::admitted;
  if (st.options->member_node)
    self->send(st.options->member_node, link_up_atom::value, caf::actor_cast<caf::actor>(self), st.peer_name);
  auto queued = std::move(st.queued);
  st.queued.clear();
  for (auto& [message, request] : queued)
    write_or_fail(self, std::move(message), request);
}

void on_payload(link_pointer self, received_payload& in) {
  auto& st = self->state;
  if (st.at == stage::closed || st.leaving)
    return;  // after goodbye, whatever the peer still sends is dropped
  st.last_received = clock_type::now();
  auto payload = std::move(in.bytes);
  auto decoded = decode_payload(payload, st.options->keys);
  if (!decoded.ok())
    return refuse_peer(self, "undecodable frame: " + decoded.error);
  const auto kind = decoded.message.index();
  st.counters->count_in(kind, frame_header_bytes + payload->size());
  if (st.at == stage::admitted)
    on_admitted_message(self, decoded.message);
  else
    on_handshake_message(self, decoded.message);
}

void on_tick(link_pointer self) {
  auto& st = self->state;
  if (st.at == stage::closed)
    return;
  const auto now = clock_type::now();
  if (st.leaving) {
    if (now >= st.leaving->deadline)
      leave(self);
    return;
  }
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - st.last_received);
  if (silent >= st.options->connection_timeout)
    return close_link(self, make_error(errc::peer_down, "no frame from " + st.peer_name + " for "
                                                          + std::to_string(silent.count()) + " ms"),
                      "lost: no frame for " + std::to_string(silent.count()) + " ms");
  for (auto it = st.pending.begin(); it != st.pending.end();) {
    if (it->second.deadline <= now) {
      const auto& r = it->second;
      const auto waited = r.control ? st.options->phase_timeout : st.options->request_timeout;
      it->second.promise.deliver(make_error(
        errc::timeout, std::string(r.control ? "compute " : "shard ") + std::to_string(r.shard) + " on "
                         + st.peer_name + " did not answer within " + std::to_string(waited.count()) + " ms"));
      it = st.pending.erase(it);
    } else {
      ++it;
    }
  }
  if (st.at == stage::admitted && now - st.last_sent >= st.options->heartbeat_interval)
    write_frame(self, heartbeat_message{++st.heartbeats});
}

std::chrono::milliseconds tick_period(const link_options& options) {
  return std::max(std::chrono::milliseconds{1},
                  std::min({options.heartbeat_interval / 2, options.request_timeout / 4,
                            options.connection_timeout / 4}));
}

caf::behavior peer_link(link_pointer self, std::shared_ptr<frame_socket> socket, link_options options,
                        link_side side) {
  auto& st = self->state;
  st.options.emplace(std::move(options));
  st.pool = std::make_shared<receive_pool>(st.options->receive_pool_bytes);
  st.socket = std::move(socket);
  st.side = side;
  st.peer_name = st.socket->peer();
  st.last_received = st.last_sent = clock_type::now();
  if (st.options->traffic)
    st.counters = st.options->traffic->add(self->address(), st.peer_name);
  st.mine.role = st.options->role;
  st.mine.name = st.options->name;
  st.mine.challenge = fresh_nonce();
  st.mine.plan_hash = st.options->plan_hash;
  st.socket->start(caf::actor_cast<caf::actor>(self), st.options->max_frame_bytes, st.pool);
  write_frame(self, st.mine);
  const auto period = tick_period(*st.options);
  self->delayed_send(self, period, tick_atom::value);
  return {
    [=](frame_in_atom, received_payload& payload) { on_payload(self, payload); },
    [=](frame_error_atom, const std::string& why) {
      auto& st = self->state;
      if (st.at != stage::closed && !st.leaving)
        refuse_peer(self, why);
    },
    [=](socket_closed_atom, const std::string& why) {
      if (self->state.leaving)
        return leave(self);
      close_link(self, make_error(errc::peer_down, "the connection to " + self->state.peer_name + " closed"),
                 "the connection closed (" + why + ")");
    },
    [=](push_atom, std::uint32_t shard, gradient_push& push) -> caf::result<weight_set> {
      send_request(self, shard, false,
                   [&](std::uint64_t id) { return push_message{id, shard, std::move(push)}; });
      return caf::delegated<weight_set>{};
    },
    [=](pull_atom, std::uint32_t shard) -> caf::result<weight_set> {
      send_request(self, shard, false, [&](std::uint64_t id) { return pull_message{id, shard}; });
      return caf::delegated<weight_set>{};
    },
    [=](stats_atom) {
      const auto& c = *self->state.counters;
      link_traffic t;
      for (std::size_t k = 0; k < wire_kinds; ++k) {
        t.bytes_in[k] = c.bytes_in[k].load(std::memory_order_relaxed);
        t.bytes_out[k] = c.bytes_out[k].load(std::memory_order_relaxed);
        t.frames_in[k] = c.frames_in[k].load(std::memory_order_relaxed);
        t.frames_out[k] = c.frames_out[k].load(std::memory_order_relaxed);
      }
      return t;
    },
    [=](train_atom, std::uint32_t worker, std::int64_t epoch) -> caf::result<phase_report> {
      send_request(self, worker, true, [&](std::uint64_t id) {
        return control_message{id, worker, control_kind::train, epoch};
      });
      return caf::delegated<phase_report>{};
    },
    [=](validate_atom, std::uint32_t worker, std::int64_t epoch) -> caf::result<phase_report> {
      send_request(self, worker, true, [&](std::uint64_t id) {
        return control_message{id, worker, control_kind::validate, epoch};
      });
      return caf::delegated<phase_report>{};
    },
    [=](end_epoch_atom, std::uint32_t worker, std::int64_t epoch) {
      send_or_queue(self, control_message{0, worker, control_kind::end_epoch, epoch});
    },
    [=](batch_report& report) {
      if (auto& at = self->state.options->position) {
        at->batch = report.index;
        at->batches = report.batches;
      }
      // Written now, so it leaves before the answer its compute sends next.
      send_or_queue(self, batch_report_message{report});
    },
    [=](phase_report&) {
      // A metrics sink also takes the coordinator's phase reports; the coordinator lives on
      // the scheduler, beside the real metrics actor, so none arrive here.
    },
    [=](flush_atom) { return true; },
    [=](plan_atom, std::uint64_t plan_hash, wire_keys& keys) {
      self->state.options->plan_hash = plan_hash;
      self->state.options->keys = std::move(keys);
    },
    [=](send_atom, wire_message& message) {
      if (auto* end = std::get_if<shutdown_message>(&message))
        shut_down_link(self, *end);
      else
        send_or_queue(self, std::move(message));
    },
    [=](tick_atom) {
      on_tick(self);
      if (self->state.at != stage::closed)
        self->delayed_send(self, period, tick_atom::value);
    },
  };
}

using accepted_atom = caf::atom_constant<caf::atom("accepted")>;

// The links a listener accepted and that still run: they end with the listener (a node that
// stops listening leaves no connection behind), each on its own when its peer goes. Shared
// with the accepting thread.
struct accepted_links {
  std::mutex mutex;
  std::vector<caf::actor> running;
};

struct listener_state {
  std::uint16_t port = 0;
  static inline const char* name = "troupe.listener";
};

// The socket is bound before the listener exists (spawn_listener), so a port in use is the
// caller's error at once, not a listener that quits on its own later. Its accepting thread
// holds the listener (as CAF's network thread holds a broker): it runs until told to quit.
caf::behavior listener(caf::stateful_actor<listener_state>* self, std::shared_ptr<listening_socket> socket,
                       link_options options) {
  self->state.port = socket->port();
  auto links = std::make_shared<accepted_links>();
  self->attach_functor([socket, links](const caf::error&) {
    socket->stop();  // no link is added after this
    std::lock_guard<std::mutex> lock(links->mutex);
    for (auto& link : links->running)
      caf::anon_send_exit(link, caf::exit_reason::user_shutdown);
    links->running.clear();
  });
  self->set_down_handler([=](caf::down_msg& down) {
    std::lock_guard<std::mutex> lock(links->mutex);
    auto& all = links->running;
    all.erase(std::remove_if(all.begin(), all.end(), [&](const caf::actor& a) { return a.address() == down.source; }),
              all.end());
  });
  auto& system = self->system();
  socket->start([&system, links, options = std::move(options),
                 me = caf::actor_cast<caf::actor>(self)](std::shared_ptr<frame_socket> connection) {
    auto link = system.spawn(peer_link, std::move(connection), options, link_side::accepting);
    {
      std::lock_guard<std::mutex> lock(links->mutex);
      links->running.push_back(link);
    }
    caf::anon_send(me, accepted_atom::value, link);
  });
  return {
    [=](accepted_atom, const caf::actor& link) { self->monitor(link); },
    [=](port_atom) { return self->state.port; },
  };
}

} // namespace

std::uint64_t link_traffic::total_in() const {
  return std::accumulate(bytes_in.begin(), bytes_in.end(), std::uint64_t{0});
}

std::uint64_t link_traffic::total_out() const {
  return std::accumulate(bytes_out.begin(), bytes_out.end(), std::uint64_t{0});
}

caf::expected<caf::actor> connect_link(caf::actor_system& system, const std::string& host,
                                       std::uint16_t port, link_options options) {
  auto socket = frame_socket::connect(host, port, options.connection_timeout);
  if (!socket)
    return std::move(socket.error());
  return system.spawn(peer_link, std::move(*socket), std::move(options), link_side::connecting);
}

caf::expected<caf::actor> spawn_listener(caf::actor_system& system, const std::string& host,
                                         std::uint16_t port, link_options options) {
  auto socket = listening_socket::bind(host, port);
  if (!socket)
    return std::move(socket.error());
  return system.spawn(listener, std::shared_ptr<listening_socket>(std::move(*socket)), std::move(options));
}

} // namespace troupe
