// What the compute actor (compute_state.hpp) and the compute stand-in (compute_stand_in_state.hpp)
// share, once: the state of their phases (phase_core, which both states derive from) and the
// functions over it (compute_phase.cpp): a phase's start, end and failure, the requests it waits
// on and the watchdog that fails it when one goes unanswered ("Liveness" in compute_actor.hpp),
// the weights a shard answers, a push group's message, the pull of every route's weights, and
// the replica's state for a checkpoint. A function that sends or answers takes either actor's
// self pointer: compute_phase.cpp instantiates it for both. Private to actors/.
//
// A state deriving from phase_core provides `void drop_step()`: it lets go of what its step
// had under way (a batch fetched ahead) when a phase begins or fails.
#pragma once

#include <troupe/actors/compute_actor.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>

namespace troupe::compute_parts {

using clock_type = std::chrono::steady_clock;

// What one training step's pushes share; the keys and gradients differ per group.
struct step_header {
  std::int64_t step = 0;
  double epoch_position = 0;
  std::int64_t samples = 0;
};

struct phase_core {
  std::shared_ptr<model> replica;
  compute_wiring wiring;
  // Every request for the phase in flight: the one that began it, and the same phase asked
  // again (by a scheduler restarted while it ran).
  std::vector<caf::typed_response_promise<phase_report>> answers;
  phase_report phase;
  // The last finished training and validation phase, answered again when asked again.
  std::optional<phase_report> trained, validated;
  std::int64_t latest_train_epoch = -1; // the latest epoch this compute was asked to train
  clock_type::time_point phase_start;
  deadline phase_due; // the coordinator's deadline for the phase in flight
  float learning_rate = 0;
  // What compressed pushes answered since the last batch report carried and sent non-zero
  // (weight_set::values_pushed), for the next report.
  std::int64_t values_pushed = 0, values_sent = 0;
  bool have_weights = false;
  bool busy = false;
  std::uint64_t phases_begun = 0;  // names the phase an answer was asked for
  bool end_requested = false;      // the coordinator ended this training epoch early
  step_header header;              // the step in flight
  std::size_t answers_missing = 0; // groups (or routes, for a pull) whose weights are not back
  // requests in flight, by a number of this actor's: what each waits for, since when, until when
  struct pending_request {
    std::string what;
    clock_type::time_point asked;
    deadline due;
  };
  std::map<std::uint64_t, pending_request> pending;
  std::uint64_t requests_made = 0;
  bool watchdog_armed = false;
};

/// The deadline of a request made now: a step's worth (timeouts.hpp), never past the phase's.
deadline request_due(const phase_core& st);
/// Registers a request about to be sent with deadline `due`; its handlers call `answered`.
template <class Self> std::uint64_t expect_answer(Self self, std::string what, deadline due);
void answered(phase_core& st, std::uint64_t id);
/// Common start of a phase; returns false (and answers) if one is running or it ran already.
template <class Self>
bool begin_phase(Self self, std::int64_t epoch, bool validation, deadline due);
void finish_phase(phase_core& st);
template <class Self> void fail_phase(Self self, const caf::error& err);
/// Fails the phase once a request is answer_grace past its deadline (the watchdog's tick).
template <class Self> void check_pending(Self self);
/// Monitors the loaders, the routes' actors and the metrics sink: one going down fails the
/// phase and ends the actor.
template <class Self> void watch_peers(Self self);
/// The coordinator ends training epoch `epoch` after the step in flight.
void request_end(phase_core& st, std::int64_t epoch);
/// Puts one shard's answered weights into the replica; a text naming what is wrong, else "".
std::string install(phase_core& st, const shard_route& route, weight_set& ws);
/// Every route's current weights, installed; then `then`.
template <class Self> void pull_all(Self self, std::function<void()> then);
/// The replica's own state for a checkpoint (model_state.hpp), only between phases.
caf::result<replica_state> snapshot_replica(phase_core& st);
caf::result<bool> restore_replica(phase_core& st, const replica_state& state);

// Sends `message` to `to` as a request the watchdog watches until `due` (what it waits for
// is `what`). `on_answer` runs only while the phase that asked is still running; answers to a
// failed phase are dropped. An error fails the phase that asked.
template <typename Answer, typename Self, typename Handle, typename OnAnswer, typename... Ts>
void watched_request(Self self, const Handle& to, std::string what, deadline due,
                     OnAnswer on_answer, Ts&&... message) {
  const auto phase = self->state.phases_begun;
  const auto id = expect_answer(self, what, due);
  self->request(to, caf::infinite, std::forward<Ts>(message)...)
    .then(
      [=](Answer& answer) mutable {
        answered(self->state, id);
        if (self->state.busy && phase == self->state.phases_begun)
          on_answer(answer);
      },
      [=](caf::error& err) {
        answered(self->state, id);
        if (phase != self->state.phases_begun)
          return;
        // A request that reached an actor just terminating (or passed on to one, as a tap
        // does) comes back as CAF's bare request_receiver_down: say what was asked.
        if (err == caf::sec::request_receiver_down)
          return fail_phase(
            self, make_error(errc::peer_down, "compute " + std::to_string(self->state.wiring.rank)
                                                + ": the actor asked for " + what + " terminated"));
        fail_phase(self, err);
      });
}

// Sends `request` (due at `due`) to route r and installs the weights it answers; runs `each`
// (if any) after installing them and `then` after the last outstanding answer of the step.
template <typename Self, typename... Ts>
void ask(Self self, std::size_t r, deadline due, std::function<void()> each,
         std::function<void()> then, Ts&&... message) {
  watched_request<weight_set>(
    self, self->state.wiring.shards[r].shard, "the weights of route " + std::to_string(r), due,
    [=](weight_set& ws) {
      auto& s = self->state;
      if (auto problem = install(s, s.wiring.shards[r], ws); !problem.empty())
        return fail_phase(self, make_error(errc::bad_request, problem));
      if (each)
        each();
      if (--s.answers_missing == 0)
        then();
    },
    std::forward<Ts>(message)...);
}

// The push of group g in the step in flight: its keys' views of `gradient_of(slot)`, due a
// step's worth from now.
template <typename GradientOf>
gradient_push group_push(const phase_core& st, std::size_t g, GradientOf&& gradient_of) {
  const auto& group = st.wiring.groups[g];
  const auto& route = st.wiring.shards[group.shard];
  gradient_push push;
  push.step = st.header.step;
  push.epoch_position = st.header.epoch_position;
  push.samples = st.header.samples;
  push.source = route.source_index;
  push.keys = group.keys;
  push.due = request_due(st);
  push.gradients = group_gradients(route, group, std::forward<GradientOf>(gradient_of));
  return push;
}

} // namespace troupe::compute_parts
