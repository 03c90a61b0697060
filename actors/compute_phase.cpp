// A compute actor's phase: its start (a phase asked again is answered once), its end or
// failure, the requests it waits on and the watchdog that fails it when one is not answered
// (see "Liveness" in compute_actor.hpp), and the peers it watches.
#include "actors/compute_state.hpp"

#include <algorithm>

namespace troupe::compute_parts {

void arm_watchdog(compute_pointer self) {
  auto& st = self->state;
  if (st.watchdog_armed)
    return;
  st.watchdog_armed = true;
  self->delayed_send(self, std::max<caf::timespan>(st.wiring.timeouts.step / 4, caf::timespan{1}),
                     watchdog_atom::value);
}

// The deadline of a request made now: a step's worth (timeouts.hpp), never past the phase's.
deadline request_due(const compute_state& st) {
  return deadline::earlier(deadline::after(st.wiring.timeouts.step), st.phase_due);
}

// Registers a request about to be sent with deadline `due` (see "Liveness" in the header); its
// handlers call `answered` with the number returned.
std::uint64_t expect_answer(compute_pointer self, std::string what, deadline due) {
  auto& st = self->state;
  const auto id = st.requests_made++;
  st.pending.emplace(id, compute_state::pending_request{std::move(what), clock_type::now(), due});
  arm_watchdog(self);
  return id;
}

void answered(compute_pointer self, std::uint64_t id) {
  self->state.pending.erase(id);
}

void finish_phase(compute_pointer self) {
  auto& st = self->state;
  st.phase.seconds = std::chrono::duration<double>(clock_type::now() - st.phase_start).count();
  st.busy = false;
  (st.phase.validation ? st.validated : st.trained) = st.phase;
  for (auto& answer : st.answers)
    answer.deliver(st.phase);
  st.answers.clear();
}

void fail_phase(compute_pointer self, const caf::error& err) {
  auto& st = self->state;
  st.pending.clear(); // answers still in flight belong to the failed phase: the next phase
                      // must not time out on them
  if (!st.busy)
    return; // a second failure of the same phase: the first one was answered
  st.busy = false;
  st.fetched.reset();
  for (auto& answer : st.answers)
    answer.deliver(err);
  st.answers.clear();
}

// Puts one shard's answered weights into the replica: whole keys by handle, slices by copy.
std::string install(compute_state& st, const shard_route& route, weight_set& ws) {
  if (ws.keys.size() != ws.weights.size())
    return "compute: shard answered " + std::to_string(ws.weights.size()) + " weights for "
           + std::to_string(ws.keys.size()) + " keys";
  auto& params = st.replica->parameters();
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
    if (st.on_gpu)
      key_view(value, key).copy_from(ws.weights[i]); // into the replica's device memory
    else
      place_key(value, key, std::move(ws.weights[i]));
  }
  st.learning_rate = ws.learning_rate;
  return {};
}

// Fails the phase once a request is answer_grace past its deadline (the hop that gave up on
// it at the deadline has had that long to say which it was); re-arms while any is pending.
void check_pending(compute_pointer self) {
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
      "compute " + std::to_string(st.wiring.worker) + ": no answer for " + ms(now - request.asked)
        + " ms, waiting for " + request.what + " (timeout "
        + std::to_string(
          std::chrono::round<std::chrono::milliseconds>(request.due.at - request.asked).count())
        + " ms)");
    return fail_phase(self, err); // forgets the other requests too
  }
  arm_watchdog(self);
}

// Common start of a phase; returns false (and answers with an error) if one is running.
bool begin_phase(compute_pointer self, std::int64_t epoch, bool validation, deadline due) {
  auto& st = self->state;
  // The phase in flight, or the last one of its kind, asked again: a scheduler restarted
  // while it ran (docs/operations.md) gets the same answer, and nothing runs twice.
  if (st.busy && st.phase.epoch == epoch && st.phase.validation == validation) {
    st.answers.push_back(self->make_response_promise<phase_report>());
    return false;
  }
  if (const auto& done = validation ? st.validated : st.trained;
      !st.busy && done && done->epoch == epoch) {
    self->make_response_promise<phase_report>().deliver(*done);
    return false;
  }
  if (st.busy) {
    self->make_response_promise<phase_report>().deliver(
      make_error(errc::bad_request, "compute: a phase is already running"));
    return false;
  }
  if (!validation)
    st.latest_train_epoch = std::max(st.latest_train_epoch, epoch);
  st.answers.assign(1, self->make_response_promise<phase_report>());
  st.busy = true;
  st.end_requested = false;
  st.phase = phase_report{};
  ++st.phases_begun;
  st.fetching = false;
  st.fetched.reset();
  st.between_steps = false;
  st.phase.epoch = epoch;
  st.phase.validation = validation;
  st.phase.top_k = st.replica->top_k();
  st.phase_start = clock_type::now();
  st.phase_due = due;
  return true;
}

// Which of the actors this one waits on `source` is, for the error text ("" if none).
std::string peer_name(const compute_state& st, const caf::actor_addr& source) {
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

void watch_peers(compute_pointer self) {
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
      make_error(errc::peer_down, "compute " + std::to_string(self->state.wiring.worker) + ": "
                                    + peer + " terminated (" + caf::to_string(msg.reason) + ")");
    fail_phase(self, err);
    self->quit(err);
  });
}

} // namespace troupe::compute_parts
