// Implementation notes: a save or a restore is one fan-out of requests and a count of the
// answers (request_round.hpp); the actor handles one at a time, which the coordinator
// guarantees by waiting for each answer. Shards answer in their key order, so a key's place in
// the parameter-shaped tensors is its key_slice, the same arithmetic that puts the final
// weights together (place_key).
#include <troupe/actors/checkpoint_actor.hpp>

#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/graph/model_state.hpp>
#include <troupe/io/checkpoint_parts.hpp>
#include <troupe/io/dataset.hpp>

#include "actors/checkpoint_timeline.hpp"
#include "actors/request_round.hpp"

namespace troupe {

namespace {

struct checkpoint_state {
  checkpoint_wiring wiring;
  static inline const char* name = "checkpoint";
};

using checkpoint_pointer = checkpoint_actor::stateful_pointer<checkpoint_state>;

training_checkpoint empty_checkpoint(const checkpoint_wiring& w, std::int64_t epoch) {
  training_checkpoint c;
  c.epoch = epoch;
  c.network = w.network;
  c.steps_per_epoch = w.steps_per_epoch;
  for (std::size_t slot = 0; slot < w.parameter_names.size(); ++slot) {
    c.parameters.push_back({w.parameter_names[slot], tensor(w.parameter_shapes[slot])});
    c.state.push_back(initial_optimizer_state(w.optimizer, w.parameter_shapes[slot]));
  }
  c.optimizer = w.optimizer;
  c.shards.resize(w.shards.size());
  c.replicas.resize(w.replicas.size());
  return c;
}

void place_shard(training_checkpoint& c, const checkpoint_shard& route, std::size_t index,
                 shard_snapshot& s) {
  if (s.optimizer != c.optimizer)
    throw std::invalid_argument(std::string("checkpoint: shard ") + std::to_string(index)
                                + " holds " + optimizer_name(s.optimizer) + "'s state, the run "
                                + optimizer_name(c.optimizer) + "'s");
  if (s.weights.size() != route.keys.size() || s.state.size() != route.keys.size())
    throw std::invalid_argument("checkpoint: shard " + std::to_string(index) + " answered "
                                + std::to_string(s.weights.size()) + " keys, it owns "
                                + std::to_string(route.keys.size()));
  for (std::size_t k = 0; k < route.keys.size(); ++k) {
    const auto& key = route.keys[k];
    place_key(c.parameters[key.slot].value, key, s.weights[k]);
    auto& state = c.state[key.slot];
    for (std::size_t t = 0; t < state.tensors.size(); ++t)
      place_key(state.tensors[t], key, s.state[k].tensors.at(t));
    state.steps = s.state[k].steps; // every key of a parameter has had every step
  }
  c.shards[index] = s.counters;
}

caf::result<std::string> save(checkpoint_pointer self, std::int64_t epoch) {
  const auto& w = self->state.wiring;
  if (w.prefix.empty())
    return make_error(errc::bad_request, "checkpoint: no model prefix to save to");
  auto promise = self->make_response_promise<std::string>();
  auto r = std::make_shared<request_round>();
  r->missing = w.shards.size() + w.replicas.size();
  auto gathered = std::make_shared<training_checkpoint>(
    empty_checkpoint(w, epoch)); // the snapshots, put together
  const auto asked = timeline_recorder::clock::now();
  auto write = [=]() mutable {
    const auto path = checkpoint_path(self->state.wiring.prefix, epoch);
    const auto writing = timeline_recorder::clock::now();
    try {
      write_checkpoint(path, *gathered);
    } catch (const std::exception& e) {
      return round_failed(
        r, promise, make_error(classify_exception(e), std::string("checkpoint: ") + e.what()));
    }
    record_save(self->state.wiring.timeline, epoch, asked, writing, path);
    log_checkpoint_line(self->state.wiring.log, "checkpoint: saved " + path);
    promise.deliver(path);
  };
  for (std::size_t i = 0; i < w.shards.size(); ++i)
    self->request(w.shards[i].shard, w.timeout, snapshot_atom::value)
      .then(
        [=](shard_snapshot& s) mutable {
          try {
            if (!r->failed)
              place_shard(*gathered, self->state.wiring.shards[i], i, s);
          } catch (const std::exception& e) {
            return round_failed(r, promise, make_error(errc::bad_request, e.what()));
          }
          answered(r, write);
        },
        [=](caf::error& err) mutable { round_failed(r, promise, std::move(err)); });
  for (std::size_t rank = 0; rank < w.replicas.size(); ++rank)
    self->request(w.replicas[rank], w.timeout, snapshot_atom::value)
      .then(
        [=](replica_state& state) mutable {
          if (!r->failed)
            gathered->replicas[rank] = std::move(state);
          answered(r, write);
        },
        [=](caf::error& err) mutable { round_failed(r, promise, std::move(err)); });
  return promise;
}

caf::result<bool> restore(checkpoint_pointer self) {
  const auto& w = self->state.wiring;
  if (!w.resume)
    return make_error(errc::bad_request, "checkpoint: no checkpoint was loaded to restore");
  auto promise = self->make_response_promise<bool>();
  auto r = std::make_shared<request_round>();
  r->missing = w.shards.size() + w.replicas.size();
  auto done = [=]() mutable { promise.deliver(true); };
  auto ok = [=](bool) mutable { answered(r, done); };
  auto bad = [=](caf::error& err) mutable { round_failed(r, promise, std::move(err)); };
  for (std::size_t i = 0; i < w.shards.size(); ++i) {
    shard_snapshot snapshot;
    try {
      snapshot =
        snapshot_for(*w.resume, w.shards[i].keys, i, w.shards.size(), "the checkpoint to restore");
    } catch (const std::exception& e) { // checked by check_resumable before the run: not expected
      round_failed(r, promise,
                   make_error(classify_exception(e), std::string("checkpoint: ") + e.what()));
      return promise;
    }
    self->request(w.shards[i].shard, w.timeout, restore_atom::value, std::move(snapshot))
      .then(ok, bad);
  }
  for (std::size_t rank = 0; rank < w.replicas.size(); ++rank)
    self->request(w.replicas[rank], w.timeout, restore_atom::value, w.resume->replicas.at(rank))
      .then(ok, bad);
  return promise;
}

checkpoint_actor::behavior_type checkpointer(checkpoint_pointer self, checkpoint_wiring wiring) {
  self->state.wiring = std::move(wiring);
  return {
    [=](save_atom, std::int64_t epoch) { return save(self, epoch); },
    [=](restore_atom) { return restore(self); },
  };
}

std::string shape_list(const std::vector<named_tensor>& tensors) {
  std::string out;
  for (const auto& t : tensors)
    out += (out.empty() ? "" : ", ") + t.name + " " + shape_string(t.value.shape());
  return out;
}

} // namespace

void check_checkpoint_model(const training_checkpoint& c, const std::string& path,
                            model& reference) {
  auto refuse = [&](const std::string& what) { throw io_error(path + ": " + what); };
  const auto& params = reference.parameters();
  const auto model_is = "the model (" + reference.name() + ") has ";
  if (c.parameters.size() != params.size())
    refuse("holds " + std::to_string(c.parameters.size()) + " parameters of network " + c.network
           + ", " + model_is + std::to_string(params.size()) + ": a checkpoint of another model");
  for (std::size_t slot = 0; slot < params.size(); ++slot) {
    const auto& saved = c.parameters[slot];
    if (saved.name != params[slot]->name || saved.value.shape() != params[slot]->value.shape())
      refuse("holds " + saved.name + " " + shape_string(saved.value.shape()) + " where " + model_is
             + params[slot]->name + " " + shape_string(params[slot]->value.shape())
             + ": a checkpoint of another model or shape");
  }
  const auto expected = capture_replica_state(reference);
  for (std::size_t w = 0; w < c.replicas.size(); ++w) {
    const auto& saved = c.replicas[w].buffers;
    bool same = saved.size() == expected.buffers.size();
    for (std::size_t b = 0; same && b < saved.size(); ++b)
      same = saved[b].name == expected.buffers[b].name
             && saved[b].value.shape() == expected.buffers[b].value.shape();
    if (!same)
      refuse("holds the buffers [" + shape_list(saved) + "], " + model_is + "["
             + shape_list(expected.buffers) + "]");
  }
}

void check_resumable(const training_checkpoint& c, const std::string& path, model& reference,
                     int workers, std::size_t shards, std::int64_t steps_per_epoch,
                     optimizer_kind optimizer) {
  auto refuse = [&](const std::string& what) { throw io_error(path + ": " + what); };
  check_checkpoint_model(c, path, reference);
  if (c.optimizer != optimizer)
    refuse(std::string("holds the state of optimizer ") + optimizer_name(c.optimizer)
           + ", this run's optimizer is " + optimizer_name(optimizer)
           + ": resume with the optimizer that wrote it (--optimizer " + optimizer_name(c.optimizer)
           + ")");
  if (c.replicas.size() != static_cast<std::size_t>(workers))
    refuse("was written by a run of " + std::to_string(c.replicas.size())
           + " worker(s), this run has " + std::to_string(workers));
  // Another shard count re-shards the keys; the counters must allow it (resumed_counters).
  resumed_counters(c, 0, shards, path);
  if (c.steps_per_epoch != steps_per_epoch)
    refuse("was written by a run of " + std::to_string(c.steps_per_epoch)
           + " steps per epoch, this run has " + std::to_string(steps_per_epoch)
           + " (another batch size or data set)");
}

// The checkpoint holds whole parameters, so this run's key plan cuts them whatever plan saved
// them; the counters come from resumed_counters (by index, or equal ones when re-sharded).
shard_snapshot snapshot_for(const training_checkpoint& c, const std::vector<key_slice>& keys,
                            std::size_t index, std::size_t shards, const std::string& file) {
  shard_snapshot s;
  s.optimizer = c.optimizer;
  for (const auto& key : keys) {
    s.weights.push_back(key_view(c.parameters[key.slot].value, key));
    const auto& saved = c.state[key.slot];
    optimizer_state state{{}, saved.steps};
    for (const auto& t : saved.tensors)
      state.tensors.push_back(key_view(t, key));
    s.state.push_back(std::move(state));
  }
  s.counters = resumed_counters(c, index, shards, file);
  return s;
}

checkpoint_actor spawn_checkpoint(caf::actor_system& system, checkpoint_wiring wiring) {
  if (wiring.shards.empty() || wiring.replicas.empty())
    throw std::invalid_argument("checkpoint: no shard or no compute actor to take state from");
  if (wiring.parameter_names.size() != wiring.parameter_shapes.size())
    throw std::invalid_argument("checkpoint: parameter names and shapes differ in count");
  return system.spawn<caf::detached>(checkpointer, std::move(wiring));
}

} // namespace troupe
