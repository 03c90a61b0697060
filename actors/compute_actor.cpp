// Implementation notes: every continuation is a non-blocking `request(...).then(...)`, so the
// actor never parks a scheduler thread while waiting for a loader or a shard. The replica's
// parameters are swapped to the handles the shards send; no weight bytes are copied.
#include "actors/compute_actor.hpp"

#include <chrono>
#include <functional>
#include <optional>

#include <caf/all.hpp>

#include "actors/actor_errors.hpp"
#include "actors/messages.hpp"

namespace troupe {

namespace {

using clock_type = std::chrono::steady_clock;

struct compute_state {
  std::shared_ptr<model> replica;
  compute_wiring wiring;
  caf::response_promise promise;
  phase_report phase;
  clock_type::time_point phase_start;
  std::int64_t global_step = 0;
  float learning_rate = 0;
  bool have_weights = false;
  bool busy = false;
  std::optional<gradient_push> delayed_push;  // a straggler's push, waiting for its timer
  static inline const char* name = "compute";
};

using compute_pointer = caf::stateful_actor<compute_state>*;

void finish_phase(compute_pointer self) {
  auto& st = self->state;
  st.phase.seconds = std::chrono::duration<double>(clock_type::now() - st.phase_start).count();
  st.busy = false;
  st.promise.deliver(st.phase);
}

void fail_phase(compute_pointer self, const caf::error& err) {
  auto& st = self->state;
  st.busy = false;
  st.promise.deliver(err);
}

void install(compute_state& st, const shard_route& route, weight_set& ws) {
  auto& params = st.replica->parameters();
  for (std::size_t i = 0; i < route.slots.size(); ++i)
    params[route.slots[i]]->value = std::move(ws.weights[i]);
  st.learning_rate = ws.learning_rate;
}

// Sends one request per shard and runs `then` once every shard has answered with weights.
void exchange(compute_pointer self, std::optional<gradient_push> tmpl, std::function<void()> then) {
  auto& st = self->state;
  auto outstanding = std::make_shared<std::size_t>(st.wiring.shards.size());
  for (std::size_t r = 0; r < st.wiring.shards.size(); ++r) {
    const auto& route = st.wiring.shards[r];
    auto on_weights = [=](weight_set& ws) {
      auto& s = self->state;
      if (ws.weights.size() != s.wiring.shards[r].slots.size())
        return fail_phase(self, make_troupe_error("compute: shard answered with "
                                                  + std::to_string(ws.weights.size())
                                                  + " weights for "
                                                  + std::to_string(s.wiring.shards[r].slots.size())
                                                  + " keys"));
      install(s, s.wiring.shards[r], ws);
      if (--*outstanding == 0)
        then();
    };
    auto on_error = [=](caf::error& err) { fail_phase(self, err); };
    if (!tmpl) {
      self->request(route.shard, caf::infinite, pull_atom::value).then(on_weights, on_error);
      continue;
    }
    gradient_push push;
    push.step = tmpl->step;
    push.epoch_position = tmpl->epoch_position;
    push.worker = route.source_index;
    push.samples = tmpl->samples;
    auto& params = st.replica->parameters();
    for (auto slot : route.slots)
      push.gradients.push_back(params[slot]->grad);
    self->request(route.shard, caf::infinite, push_atom::value, std::move(push))
      .then(on_weights, on_error);
  }
}

void next_training_batch(compute_pointer self);

void on_training_batch(compute_pointer self, loader_item& item) {
  auto& st = self->state;
  if (item.end)
    return finish_phase(self);
  loss_result loss;
  try {
    loss = st.replica->train_step(item.data.images, item.data.labels);
  } catch (const std::exception& e) {
    return fail_phase(self, make_troupe_error(std::string("compute: ") + e.what()));
  }
  st.phase.samples += loss.count;
  st.phase.correct += loss.correct;
  st.phase.loss_sum += loss.loss_sum;
  if (st.wiring.metrics)
    self->send(st.wiring.metrics, batch_report{st.wiring.worker, item.data.epoch, item.data.index,
                                               st.wiring.batches_per_epoch, loss.count,
                                               loss.correct, loss.loss_sum, st.learning_rate});
  gradient_push tmpl;
  tmpl.samples = loss.count;
  tmpl.step = st.global_step++;
  tmpl.epoch_position = static_cast<double>(item.data.epoch)
                        + static_cast<double>(item.data.index)
                            / static_cast<double>(std::max<std::int64_t>(1, st.wiring.batches_per_epoch));
  if (st.wiring.straggle.count() > 0) {
    st.delayed_push = std::move(tmpl);
    self->delayed_send(self, st.wiring.straggle, straggle_atom::value);
    return;
  }
  exchange(self, std::move(tmpl), [=] { next_training_batch(self); });
}

void next_training_batch(compute_pointer self) {
  self->request(self->state.wiring.train_loader, caf::infinite, next_atom::value)
    .then([=](loader_item& item) { on_training_batch(self, item); },
          [=](caf::error& err) { fail_phase(self, err); });
}

void next_validation_batch(compute_pointer self) {
  self->request(self->state.wiring.validation_loader, caf::infinite, next_atom::value)
    .then(
      [=](loader_item& item) {
        auto& st = self->state;
        if (item.end)
          return finish_phase(self);
        try {
          auto r = st.replica->evaluate(item.data.images, item.data.labels);
          st.phase.samples += r.count;
          st.phase.correct += r.correct;
          st.phase.loss_sum += r.loss_sum;
        } catch (const std::exception& e) {
          return fail_phase(self, make_troupe_error(std::string("compute: ") + e.what()));
        }
        next_validation_batch(self);
      },
      [=](caf::error& err) { fail_phase(self, err); });
}

// Common start of a phase; returns false (and answers with an error) if one is running.
bool begin_phase(compute_pointer self, std::int64_t epoch, bool validation) {
  auto& st = self->state;
  st.promise = self->make_response_promise();
  if (st.busy) {
    st.promise.deliver(make_troupe_error("compute: a phase is already running"));
    return false;
  }
  st.busy = true;
  st.phase = phase_report{};
  st.phase.epoch = epoch;
  st.phase.validation = validation;
  st.phase_start = clock_type::now();
  return true;
}

caf::behavior compute(compute_pointer self, std::shared_ptr<model> replica, compute_wiring wiring) {
  self->state.replica = std::move(replica);
  self->state.wiring = std::move(wiring);
  return {
    [=](train_atom, std::int64_t epoch) -> caf::result<phase_report> {
      if (!begin_phase(self, epoch, false))
        return caf::delegated<phase_report>();
      self->send(self->state.wiring.train_loader, epoch_atom::value, epoch);
      if (self->state.have_weights) {
        next_training_batch(self);
      } else {
        exchange(self, std::nullopt, [=] {
          self->state.have_weights = true;
          next_training_batch(self);
        });
      }
      return caf::delegated<phase_report>();
    },
    [=](straggle_atom) {
      auto push = std::move(self->state.delayed_push);
      self->state.delayed_push.reset();
      if (push)
        exchange(self, std::move(*push), [=] { next_training_batch(self); });
    },
    [=](validate_atom, std::int64_t epoch) -> caf::result<phase_report> {
      if (!begin_phase(self, epoch, true))
        return caf::delegated<phase_report>();
      self->send(self->state.wiring.validation_loader, epoch_atom::value, epoch);
      next_validation_batch(self);
      return caf::delegated<phase_report>();
    },
  };
}

} // namespace

caf::actor spawn_compute(caf::actor_system& system, std::unique_ptr<model> replica,
                         compute_wiring wiring) {
  if (!replica)
    throw std::invalid_argument("compute: no model replica");
  if (wiring.shards.empty())
    throw std::invalid_argument("compute: no parameter shard to talk to");
  return system.spawn(compute, std::shared_ptr<model>(std::move(replica)), std::move(wiring));
}

} // namespace troupe
