// The compute actor's state and the pieces its files share (compute_actor.cpp: training,
// validation and the behaviour; compute_phase.cpp: a phase's bookkeeping and its watchdog;
// compute_stand_in_steps.cpp: the compute stand-in's timed steps; compute_rewind.cpp: an
// adopted compute's first weights; compute_wiring.cpp: the checks of its wiring). Private to
// actors/.
#pragma once

#include <troupe/actors/compute_actor.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/stand_in_gradients.hpp>
#include <troupe/actors/stand_in_timing.hpp>

namespace troupe::compute_parts {

using clock_type = std::chrono::steady_clock;

// What one training step's pushes share; the keys and gradients differ per group.
struct step_header {
  std::int64_t step = 0;
  double epoch_position = 0;
  std::int64_t samples = 0;
};

struct compute_state {
  std::shared_ptr<model> replica;
  compute_wiring wiring;
  push_tracker tracker; // which groups backward has completed this step
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
  bool have_weights = false;
  std::int64_t resume_from = 0; // adopted: the first step to train (the step in flight)
  bool busy = false;
  std::uint64_t phases_begun = 0; // names the phase a loader answer was asked for
  bool end_requested = false;     // the coordinator ended this training epoch early
  // the step in flight
  step_header header;
  std::size_t answers_missing = 0; // groups whose weights have not come back
  std::vector<std::size_t> unsent; // groups held back until backward ends (no overlap)
  // the training batch after it
  bool fetching = false;              // a request to the training loader is in flight
  std::optional<loader_item> fetched; // its answer, until the step in flight is done
  bool between_steps = false;         // the last step is done; waiting for `fetched`
  // requests in flight, by a number of this actor's: what each waits for, since when, until when
  struct pending_request {
    std::string what;
    clock_type::time_point asked;
    deadline due;
  };
  std::map<std::uint64_t, pending_request> pending;
  std::uint64_t requests_made = 0;
  bool watchdog_armed = false;
  // A replica on a GPU: each slot's gradient copied to the host, where the pushes read it
  bool on_gpu = false;
  std::vector<tensor> host_gradients;
  // A stand-in (compute_stand_in): its gradients, and the index in the epoch of its next step
  compute_stand_in stand_in;
  stand_in_gradients stand_in_values;
  stand_in_timing stand_in_times;
  std::int64_t stand_in_index = 0;
  // Its forward, one segment per push group in forward order (see "Stand-in" in the header):
  // since when each group's weights of the previous step are installed (not_yet: not), the
  // next segment, whether a segment's timer runs, and whether the phase has no step left (it
  // ends once all answered). Its times are the device's, not the actor's: `mark` is when the
  // last segment (or the last step's backward) ended on the device, and `segment_end` when the
  // running one will, so a timer that fires late does not make the next segment later.
  static constexpr auto not_yet = caf::actor_clock::time_point::max();
  std::vector<caf::actor_clock::time_point> stand_in_ready;
  caf::actor_clock::time_point stand_in_mark;
  caf::actor_clock::time_point stand_in_segment_end;
  std::size_t stand_in_segment = 0;
  bool stand_in_timer = false;
  bool stand_in_backward = false;
  bool stand_in_ended = false;
  static inline const char* name = "compute";
};

// The spawned actor: the public protocol plus the messages it sends only itself. Handles given
// out are local_compute_actor (or compute_actor), which lack these.
// A stand-in's timers: (phase, step, group) is due to be pushed; (phase, step, segment) of
// the forward is done.
using stand_in_atom = caf::atom_constant<caf::atom("standin")>;
using stand_in_forward_atom = caf::atom_constant<caf::atom("standinfw")>;

using compute_self_actor = local_compute_actor::extend<
  caf::reacts_to<watchdog_atom>,
  caf::reacts_to<stand_in_atom, std::uint64_t, std::int64_t, std::size_t>,
  caf::reacts_to<stand_in_forward_atom, std::uint64_t, std::int64_t, std::size_t>>;
using compute_pointer = compute_self_actor::stateful_pointer<compute_state>;

// A phase's bookkeeping (compute_phase.cpp).
void arm_watchdog(compute_pointer self);
/// The deadline of a request made now: a step's worth (timeouts.hpp), never past the phase's.
deadline request_due(const compute_state& st);
std::uint64_t expect_answer(compute_pointer self, std::string what, deadline due);
void answered(compute_pointer self, std::uint64_t id);
void finish_phase(compute_pointer self);
void fail_phase(compute_pointer self, const caf::error& err);
/// Puts one shard's answered weights into the replica; a text naming what is wrong, else "".
std::string install(compute_state& st, const shard_route& route, weight_set& ws);
/// Fails the phase once a request is answer_grace past its deadline.
void check_pending(compute_pointer self);
/// Common start of a phase; returns false (and answers) if one is running.
bool begin_phase(compute_pointer self, std::int64_t epoch, bool validation, deadline due);
void watch_peers(compute_pointer self);

// Training (compute_actor.cpp).
void send_group(compute_pointer self, std::size_t g);
void step_answered(compute_pointer self);
void next_training_batch(compute_pointer self);

// The compute stand-in (compute_stand_in_steps.cpp).
/// Its gradients and timing, from the replica's shapes and work.
void set_up_stand_in(compute_state& st);
/// A training phase of the stand-in: pulls the weights first when it has none.
void train_stand_in(compute_pointer self);
void stand_in_forward(compute_pointer self);
void stand_in_segment_done(compute_pointer self, std::uint64_t phase, std::int64_t step,
                           std::size_t k);
void stand_in_group_due(compute_pointer self, std::uint64_t phase, std::int64_t step,
                        std::size_t g);

// Weights without a push (compute_rewind.cpp).
void pull_all(compute_pointer self, std::function<void()> then);
void rewind_all(compute_pointer self, std::function<void()> then);

// The wiring's checks (compute_wiring.cpp).
void check_wiring(model& replica, const compute_wiring& wiring);

// Sends `message` to `to` as a request the watchdog watches until `due` (what it waits for
// is `what`). `on_answer` runs only while the phase that asked is still running; answers to a
// failed phase are dropped. An error fails the phase that asked.
template <typename Answer, typename Handle, typename OnAnswer, typename... Ts>
void watched_request(compute_pointer self, const Handle& to, std::string what, deadline due,
                     OnAnswer on_answer, Ts&&... message) {
  const auto phase = self->state.phases_begun;
  const auto id = expect_answer(self, what, due);
  self->request(to, caf::infinite, std::forward<Ts>(message)...)
    .then(
      [=](Answer& answer) mutable {
        answered(self, id);
        if (self->state.busy && phase == self->state.phases_begun)
          on_answer(answer);
      },
      [=](caf::error& err) {
        answered(self, id);
        if (phase != self->state.phases_begun)
          return;
        // A request that reached an actor just terminating (or passed on to one, as a tap
        // does) comes back as CAF's bare request_receiver_down: say what was asked.
        if (err == caf::sec::request_receiver_down)
          return fail_phase(
            self, make_error(errc::peer_down, "compute " + std::to_string(self->state.wiring.worker)
                                                + ": the actor asked for " + what + " terminated"));
        fail_phase(self, err);
      });
}

// Sends `request` (due at `due`) to route r and installs the weights it answers; runs `each`
// (if any) after installing them and `then` after the last outstanding answer of the step.
template <typename... Ts>
void ask(compute_pointer self, std::size_t r, deadline due, std::function<void()> each,
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

} // namespace troupe::compute_parts
