// Implementation notes: the session actor does a run's set-up (open data, build replicas,
// spawn) inside its `run` handler, then only reacts: the coordinator's answer, the shards'
// final weights, and down messages of the actors it spawned. Every actor of a run is
// monitored; the first one to terminate during the run ends it (its own troupe error when it
// failed with one, else errc::peer_down naming it). All actors of a run are sent an exit when
// the run ends, whatever the outcome, and when the session itself terminates.
#include <troupe/actors/training_session.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/loader_actor.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

// Everything one run spawned, and what the end of the run needs.
struct run_actors {
  std::vector<std::pair<caf::actor, std::string>> spawned;  // handle, name for errors
  std::vector<shard_route> shards;
  std::vector<std::string> parameter_names;
  std::vector<shape_t> parameter_shapes;
  coordinator_actor coordinator;
  std::uint64_t plan_hash = 0;

  template <class Handle>
  Handle add(Handle h, std::string name) {
    spawned.emplace_back(caf::actor_cast<caf::actor>(h), std::move(name));
    return h;
  }
  void shut_down() {
    for (auto& [a, name] : spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    spawned.clear();
  }
};

metrics_options make_metrics_options(const training_job& job, const session_output& output) {
  metrics_options m;
  m.out = output.log;
  m.display_batches = output.log ? output.display_batches : 0;
  m.progress_bar = output.log && output.progress_bar;
  m.expect_validation = job.validate;
  m.jsonl_path = output.metrics_path;
  m.tags = {{"network", job.model.network},
            {"dataset", job.train_data.name},
            {"batch_size", std::to_string(job.train_batches.batch_size)}};
  return m;
}

// Opens the data, builds one replica per worker and spawns every actor of the job. Throws
// (io_error, std::invalid_argument, ...) on bad input; actors spawned before the throw are
// shut down first.
void spawn_job(caf::actor_system& system, const training_job& job, const session_sinks& sinks,
               run_actors& run) {
  const auto& topo = job.topology;
  auto train_set = open_dataset(job.train_data);
  auto validation_set = open_dataset(job.validation_data);
  std::vector<std::shared_ptr<const batch_source>> parts;
  for (int w = 0; w < topo.workers; ++w) {
    auto b = job.train_batches;
    b.part = w;
    b.parts = topo.workers;
    parts.push_back(std::make_shared<const batch_source>(train_set, b));
  }
  auto validation_source = std::make_shared<const batch_source>(validation_set,
                                                                job.validation_batches);
  // Synchronous topologies need every worker to take the same number of steps.
  std::int64_t steps = parts.front()->batches_per_epoch();
  for (auto& p : parts)
    steps = synchronous(topo.mode) ? std::min(steps, p->batches_per_epoch())
                                   : std::max(steps, p->batches_per_epoch());
  auto spec = job.model;
  spec.sample_shape = train_set->sample_shape();
  spec.classes = train_set->classes();
  // The shards start from a model of their own built from the job's seed, so their start
  // values never depend on which process holds a replica.
  auto reference = build_model(spec);
  std::vector<std::unique_ptr<model>> replicas;
  for (int w = 0; w < topo.workers; ++w)
    replicas.push_back(build_model(spec));
  auto& parameters = reference->parameters();
  std::vector<std::int64_t> sizes;
  for (const auto* p : parameters) {
    sizes.push_back(p->value.numel());
    run.parameter_names.push_back(p->name);
    run.parameter_shapes.push_back(p->value.shape());
  }
  const auto plan = plan_keys(sizes, job.shards, topo.keys);
  if (auto* log = sinks.output.log)
    *log << "Start training " << reference->name() << " (" << reference->parameter_count()
         << " parameters) on " << train_set->description() << ": " << train_set->size()
         << " examples, " << topo.workers << " worker(s) x " << steps << " batches of "
         << job.train_batches.batch_size << "; validation on " << validation_set->description()
         << " (" << validation_set->size() << " examples); " << plan.shards.size()
         << " parameter shard(s), " << plan.groups.size() << " push(es) per step"
         << (topo.overlap ? " during backward" : " after backward") << std::endl;

  auto metrics = sinks.metrics;
  if (!metrics)
    metrics = run.add(spawn_metrics(system, make_metrics_options(job, sinks.output)), "metrics");
  run.shards = spawn_shards(system, plan, parameters,
                            shard_options{job.optimizer.sgd, job.optimizer.schedule}, topo);
  for (std::size_t k = 0; k < run.shards.size(); ++k)
    run.add(run.shards[k].shard, "shard_" + std::to_string(k));
  std::vector<caf::actor> aggregators;
  auto routes = route_workers(system, run.shards, topo, aggregators, sinks.timeouts);
  for (std::size_t i = 0; i < aggregators.size(); ++i)
    run.add(aggregators[i], "aggregator_" + std::to_string(i));
  loader_options loader;
  loader.prefetch_depth = job.prefetch_depth;
  auto validation_loader = run.add(spawn_loader(system, validation_source, loader),
                                   "validation_loader");
  std::vector<compute_actor> computes;
  for (int w = 0; w < topo.workers; ++w) {
    auto loader_opts = loader;
    if (synchronous(topo.mode))
      loader_opts.max_batches_per_epoch = steps;
    compute_wiring wiring;
    wiring.worker = w;
    wiring.train_loader = run.add(spawn_loader(system, parts[w], loader_opts),
                                  "loader_" + std::to_string(w));
    wiring.validation_loader = validation_loader;
    wiring.shards = std::move(routes[w]);
    if (sinks.tap)
      for (std::size_t k = 0; k < wiring.shards.size(); ++k)
        wiring.shards[k].shard = sinks.tap(wiring.shards[k].shard, tap_point{w, k});
    wiring.groups = plan.groups;
    wiring.overlap = topo.overlap;
    wiring.metrics = metrics;
    wiring.batches_per_epoch = steps;
    wiring.timeouts = sinks.timeouts;
    if (w == topo.straggler)
      wiring.straggle = std::chrono::milliseconds(topo.straggle_ms);
    computes.push_back(run.add(spawn_compute(system, std::move(replicas[w]), std::move(wiring),
                                             sinks.compute),
                               "compute_" + std::to_string(w)));
  }
  // Backup workers: an epoch is over once the workers a step needs have finished theirs.
  const std::size_t finish_after = topo.mode == topology_kind::backup
                                     ? static_cast<std::size_t>(topo.workers - topo.backup_workers)
                                     : 0;
  coordinator_options co{job.epochs, 0, job.validate, job.validate_every, finish_after,
                         sinks.timeouts};
  run.coordinator = run.add(spawn_coordinator(system, computes, metrics, co), "coordinator");
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
  st.pulls_missing = st.run->shards.size();
  for (std::size_t r = 0; r < st.run->shards.size(); ++r)
    self->request(st.run->shards[r].shard, st.sinks.timeouts.step, pull_atom::value)
      .then(
        [=](weight_set& ws) {
          auto& s = self->state;
          if (!s.running)
            return;
          const auto& route = s.run->shards[r];
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
  const auto phases = std::min<std::int64_t>(st.job.epochs * 2 + 1, 1 << 20);
  return st.sinks.timeouts.phase * phases;
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
  for (auto& [a, name] : st.run->spawned)
    self->monitor(a);
  self->request(st.run->coordinator, run_timeout(st), run_atom::value)
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
  for (auto& [a, name] : st.run->spawned) {
    if (a.address() != msg.source)
      continue;
    // An actor that failed with a troupe error is the root cause: pass it on as it is.
    if (msg.reason && msg.reason.category() == error_category)
      return end_run(self, msg.reason);
    return end_run(self, make_error(errc::peer_down, "training session: " + name
                                                       + " terminated ("
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
                             const session_output& output) {
  session_sinks sinks;
  sinks.output = output;
  auto session = spawn_training_session(system, job, sinks);
  caf::scoped_actor self{system};
  training_result result;
  caf::error failure;
  const auto limit = sinks.timeouts.phase * (std::min<std::int64_t>(job.epochs, 1 << 20) * 2 + 2);
  self->request(session, limit, run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  self->send_exit(session, caf::exit_reason::user_shutdown);
  if (failure)
    throw troupe_error(troupe_code(failure), error_text(failure));
  return result;
}

} // namespace troupe
