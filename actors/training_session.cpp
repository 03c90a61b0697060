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
  std::vector<std::pair<caf::actor, std::string>> spawned;  // handle, plan name for errors
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

// Builds the wiring report from the handles actually handed out: every route is looked up by
// the address of the actor it was given, so a wiring that strays from the plan shows.
class wiring_recorder {
public:
  void actor(const caf::actor& a, const planned_actor& entry) {
    names_[a.address()] = entry.name;
    report_.actors.push_back({entry.name, entry.role});
  }
  template <class From, class To>
  void route(const From& from, const To& to, route_carries carries) {
    report_.routes.push_back({name_of(caf::actor_cast<caf::actor>(from)),
                              name_of(caf::actor_cast<caf::actor>(to)), carries});
  }
  void downstream(const caf::actor& from, const caf::actor& to) { down_[from.address()] = to; }
  // Weights come back along the push chain from the shard at its end.
  void weights(const caf::actor& pushed_to, const caf::actor& compute) {
    caf::actor at = pushed_to;
    for (auto d = down_.find(at.address()); d != down_.end(); d = down_.find(at.address()))
      at = d->second;
    route(at, compute, route_carries::weights);
  }
  wiring_report& report() { return report_; }

private:
  std::string name_of(const caf::actor& a) const {
    auto it = names_.find(a.address());
    return it == names_.end() ? "tap" : it->second;
  }
  std::map<caf::actor_addr, std::string> names_;
  std::map<caf::actor_addr, caf::actor> down_;
  wiring_report report_;
};

// Opens the data, plans the run, builds one replica per worker and spawns every actor the plan
// lists, in its order. Throws (io_error, placement_error, ...) on bad input; the caller shuts
// down whatever was spawned before the throw.
void spawn_job(caf::actor_system& system, const training_job& job, const session_sinks& sinks,
               run_actors& run) {
  auto train_set = open_dataset(job.train_data);
  auto validation_set = open_dataset(job.validation_data);
  const auto plan = plan_placement(job, data_facts_of(*train_set, *validation_set));
  run.plan_hash = plan.hash;
  auto spec = job.model;
  spec.sample_shape = train_set->sample_shape();
  spec.classes = train_set->classes();
  // The shards start from a model of their own built from the job's seed, so their start
  // values never depend on which process holds a replica.
  auto reference = build_model(spec);
  std::vector<tensor> initial;
  for (const auto* p : reference->parameters()) {
    initial.push_back(p->value);
    run.parameter_names.push_back(p->name);
    run.parameter_shapes.push_back(p->value.shape());
  }
  if (auto* log = sinks.output.log)
    *log << "Start training " << reference->name() << " (" << plan.parameter_count
         << " parameters) on " << train_set->description() << ": " << train_set->size()
         << " examples, " << plan.workers << " worker(s) x " << plan.steps_per_epoch
         << " batches of " << plan.train_batch << "; validation on "
         << validation_set->description() << " (" << validation_set->size() << " examples); "
         << plan.keys.shards.size() << " parameter shard(s), " << plan.pushes_per_step
         << " push(es) per step" << (plan.overlap ? " during backward" : " after backward")
         << "; plan " << std::hex << plan.hash << std::dec << std::endl;

  wiring_recorder wired;
  wired.report().plan_hash = plan.hash;
  auto record = [&](const caf::actor& a, const planned_actor& entry) {
    run.add(a, entry.name);
    wired.actor(a, entry);
  };
  metrics_sink_actor metrics = sinks.metrics;
  const auto& metrics_entry = plan.actors.at(plan.actor(plan_role::metrics, 0));
  if (!metrics)
    metrics = spawn_metrics(system, make_metrics_options(job, sinks.output));
  record(caf::actor_cast<caf::actor>(metrics), metrics_entry);
  auto targets = spawn_push_side(system, plan, initial, job.optimizer, sinks.timeouts,
                                 [&](const caf::actor& a, const planned_actor& entry,
                                     const caf::actor& downstream) {
                                   record(a, entry);
                                   if (downstream) {
                                     wired.downstream(a, downstream);
                                     wired.route(a, downstream, route_carries::summed_gradients);
                                   }
                                 });
  run.shards = shard_routes(plan, targets);
  if (sinks.metrics)  // the host's sink is not ours to shut down
    run.spawned.erase(run.spawned.begin());

  std::vector<loader_actor> loaders(plan.actors.size());
  // One compute per validation loader validates (BSP replicas are equal; a split validation
  // set is covered once): the first compute each loader serves, by worker.
  auto validators_of = [](const placement_plan& p) {
    std::vector<std::size_t> validators;
    for (auto v : p.actors_of(plan_role::validation_loader))
      for (auto r : p.routes_from(v))
        if (p.routes[r].carries == route_carries::validation_batches) {
          validators.push_back(static_cast<std::size_t>(p.actors[p.routes[r].to].worker));
          break;
        }
    return validators;
  };
  std::vector<compute_actor> computes;
  loader_options loader;
  loader.prefetch_depth = job.prefetch_depth;
  auto loader_of = [&](std::size_t compute, route_carries carries) {
    for (auto r : plan.routes_to(compute))
      if (plan.routes[r].carries == carries)
        return loaders.at(plan.routes[r].from);
    throw std::invalid_argument("session: the plan gives " + plan.actors[compute].name
                                + " no " + to_string(carries) + " route");
  };
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    const auto& a = plan.actors[i];
    if (a.role == plan_role::validation_loader || a.role == plan_role::loader) {
      auto options = loader;
      std::shared_ptr<const batch_source> source;
      if (a.role == plan_role::validation_loader) {
        auto b = job.validation_batches;
        b.part = a.index;  // a cluster's validation loaders each take one part
        b.parts = static_cast<int>(plan.actors_of(plan_role::validation_loader).size());
        source = std::make_shared<const batch_source>(validation_set, b);
      } else {
        auto b = job.train_batches;
        b.part = a.worker;
        b.parts = plan.workers;
        source = std::make_shared<const batch_source>(train_set, b);
        options.max_batches_per_epoch = a.batch_limit;
      }
      loaders[i] = spawn_loader(system, source, options);
      record(caf::actor_cast<caf::actor>(loaders[i]), a);
    } else if (a.role == plan_role::compute) {
      compute_wiring wiring;
      wiring.worker = a.worker;
      wiring.train_loader = loader_of(i, route_carries::batches);
      wiring.validation_loader = loader_of(i, route_carries::validation_batches);
      wiring.shards = routes_of(plan, targets, a.worker);
      if (sinks.tap)
        for (std::size_t k = 0; k < wiring.shards.size(); ++k)
          wiring.shards[k].shard = sinks.tap(wiring.shards[k].shard, tap_point{a.worker, k});
      wiring.groups = plan.keys.groups;
      wiring.overlap = plan.overlap;
      wiring.metrics = metrics;
      wiring.batches_per_epoch = plan.steps_per_epoch;
      wiring.timeouts = sinks.timeouts;
      if (a.worker == job.topology.straggler)
        wiring.straggle = std::chrono::milliseconds(job.topology.straggle_ms);
      auto routes = wiring.shards;
      auto train_loader = wiring.train_loader, validation_loader = wiring.validation_loader;
      computes.push_back(spawn_compute(system, build_model(spec), std::move(wiring),
                                       sinks.compute));
      const auto c = caf::actor_cast<caf::actor>(computes.back());
      record(c, a);
      wired.route(train_loader, c, route_carries::batches);
      wired.route(validation_loader, c, route_carries::validation_batches);
      for (const auto& route : routes) {
        wired.route(c, route.shard, route_carries::gradients);
        wired.weights(caf::actor_cast<caf::actor>(route.shard), c);
      }
      wired.route(c, metrics, route_carries::reports);
    } else if (a.role == plan_role::coordinator) {
      coordinator_options co{job.epochs, 0, job.validate, job.validate_every,
                             static_cast<std::size_t>(a.finish_after), sinks.timeouts,
                             validators_of(plan)};
      run.coordinator = spawn_coordinator(system, computes, metrics, co);
      record(caf::actor_cast<caf::actor>(run.coordinator), a);
      for (auto& c : computes)
        wired.route(run.coordinator, c, route_carries::control);
      wired.route(run.coordinator, metrics, route_carries::reports);
    }
  }
  if (sinks.on_wired)
    sinks.on_wired(wired.report());
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
