// A compute's phase, for the compute actor and the compute stand-in alike (compute_phase.hpp):
// its start (a phase asked again is answered once), its end or failure, the requests it waits
// on and the watchdog that fails it when one is not answered (see "Liveness" in
// compute_actor.hpp), the peers it watches, the weights it installs or pulls, and the replica's
// state for a checkpoint. The templates are instantiated at the end for both actors.
#include "actors/compute_phase.hpp"

#include <algorithm>

#include <troupe/graph/model_state.hpp>

#include "actors/compute_stand_in_state.hpp"
#include "actors/compute_state.hpp"

namespace troupe::compute_parts {

template <class Self> void arm_watchdog(Self self) {
  auto& st = self->state;
  if (st.watchdog_armed)
    return;
  st.watchdog_armed = true;
  self->delayed_send(self, std::max<caf::timespan>(st.wiring.timeouts.step / 4, caf::timespan{1}),
                     watchdog_atom::value);
}

deadline request_due(const phase_core& st) {
  return deadline::earlier(deadline::after(st.wiring.timeouts.step), st.phase_due);
}

template <class Self> std::uint64_t expect_answer(Self self, std::string what, deadline due) {
  auto& st = self->state;
  const auto id = st.requests_made++;
  st.pending.emplace(id, phase_core::pending_request{std::move(what), clock_type::now(), due});
  arm_watchdog(self);
  return id;
}

void answered(phase_core& st, std::uint64_t id) {
  st.pending.erase(id);
}

void finish_phase(phase_core& st) {
  st.phase.seconds = std::chrono::duration<double>(clock_type::now() - st.phase_start).count();
  st.busy = false;
  (st.phase.validation ? st.validated : st.trained) = st.phase;
  for (auto& answer : st.answers)
    answer.deliver(st.phase);
  st.answers.clear();
}

template <class Self> void fail_phase(Self self, const caf::error& err) {
  auto& st = self->state;
  st.pending.clear(); // answers still in flight belong to the failed phase: the next phase
                      // must not time out on them
  if (!st.busy)
    return; // a second failure of the same phase: the first one was answered
  st.busy = false;
  st.drop_step();
  for (auto& answer : st.answers)
    answer.deliver(err);
  st.answers.clear();
}

// Puts one shard's answered weights into the replica: whole keys by handle, slices by copy (on
// a GPU every key by copy, into the replica's device memory).
std::string install(phase_core& st, const shard_route& route, weight_set& ws) {
  if (ws.keys.size() != ws.weights.size())
    return "compute: shard answered " + std::to_string(ws.weights.size()) + " weights for "
           + std::to_string(ws.keys.size()) + " keys";
  auto& params = st.replica->parameters();
  const bool on_device = st.replica->device().kind != device_kind::cpu;
  for (std::size_t i = 0; i < ws.keys.size(); ++i) {
    if (ws.keys[i] >= route.keys.size())
      return "compute: shard answered key " + std::to_string(ws.keys[i]) + ", it owns "
             + std::to_string(route.keys.size());
    const auto& key = route.keys[ws.keys[i]];
    auto& value = params[key.slot]->value;
    if (ws.weights[i].numel() != key.length)
      return "compute: shard answered " + std::to_string(ws.weights[i].numel())
             + " elements for key " + key_name(params[key.slot]->name, key) + " of "
             + std::to_string(key.length);
    if (key.whole && ws.weights[i].shape() != value.shape())
      return "compute: shard answered shape " + shape_string(ws.weights[i].shape()) + " for "
             + params[key.slot]->name + " of shape " + shape_string(value.shape());
    if (on_device)
      key_view(value, key).copy_from(ws.weights[i]);
    else
      place_key(value, key, std::move(ws.weights[i]));
  }
  st.learning_rate = ws.learning_rate;
  st.values_pushed += ws.values_pushed;
  st.values_sent += ws.values_sent;
  return {};
}

// Fails the phase once a request is answer_grace past its deadline (the hop that gave up on
// it at the deadline has had that long to say which it was); re-arms while any is pending.
template <class Self> void check_pending(Self self) {
  auto& st = self->state;
  st.watchdog_armed = false;
  if (st.pending.empty())
    return; // the next request arms it again
  const auto now = clock_type::now();
  for (const auto& [id, request] : st.pending) {
    if (request.due.at == deadline::clock::time_point::max() || now < request.due.at + answer_grace)
      continue;
    auto ms = [](auto d) {
      return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    auto err = make_error(
      errc::timeout,
      "compute " + std::to_string(st.wiring.rank) + ": no answer for " + ms(now - request.asked)
        + " ms, waiting for " + request.what + " (timeout "
        + std::to_string(
          std::chrono::round<std::chrono::milliseconds>(request.due.at - request.asked).count())
        + " ms)");
    return fail_phase(self, err); // forgets the other requests too
  }
  arm_watchdog(self);
}

template <class Self>
bool begin_phase(Self self, std::int64_t epoch, bool validation, deadline due) {
  auto& st = self->state;
  // The phase in flight, or the last one of its kind, asked again: a scheduler restarted
  // while it ran (docs/operations.md) gets the same answer, and nothing runs twice.
  if (st.busy && st.phase.epoch == epoch && st.phase.validation == validation) {
    st.answers.push_back(self->template make_response_promise<phase_report>());
    return false;
  }
  if (const auto& done = validation ? st.validated : st.trained;
      !st.busy && done && done->epoch == epoch) {
    self->template make_response_promise<phase_report>().deliver(*done);
    return false;
  }
  if (st.busy) {
    self->template make_response_promise<phase_report>().deliver(
      make_error(errc::bad_request, "compute: a phase is already running"));
    return false;
  }
  if (!validation)
    st.latest_train_epoch = std::max(st.latest_train_epoch, epoch);
  st.answers.assign(1, self->template make_response_promise<phase_report>());
  st.busy = true;
  st.end_requested = false;
  st.phase = phase_report{};
  ++st.phases_begun;
  st.drop_step();
  st.phase.epoch = epoch;
  st.phase.validation = validation;
  st.phase.top_k = st.replica->top_k();
  st.phase_start = clock_type::now();
  st.phase_due = due;
  return true;
}

void request_end(phase_core& st, std::int64_t epoch) {
  if (st.busy && !st.phase.validation && st.phase.epoch == epoch)
    st.end_requested = true;
}

// Which of the actors this one waits on `source` is, for the error text ("" if none).
std::string peer_name(const phase_core& st, const caf::actor_addr& source) {
  if (source == st.wiring.train_loader.address())
    return "its training loader";
  if (source == st.wiring.validation_loader.address())
    return "the validation loader";
  if (st.wiring.metrics && source == st.wiring.metrics.address())
    return "the metrics sink";
  for (std::size_t r = 0; r < st.wiring.shards.size(); ++r)
    if (source == st.wiring.shards[r].shard.address())
      return "the actor on its route " + std::to_string(r);
  return {};
}

template <class Self> void watch_peers(Self self) {
  auto& w = self->state.wiring;
  self->monitor(w.train_loader);
  self->monitor(w.validation_loader);
  if (w.metrics)
    self->monitor(w.metrics);
  for (auto& route : w.shards)
    self->monitor(route.shard);
  self->set_down_handler([=](caf::down_msg& msg) {
    auto peer = peer_name(self->state, msg.source);
    if (peer.empty())
      return;
    auto err =
      make_error(errc::peer_down, "compute " + std::to_string(self->state.wiring.rank) + ": " + peer
                                    + " terminated (" + caf::to_string(msg.reason) + ")");
    fail_phase(self, err);
    self->quit(err);
  });
}

template <class Self> void pull_all(Self self, std::function<void()> then) {
  self->state.answers_missing = self->state.wiring.shards.size();
  const auto due = request_due(self->state);
  for (std::size_t r = 0; r < self->state.wiring.shards.size(); ++r)
    ask(self, r, due, nullptr, then, pull_atom::value, due);
}

caf::result<replica_state> snapshot_replica(phase_core& st) {
  if (st.busy)
    return make_error(errc::bad_request, "compute: snapshot asked while a phase is running");
  try {
    return capture_replica_state(*st.replica);
  } catch (const std::exception& e) {
    return make_error(classify_exception(e), std::string("compute: snapshot: ") + e.what());
  }
}

caf::result<bool> restore_replica(phase_core& st, const replica_state& state) {
  if (st.busy)
    return make_error(errc::bad_request, "compute: restore asked while a phase is running");
  try {
    restore_replica_state(*st.replica, state);
  } catch (const std::exception& e) {
    return make_error(errc::bad_request,
                      "compute " + std::to_string(st.wiring.rank) + ": restore: " + e.what());
  }
  return true;
}

// The compute actor's and the compute stand-in's instances of the templates above.
template std::uint64_t expect_answer(compute_pointer, std::string, deadline);
template std::uint64_t expect_answer(stand_in_pointer, std::string, deadline);
template bool begin_phase(compute_pointer, std::int64_t, bool, deadline);
template bool begin_phase(stand_in_pointer, std::int64_t, bool, deadline);
template void fail_phase(compute_pointer, const caf::error&);
template void fail_phase(stand_in_pointer, const caf::error&);
template void check_pending(compute_pointer);
template void check_pending(stand_in_pointer);
template void watch_peers(compute_pointer);
template void watch_peers(stand_in_pointer);
template void pull_all(compute_pointer, std::function<void()>);
template void pull_all(stand_in_pointer, std::function<void()>);

} // namespace troupe::compute_parts
