// Implementation notes: every continuation is a non-blocking `request(...).then(...)`, so the
// actor never parks a scheduler thread while waiting for a loader or a shard. Pushes sent from
// inside backward (the model's gradient-ready callback) leave at once: CAF enqueues a message
// in the receiver's mailbox when it is sent, and the receiver runs on another scheduler thread
// while this actor finishes backward. Their answers are handled after train_step returns, so
// weights never change under a running backward.
//
// Training asks the loader for batch i + 1 as soon as step i's forward and backward are done,
// so the batch is in the mailbox when the step's last weights arrive: the loader's round trip
// (two thread wake-ups) is off the step's critical path, and the loader builds its next batch
// while the weights come back rather than beside the step's computation (on a machine whose
// cores all run the step, that would stall the step's threads). At most one such request is
// in flight, and a phase ends only once it is answered, so every answer belongs to the phase
// that asked (the loader learns of the next epoch only when the next phase starts). An epoch
// ended early drops the batch fetched ahead, as it would have skipped it.
#include <troupe/actors/compute_actor.hpp>

#include <troupe/kernels/threading.hpp>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/stand_in_gradients.hpp>
#include <troupe/actors/stand_in_timing.hpp>
#include <troupe/graph/model_state.hpp>

namespace troupe {

namespace {

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

void next_training_batch(compute_pointer self);
void fetch_training_batch(compute_pointer self);
void next_stand_in_step(compute_pointer self);
void stand_in_forward(compute_pointer self);

// Every group of the step answered: the next step (a stand-in's forward has gone on group by
// group already; it ends the phase here when no step is left).
void step_answered(compute_pointer self) {
  auto& st = self->state;
  if (!st.stand_in.active())
    next_training_batch(self);
  else if (st.stand_in_ended)
    finish_phase(self);
}

void send_group(compute_pointer self, std::size_t g) {
  auto& st = self->state;
  const auto& group = st.wiring.groups[g];
  const auto& route = st.wiring.shards[group.shard];
  auto& params = st.replica->parameters();
  gradient_push push;
  push.step = st.header.step;
  push.epoch_position = st.header.epoch_position;
  push.samples = st.header.samples;
  push.worker = route.source_index;
  push.keys = group.keys;
  push.due = request_due(st);
  push.gradients = group_gradients(route, group, [&](std::size_t slot) {
    if (st.stand_in.active())
      return st.stand_in_values.gradient(slot, st.header.step);
    return st.on_gpu ? st.host_gradients[slot] : params[slot]->grad;
  });
  const auto due = push.due;
  std::function<void()> each;
  if (st.stand_in.active())
    each = [=] { // this group's layers are current: the forward waiting on them goes on
      self->state.stand_in_ready[g] = self->clock().now();
      stand_in_forward(self);
    };
  ask(
    self, group.shard, due, std::move(each), [=] { step_answered(self); }, push_atom::value,
    std::move(push));
}

void send_unsent(compute_pointer self) {
  auto groups = std::move(self->state.unsent);
  self->state.unsent.clear();
  for (auto g : groups)
    send_group(self, g);
}

// A GPU replica's gradient leaves the device once, as soon as it is final: one copy into the
// slot's host buffer, which the step's pushes then view. The buffer is reused while no push
// of an earlier step still holds it (the shard has summed it), else replaced.
void stage_gradient(compute_state& st, std::size_t slot) {
  const auto& grad = st.replica->parameters()[slot]->grad;
  auto& host = st.host_gradients[slot];
  if (!host.unique() || host.shape() != grad.shape())
    host = tensor::uninitialized(grad.shape());
  host.copy_from(grad);
}

void on_gradient_ready(compute_pointer self, std::size_t slot) {
  auto& st = self->state;
  if (st.on_gpu && slot < st.host_gradients.size())
    stage_gradient(st, slot);
  st.tracker.slot_ready(slot, [&](std::size_t g) {
    if (st.wiring.overlap)
      send_group(self, g);
    else
      st.unsent.push_back(g);
  });
}

void on_training_batch(compute_pointer self, loader_item& item) {
  auto& st = self->state;
  if (item.end)
    return finish_phase(self);
  st.header.samples = static_cast<std::int64_t>(item.data.labels.size());
  st.header.step = item.data.epoch * st.wiring.batches_per_epoch + item.data.index;
  st.header.epoch_position =
    static_cast<double>(item.data.epoch)
    + static_cast<double>(item.data.index)
        / static_cast<double>(std::max<std::int64_t>(1, st.wiring.batches_per_epoch));
  st.tracker.start_step();
  st.answers_missing = st.wiring.groups.size();
  st.unsent.clear();
  loss_result loss;
  const auto step_start = clock_type::now();
  try {
    loss = st.replica->train_step(item.data.images, item.data.labels,
                                  [self](std::size_t slot) { on_gradient_ready(self, slot); });
  } catch (const std::exception& e) {
    return fail_phase(self, make_error(classify_exception(e), std::string("compute: ") + e.what()));
  }
  st.phase.step_seconds += std::chrono::duration<double>(clock_type::now() - step_start).count();
  // Training on from a NaN or infinite loss only spreads it into every weight: the run stops
  // here, saying where, rather than ending "successfully" with garbage.
  if (!std::isfinite(loss.loss_sum))
    return fail_phase(
      self, make_error(errc::bad_data, "the training loss became "
                                         + std::string(std::isnan(loss.loss_sum) ? "nan" : "inf")
                                         + " in epoch " + std::to_string(item.data.epoch)
                                         + ", batch " + std::to_string(item.data.index + 1)
                                         + " (a learning rate too high for the model? try a "
                                           "lower --lr or a longer --warmup-epochs)"));
  fetch_training_batch(self); // batch i + 1 travels while step i's weights come back
  st.phase.samples += loss.count;
  st.phase.correct += loss.correct;
  st.phase.top_k_correct += loss.top_k_correct;
  st.phase.loss_sum += loss.loss_sum;
  st.phase.skipped += item.data.skipped;
  if (st.wiring.metrics)
    self->send(st.wiring.metrics,
               batch_report{st.wiring.worker, item.data.epoch, item.data.index,
                            st.wiring.batches_per_epoch, loss.count, loss.correct, loss.loss_sum,
                            st.learning_rate, st.replica->top_k(), loss.top_k_correct});
  if (!st.unsent.empty())
    send_unsent(self);
}

// Runs once the previous step is done (or at the start of the phase): starts the next step
// with the batch fetched ahead, or waits for it.
void next_training_batch(compute_pointer self) {
  auto& st = self->state;
  if (st.end_requested && !st.fetching) {
    st.fetched.reset(); // the epoch ends early: the batch fetched ahead is skipped
    return finish_phase(self);
  }
  if (!st.fetched) {
    st.between_steps = true;
    if (!st.fetching)
      fetch_training_batch(self);
    return;
  }
  st.between_steps = false;
  auto item = std::move(*st.fetched);
  st.fetched.reset();
  if (!item.end && item.data.epoch * st.wiring.batches_per_epoch + item.data.index < st.resume_from)
    return next_training_batch(self); // adopted: summed already, before the step in flight
  on_training_batch(self, item);
}

void fetch_training_batch(compute_pointer self) {
  self->state.fetching = true;
  watched_request<loader_item>(
    self, self->state.wiring.train_loader, "a batch from its training loader",
    request_due(self->state),
    [=](loader_item& item) {
      auto& st = self->state;
      st.fetching = false;
      st.fetched = std::move(item);
      if (st.between_steps)
        next_training_batch(self);
    },
    next_atom::value);
}

// A stand-in's step: no batch, no arithmetic; timers (see "Stand-in" in the header). Runs at
// the phase's start and when the previous step's backward has ended (its last push left).
void next_stand_in_step(compute_pointer self) {
  auto& st = self->state;
  if (st.end_requested || st.stand_in_index >= st.wiring.batches_per_epoch) {
    st.stand_in_ended = true;
    if (st.answers_missing == 0)
      finish_phase(self);
    return; // else the last answer ends the phase (step_answered)
  }
  const auto epoch = st.phase.epoch;
  st.header.samples = st.stand_in.samples;
  st.header.step = epoch * st.wiring.batches_per_epoch + st.stand_in_index;
  st.header.epoch_position =
    static_cast<double>(epoch)
    + static_cast<double>(st.stand_in_index)
        / static_cast<double>(std::max<std::int64_t>(1, st.wiring.batches_per_epoch));
  st.stand_in_segment = 0;
  st.stand_in_backward = false;
  stand_in_forward(self);
}

// The forward goes on: the next segment's timer when its group's weights are current, or
// nothing (its answer calls this again); after the last segment, backward's timers: group g
// final once backward's time has covered groups 0..g's shares of the work (stand_in_timing;
// without overlap all at its end).
//
// A segment starts on the device when the one before it has ended and its weights are in, and
// ends its share of the work later; a segment already over by then (a short one, or the actor
// came late) sets no timer. The times chain from `stand_in_mark`, never from when a timer
// fired: a forward of 286 segments (ResNet-50 in 512 KiB slices) on timers each a little late
// on a busy host would otherwise take tens of milliseconds longer than the device would.
void stand_in_forward(compute_pointer self) {
  auto& st = self->state;
  if (st.stand_in_timer || st.stand_in_backward || st.stand_in_ended)
    return;
  const auto groups = st.wiring.groups.size();
  const auto forward = st.stand_in.step / 3;
  const auto& times = st.stand_in_times;
  const auto now = self->clock().now();
  while (st.stand_in_segment < groups) {
    const auto k = st.stand_in_segment;
    const auto ready = st.stand_in_ready[groups - 1 - k];
    if (ready == compute_state::not_yet)
      return; // waits for the weights of the layers this segment runs
    const auto lasts = times.forward_end(forward, k)
                       - (k == 0 ? caf::timespan{0} : times.forward_end(forward, k - 1));
    const auto end = std::max(st.stand_in_mark, ready) + lasts;
    if (end > now) {
      st.stand_in_timer = true;
      st.stand_in_segment_end = end;
      self->scheduled_send(self, end, stand_in_forward_atom::value, st.phases_begun, st.header.step,
                           k);
      return;
    }
    st.stand_in_mark = end;
    ++st.stand_in_segment;
  }
  st.stand_in_backward = true;
  st.answers_missing = groups;
  std::fill(st.stand_in_ready.begin(), st.stand_in_ready.end(), compute_state::not_yet);
  const auto backward = st.stand_in.step - forward;
  for (std::size_t g = 0; g < groups; ++g) {
    auto at = st.wiring.overlap ? times.backward_due(backward, g) : backward;
    self->scheduled_send(self, st.stand_in_mark + at, stand_in_atom::value, st.phases_begun,
                         st.header.step, g);
  }
  st.stand_in_mark += backward; // where the next step's forward starts on the device
}

// Segment k of the stand-in's forward is done: the next one.
void stand_in_segment_done(compute_pointer self, std::uint64_t phase, std::int64_t step,
                           std::size_t k) {
  auto& st = self->state;
  if (!st.busy || phase != st.phases_begun || step != st.header.step || k != st.stand_in_segment
      || !st.stand_in_timer)
    return; // a timer of a phase that failed or ended
  st.stand_in_timer = false;
  st.stand_in_mark = st.stand_in_segment_end;
  ++st.stand_in_segment;
  stand_in_forward(self);
}

// Group g of the stand-in's step is final: push it; the last one ends the step's backward,
// and the next step's forward starts.
void stand_in_group_due(compute_pointer self, std::uint64_t phase, std::int64_t step,
                        std::size_t g) {
  auto& st = self->state;
  if (!st.busy || phase != st.phases_begun || step != st.header.step
      || g >= st.wiring.groups.size())
    return; // a timer of a phase that failed or ended
  send_group(self, g);
  if (g + 1 != st.wiring.groups.size())
    return;
  const auto index = st.stand_in_index++;
  st.phase.step_seconds += std::chrono::duration<double>(st.stand_in.step).count();
  st.phase.samples += st.stand_in.samples;
  if (st.wiring.metrics)
    self->send(st.wiring.metrics,
               batch_report{st.wiring.worker, st.phase.epoch, index, st.wiring.batches_per_epoch,
                            st.stand_in.samples, 0, 0.0, st.learning_rate, st.replica->top_k(), 0});
  next_stand_in_step(self);
}

void pull_all(compute_pointer self, std::function<void()> then) {
  self->state.answers_missing = self->state.wiring.shards.size();
  const auto due = request_due(self->state);
  for (std::size_t r = 0; r < self->state.wiring.shards.size(); ++r)
    ask(self, r, due, nullptr, then, pull_atom::value, due);
}

// An adopted compute's first weights: every route's weights before the step in flight. Each
// route answers for the earliest step it has not summed (before_step); routes can be one step
// apart (one summed the lost rank's last push, another had not got it), so the earliest of
// them is the step in flight, and a route that answered for a later one is asked again for it.
void rewind_all(compute_pointer self, std::function<void()> then);

void settle_rewind(compute_pointer self, std::shared_ptr<std::vector<weight_set>> answers,
                   std::function<void()> then) {
  auto& st = self->state;
  std::int64_t step = std::numeric_limits<std::int64_t>::max();
  for (const auto& ws : *answers)
    step = std::min(step, ws.before_step);
  auto missing = std::make_shared<std::size_t>(0);
  for (std::size_t r = 0; r < answers->size(); ++r)
    *missing += (*answers)[r].before_step != step ? 1 : 0;
  auto install_all = [=] {
    auto& s = self->state;
    for (std::size_t r = 0; r < answers->size(); ++r)
      if (auto problem = install(s, s.wiring.shards[r], (*answers)[r]); !problem.empty())
        return fail_phase(self, make_error(errc::bad_request, problem));
    s.resume_from = step;
    if (s.wiring.on_rewound)
      s.wiring.on_rewound(step);
    then();
  };
  if (*missing == 0)
    return install_all();
  const auto due = request_due(st);
  for (std::size_t r = 0; r < answers->size(); ++r) {
    if ((*answers)[r].before_step == step)
      continue;
    watched_request<weight_set>(
      self, caf::actor_cast<rewind_target_actor>(st.wiring.shards[r].shard),
      "the weights of route " + std::to_string(r) + " before step " + std::to_string(step), due,
      [=](weight_set& ws) {
        if (ws.before_step != step)
          return fail_phase(
            self,
            make_error(errc::bad_request,
                       "compute " + std::to_string(self->state.wiring.worker) + ": route "
                         + std::to_string(r) + " answered the weights before step "
                         + std::to_string(ws.before_step) + " for step " + std::to_string(step)));
        (*answers)[r] = std::move(ws);
        if (--*missing == 0)
          install_all();
      },
      rewind_atom::value, step, due);
  }
}

void rewind_all(compute_pointer self, std::function<void()> then) {
  auto& st = self->state;
  const auto routes = st.wiring.shards.size();
  auto answers = std::make_shared<std::vector<weight_set>>(routes);
  auto missing = std::make_shared<std::size_t>(routes);
  const auto due = request_due(st);
  for (std::size_t r = 0; r < routes; ++r)
    watched_request<weight_set>(
      self, caf::actor_cast<rewind_target_actor>(st.wiring.shards[r].shard),
      "the weights of route " + std::to_string(r) + " before the step in flight", due,
      [=](weight_set& ws) {
        (*answers)[r] = std::move(ws);
        if (--*missing == 0)
          settle_rewind(self, answers, then);
      },
      rewind_atom::value, std::int64_t{-1}, due);
}

void next_validation_batch(compute_pointer self) {
  watched_request<loader_item>(
    self, self->state.wiring.validation_loader, "a batch from the validation loader",
    request_due(self->state),
    [=](loader_item& item) {
      auto& st = self->state;
      if (item.end)
        return finish_phase(self);
      try {
        auto r = st.replica->evaluate(item.data.images, item.data.labels);
        st.phase.samples += r.count;
        st.phase.correct += r.correct;
        st.phase.top_k_correct += r.top_k_correct;
        st.phase.loss_sum += r.loss_sum;
        st.phase.skipped += item.data.skipped;
      } catch (const std::exception& e) {
        return fail_phase(self,
                          make_error(classify_exception(e), std::string("compute: ") + e.what()));
      }
      next_validation_batch(self);
    },
    next_atom::value);
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

// The replica's own state for a checkpoint (model_state.hpp), only between phases.
caf::result<replica_state> snapshot_replica(compute_pointer self) {
  if (self->state.busy)
    return make_error(errc::bad_request, "compute: snapshot asked while a phase is running");
  try {
    return capture_replica_state(*self->state.replica);
  } catch (const std::exception& e) {
    return make_error(classify_exception(e), std::string("compute: snapshot: ") + e.what());
  }
}

caf::result<bool> restore_replica(compute_pointer self, const replica_state& state) {
  if (self->state.busy)
    return make_error(errc::bad_request, "compute: restore asked while a phase is running");
  try {
    restore_replica_state(*self->state.replica, state);
  } catch (const std::exception& e) {
    return make_error(errc::bad_request, "compute " + std::to_string(self->state.wiring.worker)
                                           + ": restore: " + e.what());
  }
  return true;
}

compute_self_actor::behavior_type compute(compute_pointer self, std::shared_ptr<model> replica,
                                          compute_wiring wiring, compute_stand_in stand_in) {
  auto& st = self->state;
  st.replica = std::move(replica);
  st.wiring = std::move(wiring);
  st.stand_in = stand_in;
  if (stand_in.active()) {
    std::vector<shape_t> shapes;
    for (auto* p : st.replica->parameters())
      shapes.push_back(p->value.shape());
    st.stand_in_values = stand_in_gradients(std::move(shapes), stand_in.seed, st.wiring.worker);
    std::vector<std::vector<key_slice>> route_keys;
    for (const auto& route : st.wiring.shards)
      route_keys.push_back(route.keys);
    st.stand_in_times =
      stand_in_timing(st.replica->forward_work_by_slot(), route_keys, st.wiring.groups);
  }
  st.tracker = push_tracker(st.wiring.shards, st.wiring.groups, st.replica->parameters().size());
  st.on_gpu = st.replica->device().kind != device_kind::cpu;
  if (st.on_gpu)
    st.host_gradients.resize(st.replica->parameters().size());
  watch_peers(self);
  return {
    [=](train_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (!begin_phase(self, epoch, false, due))
        return caf::delegated<phase_report>();
      if (self->state.stand_in.active()) {
        auto& st = self->state;
        st.stand_in_index = 0;
        st.stand_in_timer = st.stand_in_ended = false;
        // the weights are pulled, or the last phase's answers all came
        st.stand_in_ready.assign(st.wiring.groups.size(), caf::actor_clock::time_point::min());
        auto start = [=] {
          self->state.stand_in_mark = self->clock().now();
          next_stand_in_step(self);
        };
        if (self->state.have_weights) {
          st.answers_missing = 0; // a failed phase's answers are dropped
          start();
        } else {
          pull_all(self, [=] {
            self->state.have_weights = true;
            start();
          });
        }
        return caf::delegated<phase_report>();
      }
      self->send(self->state.wiring.train_loader, epoch_atom::value, epoch);
      if (self->state.have_weights) {
        next_training_batch(self);
      } else if (self->state.wiring.adopted) {
        rewind_all(self, [=] {
          self->state.have_weights = true;
          next_training_batch(self);
        });
      } else {
        pull_all(self, [=] {
          self->state.have_weights = true;
          next_training_batch(self);
        });
      }
      return caf::delegated<phase_report>();
    },
    [=](end_epoch_atom, std::int64_t epoch) {
      auto& s = self->state;
      if (s.busy && !s.phase.validation && s.phase.epoch == epoch)
        s.end_requested = true;
    },
    [=](watchdog_atom) { check_pending(self); },
    [=](stand_in_atom, std::uint64_t phase, std::int64_t step, std::size_t g) {
      stand_in_group_due(self, phase, step, g);
    },
    [=](stand_in_forward_atom, std::uint64_t phase, std::int64_t step, std::size_t k) {
      stand_in_segment_done(self, phase, step, k);
    },
    [=](snapshot_atom) { return snapshot_replica(self); },
    [=](position_atom) { return self->state.latest_train_epoch; },
    [=](restore_atom, const replica_state& state) { return restore_replica(self, state); },
    [=](validate_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      if (!begin_phase(self, epoch, true, due))
        return caf::delegated<phase_report>();
      if (self->state.stand_in.active()) { // nothing to evaluate
        finish_phase(self);
        return caf::delegated<phase_report>();
      }
      self->send(self->state.wiring.validation_loader, epoch_atom::value, epoch);
      if (self->state.wiring.adopted && !self->state.have_weights) {
        // Adopted between an epoch's training and its validation: the weights are the
        // shards' current ones (no step is in flight).
        pull_all(self, [=] {
          self->state.have_weights = true;
          next_validation_batch(self);
        });
        return caf::delegated<phase_report>();
      }
      next_validation_batch(self);
      return caf::delegated<phase_report>();
    },
  };
}

// Every key of every route in exactly one group, every key inside the replica's parameters.
void check_wiring(model& replica, const compute_wiring& wiring) {
  if (wiring.shards.empty())
    throw std::invalid_argument("compute: no parameter shard to talk to");
  auto& params = replica.parameters();
  std::vector<std::int64_t> elements(params.size(), 0);
  std::vector<std::vector<int>> covered(wiring.shards.size());
  for (std::size_t r = 0; r < wiring.shards.size(); ++r) {
    covered[r].assign(wiring.shards[r].keys.size(), 0);
    for (const auto& key : wiring.shards[r].keys)
      if (key.slot >= params.size() || key.offset < 0 || key.length <= 0
          || key.offset + key.length > params[key.slot]->value.numel())
        throw std::invalid_argument("compute: route " + std::to_string(r)
                                    + " has a key outside "
                                      "the model's parameters (slot "
                                    + std::to_string(key.slot) + ")");
    for (const auto& key : wiring.shards[r].keys)
      elements[key.slot] += key.length;
  }
  for (std::size_t slot = 0; slot < params.size(); ++slot)
    if (elements[slot] != params[slot]->value.numel())
      throw std::invalid_argument(
        "compute: the routes' keys cover " + std::to_string(elements[slot]) + " of the "
        + std::to_string(params[slot]->value.numel()) + " elements of " + params[slot]->name);
  for (const auto& g : wiring.groups) {
    if (g.shard >= wiring.shards.size() || g.keys.empty())
      throw std::invalid_argument("compute: a push group names route " + std::to_string(g.shard)
                                  + " of " + std::to_string(wiring.shards.size())
                                  + " or has no keys");
    for (auto k : g.keys) {
      if (k >= covered[g.shard].size())
        throw std::invalid_argument("compute: a push group names key " + std::to_string(k)
                                    + " of route " + std::to_string(g.shard) + ", which has "
                                    + std::to_string(covered[g.shard].size()));
      ++covered[g.shard][k];
    }
  }
  for (std::size_t r = 0; r < covered.size(); ++r)
    for (std::size_t k = 0; k < covered[r].size(); ++k)
      if (covered[r][k] != 1)
        throw std::invalid_argument("compute: key " + std::to_string(k) + " of route "
                                    + std::to_string(r) + " is in " + std::to_string(covered[r][k])
                                    + " push groups, expected exactly 1");
}

} // namespace

push_tracker::push_tracker(const std::vector<shard_route>& routes,
                           const std::vector<push_group>& groups, std::size_t slots)
    : groups_of_slot_(slots) {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::set<std::size_t> waits_on;
    for (auto k : groups[g].keys)
      waits_on.insert(routes[groups[g].shard].keys[k].slot);
    for (auto slot : waits_on)
      groups_of_slot_[slot].push_back(g);
    slots_per_group_.push_back(waits_on.size());
  }
  missing_ = slots_per_group_;
}

local_compute_actor spawn_compute(caf::actor_system& system, std::unique_ptr<model> replica,
                                  compute_wiring wiring, compute_spawn_options options) {
  if (!replica)
    throw std::invalid_argument("compute: no model replica");
  check_wiring(*replica, wiring);
  if (!wiring.train_loader || !wiring.validation_loader)
    throw std::invalid_argument("compute: no training or validation loader");
  if (options.stand_in.step.count() < 0 || options.stand_in.samples < 0)
    throw std::invalid_argument("compute: a stand-in needs a step time and samples >= 0");
  std::shared_ptr<model> shared(std::move(replica));
  if (options.detached && !options.cpus.empty())
    // A detached actor builds its behaviour on its own thread: bound there, before any kernel.
    return system.spawn<caf::detached>(
      [cpus = options.cpus](compute_pointer self, std::shared_ptr<model> r, compute_wiring w,
                            compute_stand_in s) {
        bind_this_thread(cpus);
        return compute(self, std::move(r), std::move(w), s);
      },
      std::move(shared), std::move(wiring), options.stand_in);
  if (options.detached)
    return system.spawn<caf::detached>(compute, std::move(shared), std::move(wiring),
                                       options.stand_in);
  return system.spawn(compute, std::move(shared), std::move(wiring), options.stand_in);
}

} // namespace troupe
