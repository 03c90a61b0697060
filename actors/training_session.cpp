// Implementation notes: the session actor does a run's set-up (open data, build replicas,
// spawn) inside its `run` handler, then only reacts: the coordinator's answer, the shards'
// final weights, and down messages of the actors it spawned. Every actor of a run is
// monitored; the first one to terminate during the run ends it (its own troupe error when it
// failed with one, else errc::peer_down naming it). All actors of a run are sent an exit when
// the run ends, whatever the outcome, and when the session itself terminates.
#include <troupe/actors/training_session.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/node_part.hpp>
#include <troupe/actors/weights_init.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/checkpoint_parts.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

// "12 batches of 32", or what a batch larger than a worker's part really holds.
std::string steps_text(const placement_plan& plan, std::int64_t examples) {
  const auto part = examples_in_part(examples, 0, plan.workers);
  if (plan.train_batch <= part)
    return std::to_string(plan.steps_per_epoch) + " batches of " + std::to_string(plan.train_batch);
  return "1 batch of " + std::to_string(part) + " (a batch of " + std::to_string(plan.train_batch)
         + " is more than a compute's part of the data)";
}

// Everything one run spawned, and what the end of the run needs.
struct run_actors {
  node_part part;
  std::vector<std::string> parameter_names;
  std::vector<shape_t> parameter_shapes;
  std::uint64_t plan_hash = 0;
  void shut_down() { part.shut_down(); }
};

// Whether any hop of the push path compresses (its ends keep residuals).
bool compresses(const topology_options& topology) {
  return std::any_of(topology.compression.begin(), topology.compression.end(),
                     [](const compression_spec& c) { return c.active(); });
}

// Checkpoint options onto the part's; a checkpoint to resume from is read and checked here,
// before anything is spawned. Throws io_error naming the file, std::invalid_argument for
// options no run can follow.
void set_up_checkpoints(const training_job& job, const placement_plan& plan, model& reference,
                        const session_sinks& sinks, node_part_options& options) {
  const auto& c = sinks.output.checkpoint;
  if (c.prefix.empty() && c.load_epoch < 0)
    return;
  if (c.prefix.empty())
    throw std::invalid_argument("checkpoints: resuming from epoch " + std::to_string(c.load_epoch)
                                + " needs the model prefix the checkpoint was saved under");
  if (c.save_period < 1)
    throw std::invalid_argument("checkpoints: the save period must be at least 1 epoch, got "
                                + std::to_string(c.save_period));
  options.checkpoint_prefix = c.prefix;
  options.save_period = c.save_period;
  options.checkpoint_events = sinks.output.events;
  if (c.load_epoch < 0
      || sinks.node.resume_at_epoch >= 0) // a restarted scheduler's run restores nothing
    return;
  // After the last epoch (a job restarted by `troupe launch --max-restarts` that failed once
  // its final checkpoint was saved) nothing is trained: the run restores and reports the
  // checkpoint's weights as the final ones.
  if (c.load_epoch > job.epochs)
    throw std::invalid_argument("checkpoints: resuming after epoch " + std::to_string(c.load_epoch)
                                + " goes past the job's " + std::to_string(job.epochs) + " epochs");
  // The one-process file or a cluster run's manifest and parts, whichever the epoch has.
  const auto path = existing_checkpoint_path(c.prefix, c.load_epoch);
  auto loaded =
    c.loaded
      ? c.loaded
      : std::make_shared<const training_checkpoint>(read_any_checkpoint(c.prefix, c.load_epoch));
  if (loaded->epoch != c.load_epoch)
    throw io_error(path + ": holds the state after epoch " + std::to_string(loaded->epoch)
                   + ", not " + std::to_string(c.load_epoch) + " (a renamed file?)");
  check_resumable(*loaded, path, reference, plan.workers, plan.keys.shards.size(),
                  plan.steps_per_epoch, job.optimizer.kind);
  options.resume = std::move(loaded);
  if (auto* log = sinks.output.log) {
    if (c.load_epoch == job.epochs)
      *log << "Resuming from " << path
           << ": every epoch of the job was trained; its weights are the final ones" << std::endl;
    else
      *log << "Resuming from " << path << ": epochs " << c.load_epoch << " to " << job.epochs - 1
           << std::endl;
    if (c.load_epoch < job.epochs && compresses(job.topology))
      *log << "Resuming a compressed run: checkpoints do not keep the compressed routes' residuals "
              "(what "
              "earlier steps had not sent yet), so they start from zero and the weights will not "
              "equal an "
              "uninterrupted run's bit for bit (docs/checkpoints.md)"
           << std::endl;
  }
}

// Fine-tuning: the shards start from a checkpoint's weights, the reset parameters from the
// reference's (the initializer's under the job's seed). A cluster's scheduler holds no shard,
// but reads the checkpoint all the same: a file that does not fit the model ends the run
// there, naming it, and its line says where the servers start. Throws io_error naming the
// file, std::invalid_argument for options no run can follow.
void init_from_checkpoint(const training_job& job, const session_sinks& sinks, model& reference,
                          std::vector<tensor>& initial) {
  if (job.init_from.empty()) {
    if (!job.reset_layers.empty())
      throw std::invalid_argument("reset_layers needs init_from (the checkpoint whose other "
                                  "weights are kept)");
    return;
  }
  if (sinks.output.checkpoint.load_epoch >= 0)
    throw std::invalid_argument("init_from starts a new run from a checkpoint's weights, "
                                "load_epoch resumes one: give one of them");
  auto start = fine_tuning_start_of(job.init_from, reference, job.reset_layers,
                                    sinks.output.checkpoint.init_loaded.get());
  initial = std::move(start.weights);
  if (auto* log = sinks.output.log)
    *log << start.line << std::endl;
}

// Opens the data, plans the run and spawns this process's part of it: every actor of a
// plan (sinks.node.node -1), or the scheduler's part of a cluster plan, in plan order.
// Throws (io_error, placement_error, ...) on bad input; the caller shuts down whatever was
// spawned before the throw.
void spawn_job(caf::actor_system& system, const training_job& job, const session_sinks& sinks,
               run_actors& run) {
  auto train_set = sinks.node.train_data ? sinks.node.train_data : open_dataset(job.train_data);
  auto validation_set =
    sinks.node.validation_data ? sinks.node.validation_data : open_dataset(job.validation_data);
  const auto facts = data_facts_of(*train_set, *validation_set);
  const auto plan = plan_placement(job, facts);
  run.plan_hash = plan.hash;
  if (sinks.output.status)
    sinks.output.status->set_plan(status_plan_of(plan));
  const auto spec = model_of(job, facts);
  // The shards start from a model of their own built from the job's seed, so their start
  // values never depend on which process holds a replica.
  auto reference = build_model(spec);
  auto initial = initial_weights(*reference);
  init_from_checkpoint(job, sinks, *reference, initial);
  for (std::size_t slot = 0; slot < initial.size(); ++slot) {
    run.parameter_names.push_back(plan.parameters.at(slot).name);
    run.parameter_shapes.push_back(initial[slot].shape());
  }
  if (auto* log = sinks.output.log)
    *log << "Start training " << reference->name() << " (" << plan.parameter_count
         << " parameters) on " << train_set->description() << ": " << train_set->size()
         << " examples, " << plan.workers << " compute(s) x " << steps_text(plan, train_set->size())
         << "; "
         << (job.validate ? "validation on " + validation_set->description() + " ("
                              + std::to_string(validation_set->size()) + " examples)"
                          : std::string("no validation"))
         << "; " << plan.keys.shards.size() << " parameter shard(s), " << plan.pushes_per_step
         << " push(es) per step" << (plan.overlap ? " during backward" : " after backward")
         << "; plan " << std::hex << plan.hash << std::dec << std::endl;
  node_part_options options;
  set_up_checkpoints(job, plan, *reference, sinks, options);
  options.node = sinks.node.node;
  options.resume_at_epoch = sinks.node.resume_at_epoch;
  options.remote = sinks.node.remote;
  options.between_epochs = sinks.between_epochs;
  options.metrics = sinks.metrics;
  options.metrics_output = metrics_options_of(job, sinks.output);
  options.tap = sinks.tap;
  options.timeouts = sinks.timeouts;
  options.compute = sinks.compute;
  options.devices = sinks.devices;
  options.on_wired = sinks.on_wired;
  options.timeline = sinks.output.timeline;
  spawn_node_part(system, job, plan, spec, initial, {train_set, validation_set}, options, run.part);
  if (!run.part.coordinator)
    throw std::invalid_argument("session: the plan puts no coordinator on node "
                                + std::to_string(options.node));
}

struct session_state {
  training_job job;
  session_sinks sinks;
  std::shared_ptr<run_actors> run = std::make_shared<run_actors>();
  bool running = false;
  caf::typed_response_promise<training_result> promise;
  training_result result;
  std::size_t pulls_missing = 0;
  static inline const char* name = "training_session";
};

using session_pointer = training_session_actor::stateful_pointer<session_state>;

void end_run(session_pointer self, std::optional<caf::error> failure) {
  auto& st = self->state;
  if (!st.running)
    return;
  st.running = false;
  st.run->shut_down();
  if (failure)
    st.promise.deliver(std::move(*failure));
  else
    st.promise.deliver(std::move(st.result));
  *st.run = run_actors{};
}

// Pulls every shard's weights into result.final_weights, by parameter slot: whole keys by
// handle, slices copied into one tensor of the parameter's shape.
void collect_weights(session_pointer self) {
  auto& st = self->state;
  st.result.parameter_names = st.run->parameter_names;
  st.result.final_weights.clear();
  for (const auto& shape : st.run->parameter_shapes)
    st.result.final_weights.emplace_back(shape);
  st.result.plan_hash = st.run->plan_hash;
  st.pulls_missing = st.run->part.shards.size();
  const auto due = deadline::after(st.sinks.timeouts.step);
  for (std::size_t r = 0; r < st.run->part.shards.size(); ++r)
    self->request(st.run->part.shards[r].shard, due.left_with_grace(), pull_atom::value, due)
      .then(
        [=](weight_set& ws) {
          auto& s = self->state;
          if (!s.running)
            return;
          const auto& route = s.run->part.shards[r];
          try {
            if (ws.keys.size() != ws.weights.size())
              throw std::invalid_argument("shard answered " + std::to_string(ws.weights.size())
                                          + " weights for " + std::to_string(ws.keys.size())
                                          + " keys");
            for (std::size_t i = 0; i < ws.keys.size(); ++i) {
              if (ws.keys[i] >= route.keys.size())
                throw std::invalid_argument("shard answered unknown key "
                                            + std::to_string(ws.keys[i]));
              const auto& key = route.keys[ws.keys[i]];
              place_key(s.result.final_weights[key.slot], key, ws.weights[i]);
            }
          } catch (const std::exception& e) {
            return end_run(self, make_error(errc::bad_request,
                                            std::string("session: final weights: ") + e.what()));
          }
          if (--s.pulls_missing == 0)
            end_run(self, std::nullopt);
        },
        [=](caf::error& err) { end_run(self, std::move(err)); });
}

caf::timespan run_timeout(const session_state& st) {
  return phases_limit(st.sinks.timeouts, st.job.epochs * 2 + 1);
}

caf::result<training_result> start_run(session_pointer self) {
  auto& st = self->state;
  if (st.running)
    return make_error(errc::bad_request, "training session: a run is already in progress");
  try {
    spawn_job(self->system(), st.job, st.sinks, *st.run);
  } catch (const std::exception& e) {
    st.run->shut_down();
    *st.run = run_actors{};
    return make_error(classify_exception(e), e.what());
  }
  st.running = true;
  st.result = training_result{};
  st.promise = self->make_response_promise<training_result>();
  for (auto& [a, name] : st.run->part.spawned)
    self->monitor(a);
  self->request(st.run->part.coordinator, run_timeout(st), run_atom::value)
    .then(
      [=](training_result& r) {
        self->state.result = std::move(r);
        collect_weights(self);
      },
      [=](caf::error& err) { end_run(self, std::move(err)); });
  return st.promise;
}

void on_down(session_pointer self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (!st.running)
    return;
  for (auto& [a, name] : st.run->part.spawned) {
    if (a.address() != msg.source)
      continue;
    // An actor that failed with a troupe error is the root cause: pass it on as it is.
    if (msg.reason && msg.reason.category() == error_category)
      return end_run(self, msg.reason);
    return end_run(self, make_error(errc::peer_down, "training session: " + name + " terminated ("
                                                       + caf::to_string(msg.reason) + ")"));
  }
}

training_session_actor::behavior_type session(session_pointer self, training_job job,
                                              session_sinks sinks) {
  self->state.job = std::move(job);
  self->state.sinks = std::move(sinks);
  self->set_down_handler([=](caf::down_msg& msg) { on_down(self, msg); });
  // Whatever ends the session ends its run's actors too.
  self->attach_functor([run = self->state.run] { run->shut_down(); });
  return {
    [=](run_atom) -> caf::result<training_result> { return start_run(self); },
  };
}

} // namespace

training_session_actor spawn_training_session(caf::actor_system& system, training_job job,
                                              session_sinks sinks) {
  check_job(job);
  if (sinks.timeouts.step <= caf::timespan{0} || sinks.timeouts.phase <= caf::timespan{0})
    throw std::invalid_argument("training session: request timeouts must be positive");
  return system.spawn<caf::detached>(session, std::move(job), std::move(sinks));
}

training_result run_training(caf::actor_system& system, const training_job& job,
                             const session_output& output,
                             const std::vector<compute_device>& devices,
                             const request_timeouts& timeouts) {
  session_sinks sinks;
  sinks.output = output;
  sinks.devices = devices;
  sinks.timeouts = timeouts;
  auto session = spawn_training_session(system, job, sinks);
  caf::scoped_actor self{system};
  training_result result;
  caf::error failure;
  const auto limit = phases_limit(sinks.timeouts, job.epochs * 2 + 2);
  self->request(session, limit, run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  self->send_exit(session, caf::exit_reason::user_shutdown);
  if (failure)
    throw troupe_error(troupe_code(failure), error_text(failure));
  return result;
}

} // namespace troupe
