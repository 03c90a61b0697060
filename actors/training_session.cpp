// Implementation notes: the caller's thread blocks on a scoped actor until the coordinator
// answers; every actor spawned here is linked to nothing and is shut down explicitly at the
// end, so a failed run leaves no actor behind to hang the actor system's destructor.
#include <troupe/actors/training_session.hpp>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/coordinator_actor.hpp>
#include <troupe/actors/metrics_actor.hpp>

namespace troupe {

namespace {

// Pulls every shard's weights into result.final_weights, by parameter slot: whole keys by
// handle, slices copied into one tensor of the parameter's shape.
caf::error collect_weights(caf::scoped_actor& self, const std::vector<shard_route>& shards,
                           const std::vector<std::string>& names,
                           const std::vector<shape_t>& shapes, training_result& result) {
  result.parameter_names = names;
  result.final_weights.clear();
  for (const auto& shape : shapes)
    result.final_weights.emplace_back(shape);
  caf::error failure;
  for (const auto& route : shards)
    self->request(route.shard, caf::infinite, pull_atom::value)
      .receive(
        [&](weight_set& ws) {
          for (std::size_t i = 0; i < ws.keys.size() && i < ws.weights.size(); ++i) {
            if (ws.keys[i] >= route.keys.size())
              continue;
            const auto& key = route.keys[ws.keys[i]];
            place_key(result.final_weights[key.slot], key, ws.weights[i]);
          }
        },
        [&](caf::error& err) { failure = std::move(err); });
  return failure;
}

metrics_options make_metrics_options(const training_job& options, const session_output& output,
                                     std::ostream& sink) {
  metrics_options m;
  m.out = output.log ? output.log : &sink;
  m.display_batches = output.log ? output.display_batches : 0;
  m.progress_bar = output.log && output.progress_bar;
  m.expect_validation = options.validate;
  m.jsonl_path = output.metrics_path;
  m.tags = {{"network", options.model.network},
            {"dataset", options.train_data.name},
            {"batch_size", std::to_string(options.train_batches.batch_size)}};
  return m;
}

} // namespace

training_result run_training(caf::actor_system& system, const training_job& options,
                             const session_output& output) {
  // Everything that can fail on bad input happens before the first spawn.
  const auto& topo = options.topology;
  check_job(options);
  auto train_set = open_dataset(options.train_data);
  auto validation_set = open_dataset(options.validation_data);
  std::vector<std::shared_ptr<const batch_source>> parts;
  for (int w = 0; w < topo.workers; ++w) {
    auto b = options.train_batches;
    b.part = w;
    b.parts = topo.workers;
    parts.push_back(std::make_shared<const batch_source>(train_set, b));
  }
  auto validation_source = std::make_shared<const batch_source>(validation_set,
                                                                options.validation_batches);
  // Synchronous topologies need every worker to take the same number of steps.
  std::int64_t steps = parts.front()->batches_per_epoch();
  for (auto& p : parts)
    steps = synchronous(topo.mode) ? std::min(steps, p->batches_per_epoch())
                                   : std::max(steps, p->batches_per_epoch());
  auto spec = options.model;
  spec.sample_shape = train_set->sample_shape();
  spec.classes = train_set->classes();
  std::vector<std::unique_ptr<model>> replicas;
  for (int w = 0; w < topo.workers; ++w)
    replicas.push_back(build_model(spec));
  lr_schedule check_schedule(options.optimizer.schedule);
  auto& parameters = replicas.front()->parameters();
  std::vector<std::int64_t> sizes;
  std::vector<std::string> parameter_names;
  std::vector<shape_t> parameter_shapes;  // the replicas move into their actors below
  for (const auto* p : parameters) {
    sizes.push_back(p->value.numel());
    parameter_names.push_back(p->name);
    parameter_shapes.push_back(p->value.shape());
  }
  const auto plan = plan_keys(sizes, options.shards, topo.keys);
  if (output.log)
    *output.log << "Start training " << replicas.front()->name() << " ("
                 << replicas.front()->parameter_count() << " parameters) on "
                 << train_set->description() << ": " << train_set->size() << " examples, "
                 << topo.workers << " worker(s) x " << steps << " batches of "
                 << options.train_batches.batch_size << "; validation on "
                 << validation_set->description() << " (" << validation_set->size()
                 << " examples); " << plan.shards.size() << " parameter shard(s), "
                 << plan.groups.size() << " push(es) per step"
                 << (topo.overlap ? " during backward" : " after backward") << std::endl;
  std::ostringstream discard;
  auto metrics = spawn_metrics(system, make_metrics_options(options, output, discard));

  std::vector<caf::actor> all{metrics};
  auto shards = spawn_shards(system, plan, parameters, shard_options{options.optimizer.sgd, options.optimizer.schedule}, topo);
  for (auto& r : shards)
    all.push_back(r.shard);
  auto routes = route_workers(system, shards, topo, all);
  loader_options loader;
  loader.prefetch_depth = options.prefetch_depth;
  auto validation_loader = spawn_loader(system, validation_source, loader);
  all.push_back(validation_loader);
  std::vector<caf::actor> computes;
  for (int w = 0; w < topo.workers; ++w) {
    auto loader_opts = loader;
    if (synchronous(topo.mode))
      loader_opts.max_batches_per_epoch = steps;
    compute_wiring wiring;
    wiring.worker = w;
    wiring.train_loader = spawn_loader(system, parts[w], loader_opts);
    wiring.validation_loader = validation_loader;
    wiring.shards = std::move(routes[w]);
    wiring.groups = plan.groups;
    wiring.overlap = topo.overlap;
    wiring.metrics = metrics;
    wiring.batches_per_epoch = steps;
    if (w == topo.straggler)
      wiring.straggle = std::chrono::milliseconds(topo.straggle_ms);
    all.push_back(wiring.train_loader);
    computes.push_back(spawn_compute(system, std::move(replicas[w]), wiring));
    all.push_back(computes.back());
  }
  // Backup workers: an epoch is over once the workers a step needs have finished theirs.
  const std::size_t finish_after = topo.mode == topology_kind::backup
                                     ? static_cast<std::size_t>(topo.workers - topo.backup_workers)
                                     : 0;
  auto coordinator = spawn_coordinator(system, computes, metrics,
                                       coordinator_options{options.epochs, 0, options.validate,
                                                           options.validate_every, finish_after});
  all.push_back(coordinator);

  caf::scoped_actor self{system};
  training_result result;
  caf::error failure;
  self->request(coordinator, caf::infinite, run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  if (!failure)
    failure = collect_weights(self, shards, parameter_names, parameter_shapes, result);
  for (auto& a : all)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  if (failure)
    throw std::runtime_error(error_text(failure));
  return result;
}

} // namespace troupe
