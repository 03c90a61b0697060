// Implementation notes: the caller's thread blocks on a scoped actor until the coordinator
// answers; every actor spawned here is linked to nothing and is shut down explicitly at the
// end, so a failed run leaves no actor behind to hang the actor system's destructor.
#include "actors/training_session.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include <caf/all.hpp>

#include "actors/actor_errors.hpp"
#include "actors/aggregator_actor.hpp"
#include "actors/compute_actor.hpp"
#include "actors/coordinator_actor.hpp"
#include "actors/metrics_actor.hpp"

namespace troupe {

namespace {

bool synchronous(sync_mode mode) {
  return mode == sync_mode::bsp || mode == sync_mode::backup || mode == sync_mode::hierarchical;
}

std::vector<shard_route> spawn_shards(caf::actor_system& system, model& m,
                                      const training_options& options) {
  std::vector<std::int64_t> sizes;
  for (auto* p : m.parameters())
    sizes.push_back(p->value.numel());
  auto shard_opts = options.optimizer;
  shard_opts.workers = options.topology.workers;
  shard_opts.staleness = options.topology.mode == sync_mode::ssp ? options.topology.staleness : -1;
  std::vector<shard_route> routes;
  for (auto& slots : assign_keys(sizes, options.shards)) {
    std::vector<shard_key> keys;
    for (auto slot : slots) {
      auto* p = m.parameters()[slot];
      keys.push_back(shard_key{p->name, p->value, p->weight_decay});
    }
    routes.push_back(shard_route{spawn_param_shard(system, std::move(keys), shard_opts), slots, 0});
  }
  return routes;
}

// The first worker of machine m when `workers` are spread evenly over `machines`.
int first_worker_of(int machine, int workers, int machines) {
  return static_cast<int>(static_cast<std::int64_t>(machine) * workers / machines);
}

// Each worker's routes: straight to the shards (async, ssp), through one aggregator per shard
// (bsp, backup), or through per-machine aggregators into a global one (hierarchical).
std::vector<std::vector<shard_route>> route_workers(caf::actor_system& system,
                                                    const std::vector<shard_route>& shards,
                                                    const topology_options& t,
                                                    std::vector<caf::actor>& spawned) {
  const int n = t.workers;
  std::vector<std::vector<shard_route>> routes(static_cast<std::size_t>(n));
  for (const auto& shard : shards) {
    if (!synchronous(t.mode)) {
      for (int w = 0; w < n; ++w)
        routes[w].push_back(shard_route{shard.shard, shard.slots, w});
      continue;
    }
    const int machines = t.mode == sync_mode::hierarchical ? std::clamp(t.machines, 1, n) : 1;
    aggregator_options top{t.mode == sync_mode::hierarchical ? machines : n, 0, t.deterministic, 0};
    if (t.mode == sync_mode::backup)
      top.need = n - t.backup_workers;
    auto global = spawn_aggregator(system, shard.shard, top);
    spawned.push_back(global);
    for (int m = 0; m < machines; ++m) {
      const int begin = first_worker_of(m, n, machines), end = first_worker_of(m + 1, n, machines);
      caf::actor front = global;
      if (t.mode == sync_mode::hierarchical) {
        front = spawn_aggregator(system, global,
                                 aggregator_options{end - begin, 0, t.deterministic, m});
        spawned.push_back(front);
      }
      for (int w = begin; w < end; ++w)
        routes[w].push_back(shard_route{front, shard.slots, machines > 1 ? w - begin : w});
    }
  }
  return routes;
}

// Pulls every shard's weights into result.final_weights, by parameter slot.
caf::error collect_weights(caf::scoped_actor& self, const std::vector<shard_route>& shards,
                           const std::vector<std::string>& names, training_result& result) {
  result.parameter_names = names;
  result.final_weights.assign(names.size(), tensor{});
  caf::error failure;
  for (const auto& route : shards)
    self->request(route.shard, caf::infinite, pull_atom::value)
      .receive(
        [&](weight_set& ws) {
          for (std::size_t i = 0; i < route.slots.size() && i < ws.weights.size(); ++i)
            result.final_weights[route.slots[i]] = ws.weights[i];
        },
        [&](caf::error& err) { failure = std::move(err); });
  return failure;
}

void check_topology(const topology_options& t) {
  if (t.workers < 1)
    throw std::invalid_argument("topology: workers must be at least 1, got "
                                + std::to_string(t.workers));
  if (t.mode == sync_mode::backup && (t.backup_workers < 0 || t.backup_workers >= t.workers))
    throw std::invalid_argument("topology: backup(" + std::to_string(t.backup_workers)
                                + ") needs 0 <= backups < workers (" + std::to_string(t.workers)
                                + ")");
  if (t.mode == sync_mode::ssp && t.staleness < 0)
    throw std::invalid_argument("topology: ssp staleness must not be negative");
  if (t.mode == sync_mode::hierarchical && (t.machines < 1 || t.machines > t.workers))
    throw std::invalid_argument("topology: hierarchical needs 1 <= machines <= workers, got "
                                + std::to_string(t.machines) + " machines for "
                                + std::to_string(t.workers) + " workers");
}

metrics_options make_metrics_options(const training_options& options, std::ostream& sink) {
  metrics_options m;
  m.out = options.log ? options.log : &sink;
  m.display_batches = options.log ? options.display_batches : 0;
  m.progress_bar = options.log && options.progress_bar;
  m.expect_validation = options.validate;
  m.jsonl_path = options.metrics_path;
  m.tags = {{"network", options.model.network},
            {"dataset", options.train_data.name},
            {"batch_size", std::to_string(options.train_batches.batch_size)}};
  return m;
}

} // namespace

training_result run_training(caf::actor_system& system, const training_options& options) {
  // Everything that can fail on bad input happens before the first spawn.
  const auto& topo = options.topology;
  check_topology(topo);
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
  if (options.log)
    *options.log << "Start training " << replicas.front()->name() << " ("
                 << replicas.front()->parameter_count() << " parameters) on "
                 << train_set->description() << ": " << train_set->size() << " examples, "
                 << topo.workers << " worker(s) x " << steps << " batches of "
                 << options.train_batches.batch_size << "; validation on "
                 << validation_set->description() << " (" << validation_set->size()
                 << " examples); " << options.shards << " parameter shard(s)" << std::endl;
  std::ostringstream discard;
  auto metrics = spawn_metrics(system, make_metrics_options(options, discard));

  std::vector<caf::actor> all{metrics};
  std::vector<std::string> parameter_names;
  for (auto* p : replicas.front()->parameters())
    parameter_names.push_back(p->name);
  auto shards = spawn_shards(system, *replicas.front(), options);
  for (auto& r : shards)
    all.push_back(r.shard);
  auto routes = route_workers(system, shards, topo, all);
  auto validation_loader = spawn_loader(system, validation_source, options.loader);
  all.push_back(validation_loader);
  std::vector<caf::actor> computes;
  for (int w = 0; w < topo.workers; ++w) {
    auto loader_opts = options.loader;
    if (synchronous(topo.mode))
      loader_opts.max_batches_per_epoch = steps;
    compute_wiring wiring;
    wiring.worker = w;
    wiring.train_loader = spawn_loader(system, parts[w], loader_opts);
    wiring.validation_loader = validation_loader;
    wiring.shards = std::move(routes[w]);
    wiring.metrics = metrics;
    wiring.batches_per_epoch = steps;
    if (w == topo.straggler)
      wiring.straggle = std::chrono::milliseconds(topo.straggle_ms);
    all.push_back(wiring.train_loader);
    computes.push_back(spawn_compute(system, std::move(replicas[w]), wiring));
    all.push_back(computes.back());
  }
  auto coordinator = spawn_coordinator(system, computes, metrics,
                                       coordinator_options{options.epochs, 0, options.validate});
  all.push_back(coordinator);

  caf::scoped_actor self{system};
  training_result result;
  caf::error failure;
  self->request(coordinator, caf::infinite, run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  if (!failure)
    failure = collect_weights(self, shards, parameter_names, result);
  for (auto& a : all)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  if (failure)
    throw std::runtime_error(error_text(failure));
  return result;
}

} // namespace troupe
