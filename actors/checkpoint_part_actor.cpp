// Implementation notes: each save or restore is one request_round (request_round.hpp). A part
// keeps its shards' keys as the shards answer them, in key order, so the file lists exactly
// what the node owns; assembling whole parameters is the reader's job (read_any_checkpoint).
// A restore reads the whole checkpoint in this node (the files are on a file system every node
// sees) and cuts out this node's keys with this run's key plan: that is what re-shards a
// checkpoint saved by another number of shards.
#include <troupe/actors/checkpoint_part_actor.hpp>

#include <iostream>
#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/io/dataset.hpp>

#include "actors/checkpoint_timeline.hpp"
#include "actors/request_round.hpp"

namespace troupe {

namespace {

struct part_state {
  checkpoint_part_wiring wiring;
  static inline const char* name = "checkpoint_part";
};

using part_pointer = checkpoint_part_actor::stateful_pointer<part_state>;

shard_part part_of(const part_shard& route, shard_snapshot& s) {
  if (s.weights.size() != route.keys.size() || s.state.size() != route.keys.size())
    throw std::invalid_argument("checkpoint: shard " + std::to_string(route.index) + " answered "
                                + std::to_string(s.weights.size()) + " keys, it owns "
                                + std::to_string(route.keys.size()));
  shard_part out;
  out.index = route.index;
  out.counters = std::move(s.counters);
  out.optimizer = s.optimizer;
  for (std::size_t k = 0; k < route.keys.size(); ++k)
    out.keys.push_back(
      {route.keys[k].slot, route.keys[k].offset, std::move(s.weights[k]), std::move(s.state[k])});
  return out;
}

caf::result<part_record> save_part(part_pointer self, std::int64_t epoch, const std::string& path,
                                   deadline due) {
  const auto& w = self->state.wiring;
  auto promise = self->make_response_promise<part_record>();
  auto r = std::make_shared<request_round>();
  r->missing = w.shards.size() + w.replicas.size();
  auto gathered = std::make_shared<checkpoint_part>();
  gathered->shards.resize(w.shards.size());
  gathered->replicas.resize(w.replicas.size());
  const auto asked = timeline_recorder::clock::now();
  auto write = [=]() mutable {
    const auto writing = timeline_recorder::clock::now();
    try {
      auto record = write_checkpoint_part(path, epoch, *gathered);
      record_save(self->state.wiring.timeline, epoch, asked, writing, path);
      promise.deliver(std::move(record));
    } catch (const std::exception& e) {
      round_failed(r, promise,
                   make_error(classify_exception(e), std::string("checkpoint: ") + e.what()));
    }
  };
  auto bad = [=](caf::error& err) mutable { round_failed(r, promise, std::move(err)); };
  for (std::size_t i = 0; i < w.shards.size(); ++i)
    self->request(w.shards[i].shard, due.left(), snapshot_atom::value)
      .then(
        [=](shard_snapshot& s) mutable {
          if (r->failed)
            return;
          try {
            gathered->shards[i] = part_of(self->state.wiring.shards[i], s);
          } catch (const std::exception& e) {
            return round_failed(r, promise, make_error(errc::bad_request, e.what()));
          }
          answered(r, write);
        },
        bad);
  for (std::size_t i = 0; i < w.replicas.size(); ++i)
    self->request(w.replicas[i].second, due.left(), snapshot_atom::value)
      .then(
        [=](replica_state& state) mutable {
          if (!r->failed)
            gathered->replicas[i] = {self->state.wiring.replicas[i].first, std::move(state)};
          answered(r, write);
        },
        bad);
  return promise;
}

// Checks that `c` fits this run's model and shape (the scheduler checked the same file
// against the model before anything was spawned; this guards a file changed since).
void check_fits(const training_checkpoint& c, const checkpoint_part_wiring& w,
                const std::string& file) {
  auto refuse = [&](const std::string& what) { throw io_error(file + ": " + what); };
  if (c.parameters.size() != w.parameter_names.size())
    refuse("holds " + std::to_string(c.parameters.size()) + " parameters, this run's model has "
           + std::to_string(w.parameter_names.size()));
  for (std::size_t slot = 0; slot < c.parameters.size(); ++slot)
    if (c.parameters[slot].name != w.parameter_names[slot]
        || c.parameters[slot].value.shape() != w.parameter_shapes[slot])
      refuse("holds " + c.parameters[slot].name + " "
             + shape_string(c.parameters[slot].value.shape()) + " where this run's model has "
             + w.parameter_names[slot] + " " + shape_string(w.parameter_shapes[slot]));
  if (c.replicas.size() != static_cast<std::size_t>(w.run_workers))
    refuse("was written by a run of " + std::to_string(c.replicas.size())
           + " worker(s), this run has " + std::to_string(w.run_workers));
  if (c.steps_per_epoch != w.steps_per_epoch)
    refuse("was written by a run of " + std::to_string(c.steps_per_epoch)
           + " steps per epoch, this run has " + std::to_string(w.steps_per_epoch));
}

caf::result<bool> restore_part(part_pointer self, std::int64_t epoch, const std::string& prefix,
                               deadline due) {
  const auto& w = self->state.wiring;
  std::vector<shard_snapshot> shares(w.shards.size());
  std::vector<replica_state> states(w.replicas.size());
  try {
    const auto c = read_any_checkpoint(prefix, epoch);
    const auto file = existing_checkpoint_path(prefix, epoch);
    check_fits(c, w, file);
    for (std::size_t i = 0; i < w.shards.size(); ++i)
      shares[i] = snapshot_for(c, w.shards[i].keys, w.shards[i].index, w.run_shards, file);
    for (std::size_t i = 0; i < w.replicas.size(); ++i)
      states[i] = c.replicas.at(static_cast<std::size_t>(w.replicas[i].first));
  } catch (const std::exception& e) {
    return make_error(classify_exception(e), std::string("checkpoint: ") + e.what());
  }
  auto promise = self->make_response_promise<bool>();
  auto r = std::make_shared<request_round>();
  r->missing = w.shards.size() + w.replicas.size();
  auto done = [=]() mutable { promise.deliver(true); };
  auto ok = [=](bool) mutable { answered(r, done); };
  auto bad = [=](caf::error& err) mutable { round_failed(r, promise, std::move(err)); };
  for (std::size_t i = 0; i < w.shards.size(); ++i)
    self->request(w.shards[i].shard, due.left(), restore_atom::value, std::move(shares[i]))
      .then(ok, bad);
  for (std::size_t i = 0; i < w.replicas.size(); ++i)
    self->request(w.replicas[i].second, due.left(), restore_atom::value, std::move(states[i]))
      .then(ok, bad);
  return promise;
}

checkpoint_part_actor::behavior_type part_behavior(part_pointer self,
                                                   checkpoint_part_wiring wiring) {
  self->state.wiring = std::move(wiring);
  return {
    [=](save_atom, std::int64_t epoch, const std::string& path, deadline due) {
      return save_part(self, epoch, path, due);
    },
    [=](restore_atom, std::int64_t epoch, const std::string& prefix, deadline due) {
      return restore_part(self, epoch, prefix, due);
    },
  };
}

struct manifest_state {
  manifest_checkpoint_wiring wiring;
  static inline const char* name = "checkpoint";
};

using manifest_pointer = checkpoint_actor::stateful_pointer<manifest_state>;

void log_line(const manifest_checkpoint_wiring& w, const std::string& line) {
  log_checkpoint_line(w.log, line);
}

std::string parts_count(const manifest_checkpoint_wiring& w) {
  return std::to_string(w.parts.size()) + (w.parts.size() == 1 ? " part" : " parts");
}

// `err`, with the node it came from in its text.
caf::error from_node(const std::string& node, const caf::error& err) {
  return make_error(troupe_code(err), "checkpoint: " + node + ": " + error_text(err));
}

caf::result<std::string> save_manifest(manifest_pointer self, std::int64_t epoch) {
  const auto& w = self->state.wiring;
  if (w.prefix.empty())
    return make_error(errc::bad_request, "checkpoint: no model prefix to save to");
  auto promise = self->make_response_promise<std::string>();
  auto r = std::make_shared<request_round>();
  r->missing = w.parts.size();
  auto records = std::make_shared<std::vector<part_record>>(w.parts.size());
  const auto asked = timeline_recorder::clock::now();
  auto write = [=]() mutable {
    auto header = self->state.wiring.header;
    header.epoch = epoch;
    const auto writing = timeline_recorder::clock::now();
    try {
      write_checkpoint_manifest(self->state.wiring.prefix, header, *records);
    } catch (const std::exception& e) {
      return round_failed(
        r, promise, make_error(classify_exception(e), std::string("checkpoint: ") + e.what()));
    }
    const auto manifest = checkpoint_manifest_path(self->state.wiring.prefix, epoch);
    record_save(self->state.wiring.timeline, epoch, asked, writing, manifest);
    log_line(self->state.wiring, "checkpoint: saved " + manifest);
    record_event(self->state.wiring.events, "saved",
                 {{{"epoch", epoch}}, {{"manifest", manifest}}});
    promise.deliver(manifest);
  };
  log_line(w, "checkpoint: saving epoch " + std::to_string(epoch) + " (" + parts_count(w) + ")");
  record_event(w.events, "saving",
               {{{"epoch", epoch}, {"parts", static_cast<double>(w.parts.size())}}, {}});
  const auto due = deadline::after(w.timeout);
  for (std::size_t i = 0; i < w.parts.size(); ++i) {
    const auto& node = w.parts[i].node;
    self
      ->request(w.parts[i].part, due.left_with_grace(), save_atom::value, epoch,
                checkpoint_part_path(w.prefix, epoch, node), due)
      .then(
        [=](part_record& record) mutable {
          if (!r->failed)
            (*records)[i] = std::move(record);
          answered(r, write);
        },
        [=](caf::error& err) mutable { round_failed(r, promise, from_node(node, err)); });
  }
  return promise;
}

caf::result<bool> restore_manifest(manifest_pointer self) {
  const auto& w = self->state.wiring;
  if (w.resume_epoch < 0)
    return make_error(errc::bad_request, "checkpoint: no checkpoint was loaded to restore");
  auto promise = self->make_response_promise<bool>();
  auto r = std::make_shared<request_round>();
  r->missing = w.parts.size();
  auto done = [=]() mutable {
    log_line(self->state.wiring,
             "checkpoint: restored epoch " + std::to_string(self->state.wiring.resume_epoch));
    record_event(self->state.wiring.events, "restored",
                 {{{"epoch", self->state.wiring.resume_epoch}}, {}});
    promise.deliver(true);
  };
  log_line(w, "checkpoint: restoring epoch " + std::to_string(w.resume_epoch) + " ("
                + parts_count(w) + ")");
  record_event(w.events, "restoring",
               {{{"epoch", w.resume_epoch}, {"parts", static_cast<double>(w.parts.size())}}, {}});
  const auto due = deadline::after(w.timeout);
  for (const auto& p : w.parts)
    self->request(p.part, due.left_with_grace(), restore_atom::value, w.resume_epoch, w.prefix, due)
      .then([=](bool) mutable { answered(r, done); },
            [=, node = p.node](caf::error& err) mutable {
              round_failed(r, promise, from_node(node, err));
            });
  return promise;
}

checkpoint_actor::behavior_type manifest_behavior(manifest_pointer self,
                                                  manifest_checkpoint_wiring wiring) {
  self->state.wiring = std::move(wiring);
  return {
    [=](save_atom, std::int64_t epoch) { return save_manifest(self, epoch); },
    [=](restore_atom) { return restore_manifest(self); },
  };
}

} // namespace

checkpoint_part_actor spawn_checkpoint_part(caf::actor_system& system,
                                            checkpoint_part_wiring wiring, bool detached) {
  if (wiring.shards.empty() && wiring.replicas.empty())
    throw std::invalid_argument(
      "checkpoint part: no shard and no compute actor to take state from");
  if (wiring.parameter_names.size() != wiring.parameter_shapes.size())
    throw std::invalid_argument("checkpoint part: parameter names and shapes differ in count");
  if (!detached)
    return system.spawn(part_behavior, std::move(wiring));
  return system.spawn<caf::detached>(part_behavior, std::move(wiring));
}

checkpoint_actor spawn_manifest_checkpoint(caf::actor_system& system,
                                           manifest_checkpoint_wiring wiring) {
  if (wiring.parts.empty())
    throw std::invalid_argument("manifest checkpoint: no node to take a part from");
  for (const auto& p : wiring.parts)
    if (p.node.empty() || !p.part)
      throw std::invalid_argument("manifest checkpoint: a part without a node name or an actor");
  return system.spawn<caf::detached>(manifest_behavior, std::move(wiring));
}

} // namespace troupe
