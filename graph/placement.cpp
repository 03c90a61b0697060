// Planning runs in four passes, each filling its part of the plan: the model and its keys,
// the steps, the actors (in spawn order), the routes. Every figure a route carries comes from
// the key plan of the model that was built here, so the printed plan and the running session
// cannot disagree. The hash is taken last, over canonical_text, which renders every decided
// value as integers and names in a fixed order.
#include <troupe/graph/placement.hpp>

#include <algorithm>
#include <locale>
#include <map>
#include <memory>
#include <sstream>

#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/synthetic.hpp>

namespace troupe {

namespace {

[[noreturn]] void fail(placement_subject subject, const std::string& what) {
  throw placement_error(subject, "plan: " + what);
}

// Machine m of M holds workers [m*W/M, (m+1)*W/M), as actors/topology_wiring.cpp spawns them.
int first_worker_of(int machine, int workers, int machines) {
  return static_cast<int>(static_cast<std::int64_t>(machine) * workers / machines);
}

int machine_of(int rank, int workers, int machines) {
  int m = 0;
  while (first_worker_of(m + 1, workers, machines) <= rank)
    ++m;
  return m;
}

// Builds the model once to size the parameters.
void plan_model(const training_job& job, const data_facts& data, placement_plan& p) {
  auto spec = job.model;
  spec.sample_shape = data.sample_shape;
  spec.classes = data.classes;
  std::unique_ptr<model> m;
  try {
    m = build_model(spec);
  } catch (const std::exception& e) {
    throw placement_error(placement_subject::model, e.what()); // the zoo's words, unprefixed
  }
  if (job.top_k > data.classes)
    fail(placement_subject::job, "top_k " + std::to_string(job.top_k) + " is above the "
                                   + std::to_string(data.classes) + " classes");
  p.parameter_count = m->parameter_count();
  const auto work = m->forward_work_by_slot();
  for (const auto* param : m->parameters())
    p.parameters.push_back({param->name, param->value.shape(), param->value.numel(),
                            param->weight_decay, work.at(p.parameters.size())});
}

// The key plan over p.parameters, its named keys and the shards' loads.
void plan_key_table(const training_job& job, placement_plan& p) {
  std::vector<std::int64_t> sizes;
  const bool count = p.parameter_count == 0; // given parameters: all trainable
  for (const auto& param : p.parameters) {
    sizes.push_back(param.numel);
    if (count)
      p.parameter_count += param.numel;
  }
  try {
    // A cluster has at least one shard per server process: `launch -s 2` with a config of one
    // shard spreads the keys over two rather than leaving a server empty. The sums and updates
    // are element-wise, so the weights do not depend on the shard count.
    p.keys = plan_keys(sizes, std::max(job.shards, job.nodes.servers), job.topology.keys);
  } catch (const std::invalid_argument& e) {
    fail(placement_subject::job, e.what());
  }
  std::map<std::size_t, std::int64_t> slices; // slot -> slices, for cut parameters
  for (std::size_t k = 0; k < p.keys.shards.size(); ++k) {
    shard_load load;
    for (std::size_t i = 0; i < p.keys.shards[k].size(); ++i) {
      const auto& key = p.keys.shards[k][i];
      p.key_table.push_back({k, i, key, key_name(p.parameters[key.slot].name, key)});
      load.bytes += key.length * 4;
      if (!key.whole)
        ++slices[key.slot];
    }
    load.keys = static_cast<std::int64_t>(p.keys.shards[k].size());
    p.keys_per_step += load.keys;
    p.shard_loads.push_back(load);
  }
  for (const auto& group : p.keys.groups)
    ++p.shard_loads[group.shard].pushes;
  p.pushes_per_step = static_cast<std::int64_t>(p.keys.groups.size());
  for (const auto& [slot, count] : slices)
    p.sliced.push_back({p.parameters[slot].name, p.parameters[slot].numel * 4, count});
}

// Batches per worker and per validation pass, as the session's batch sources will count them.
void plan_steps(const training_job& job, const data_facts& data, placement_plan& p) {
  const int workers = job.topology.workers;
  p.worker_batches.assign(static_cast<std::size_t>(workers), 0);
  try {
    if (data.train_examples > 0) {
      for (int w = 0; w < workers; ++w) {
        const auto b =
          batches_for_part(data.train_examples, p.train_batch, w, workers, p.drop_last);
        if (b == 0)
          fail(placement_subject::data,
               "compute " + std::to_string(w) + " of " + std::to_string(workers) + " gets "
                 + std::to_string(examples_in_part(data.train_examples, w, workers)) + " of the "
                 + std::to_string(data.train_examples) + " training examples: no batch of "
                 + std::to_string(p.train_batch) + (p.drop_last ? " (drop_last)" : ""));
        p.worker_batches[static_cast<std::size_t>(w)] = b;
      }
      const auto [low, high] =
        std::minmax_element(p.worker_batches.begin(), p.worker_batches.end());
      // Synchronous topologies need every worker to take the same number of steps.
      p.steps_per_epoch = p.synchronous() ? *low : *high;
    }
    if (data.validation_examples > 0) {
      p.validation_batches = batches_for_part(data.validation_examples, p.validation_batch, 0, 1,
                                              job.validation_batches.drop_last);
      if (p.validation_batches == 0)
        fail(placement_subject::data, "the " + std::to_string(data.validation_examples)
                                        + " validation examples hold no batch of "
                                        + std::to_string(p.validation_batch) + " (drop_last)");
    }
  } catch (const placement_error&) {
    throw;
  } catch (const std::invalid_argument& e) {
    fail(placement_subject::job, e.what());
  }
}

std::size_t add_actor(placement_plan& p, plan_role role, int index, std::string name) {
  planned_actor a;
  a.role = role;
  a.index = index;
  a.name = std::move(name);
  p.actors.push_back(std::move(a));
  return p.actors.size() - 1;
}

std::string numbered(const char* prefix, int i) {
  return prefix + std::to_string(i);
}

// A synchronous job with one worker and no machine level: each shard's sum would have one
// source and need it, and a sum of one is the identity. The plan leaves those aggregators
// out and the worker pushes straight to the shards (two hops and a thread wake-up fewer per
// push; the shard's answer is the same weights the aggregator would have passed back).
bool sums_one_source(const placement_plan& p) {
  return p.levels.size() == 1 && p.levels[0].scope == aggregation_scope::all && p.workers == 1;
}

// A level's need as the plan writes it: the sources when every one is needed.
int need_of(const aggregation_level& l, int sources) {
  return l.need > 0 && l.need < sources ? l.need : sources;
}

// When backup workers let an epoch end before every compute finished it. Without a machine
// level: once aggregate(all)'s need of computes finished. With one: once finish_machines
// machines each had finish_after of their computes finish (0: all of them), which is when
// every barrier of the last step has filled.
void plan_finish(placement_plan& p, planned_actor& coordinator,
                 const aggregation_level* machine_level, const aggregation_level* all_level) {
  if (!machine_level) {
    if (all_level && need_of(*all_level, p.workers) < p.workers)
      coordinator.finish_after = all_level->need;
    return;
  }
  const int smallest = p.workers / p.machines;
  const bool machine_backups = machine_level->need > 0 && machine_level->need < smallest;
  const bool global_backups = all_level && need_of(*all_level, p.machines) < p.machines;
  if (!machine_backups && !global_backups)
    return;
  coordinator.finish_after = machine_backups ? machine_level->need : 0;
  coordinator.finish_machines = global_backups ? all_level->need : p.machines;
}

// Every actor, in spawn order (see placement_plan::actors).
void plan_actors(const training_job& job, placement_plan& p) {
  const auto& t = job.topology;
  const int n = p.workers, machines = p.machines;
  const int shards = static_cast<int>(p.keys.shards.size());
  const auto* machine_level = find_level(p.levels, aggregation_scope::machine);
  const auto* all_level = find_level(p.levels, aggregation_scope::all);
  const bool hierarchical = machine_level != nullptr;
  add_actor(p, plan_role::metrics, 0, "metrics");
  std::size_t next_key = 0;
  for (int k = 0; k < shards; ++k) {
    auto& a = p.actors[add_actor(p, plan_role::shard, k, numbered("shard_", k))];
    a.shard = k;
    for (std::size_t i = 0; i < p.keys.shards[static_cast<std::size_t>(k)].size(); ++i)
      a.keys.push_back(next_key++);
    // The sources whose pushes it tells apart (for staleness): the machines when their
    // aggregators push to it, else the computes (behind aggregate(all) only its position 0
    // pushes, and the count is unused).
    a.workers = hierarchical && !all_level ? machines : n;
    a.staleness = t.staleness;
  }
  if (all_level && !sums_one_source(p)) {
    for (int k = 0; k < shards; ++k) {
      auto& a = p.actors[add_actor(p, plan_role::aggregator, k, numbered("aggregator_", k))];
      a.shard = k;
      a.sources = hierarchical ? machines : n;
      a.need = need_of(*all_level, a.sources);
      a.deterministic = t.deterministic;
    }
  }
  for (int m = 0; hierarchical && m < machines; ++m) {
    for (int k = 0; k < shards; ++k) {
      auto name = numbered("machine_aggregator_", m) + numbered("_", k);
      auto& a = p.actors[add_actor(p, plan_role::machine_aggregator, m * shards + k, name)];
      a.machine = m;
      a.shard = k;
      a.sources = first_worker_of(m + 1, n, machines) - first_worker_of(m, n, machines);
      a.need = need_of(*machine_level, a.sources);
      a.position = m;
      a.deterministic = t.deterministic;
    }
  }
  // A cluster validates on every worker process, each on its part of the validation set, so
  // no validation batch crosses the network; one process has one validation loader.
  const int validation_loaders = job.nodes.single_process() ? 1 : job.nodes.workers;
  for (int v = 0; v < validation_loaders; ++v) {
    auto& a = p.actors[add_actor(p, plan_role::validation_loader, v,
                                 validation_loaders == 1 ? std::string("validation_loader")
                                                         : numbered("validation_loader_", v))];
    a.batches = validation_loaders == 1 || p.data.validation_examples == 0
                  ? p.validation_batches
                  : batches_for_part(p.data.validation_examples, p.validation_batch, v,
                                     validation_loaders, job.validation_batches.drop_last);
    if (p.data.validation_examples > 0 && a.batches == 0)
      fail(placement_subject::data,
           "worker process " + std::to_string(v) + " of " + std::to_string(validation_loaders)
             + " gets no validation batch of " + std::to_string(p.validation_batch) + " from the "
             + std::to_string(p.data.validation_examples) + " validation examples");
  }
  for (auto role : {plan_role::loader, plan_role::compute}) {
    for (int w = 0; w < n; ++w) {
      auto& a = p.actors[add_actor(p, role, w, std::string(to_string(role)) + numbered("_", w))];
      a.rank = w;
      a.machine = hierarchical ? machine_of(w, n, machines) : -1;
      if (role == plan_role::loader) {
        a.batches = p.worker_batches[static_cast<std::size_t>(w)];
        a.batch_limit = p.levels.empty() ? 0 : p.steps_per_epoch;
      } else {
        a.batches = p.steps_per_epoch; // its step ids count epochs in these
      }
    }
  }
  auto& coordinator = p.actors[add_actor(p, plan_role::coordinator, 0, "coordinator")];
  plan_finish(p, coordinator, machine_level, all_level);
}

// The processes, and each actor's (see placement_plan::nodes).
void plan_nodes(const training_job& job, placement_plan& p) {
  const auto& nodes = job.nodes;
  if (nodes.single_process()) {
    p.nodes = {planned_node{node_kind::process, 0, "process"}};
    return;
  }
  const int n = p.workers, servers = nodes.servers, worker_nodes = nodes.workers;
  const int shards = static_cast<int>(p.keys.shards.size());
  if (n % worker_nodes != 0)
    fail(placement_subject::workers, std::to_string(n)
                                       + " workers (compute actors) do not divide evenly over "
                                       + std::to_string(worker_nodes) + " worker processes");
  if (shards % servers != 0)
    fail(placement_subject::shards,
         std::to_string(shards) + " parameter shards do not divide evenly over "
           + std::to_string(servers) + " server processes"
           + (shards != job.shards
                ? " (the model's keys fill " + std::to_string(shards) + " of the "
                    + std::to_string(job.shards) + " shards asked for)"
                : std::string()));
  if (find_level(p.levels, aggregation_scope::machine) && p.machines != worker_nodes)
    fail(placement_subject::job, "the topology's aggregate(machine) groups "
                                   + std::to_string(p.machines) + " machines and the cluster has "
                                   + std::to_string(worker_nodes)
                                   + " worker processes: each worker process is one machine");
  p.nodes.push_back({node_kind::scheduler, 0, "scheduler"});
  for (int s = 0; s < servers; ++s)
    p.nodes.push_back({node_kind::server, s, numbered("server_", s)});
  for (int v = 0; v < worker_nodes; ++v)
    p.nodes.push_back({node_kind::worker, v, numbered("worker_", v)});
  const int server_of_shard = shards / servers, workers_per_node = n / worker_nodes;
  auto server_node = [&](int shard) { return 1 + shard / server_of_shard; };
  auto worker_node = [&](int v) { return 1 + servers + v; };
  for (auto& a : p.actors) {
    switch (a.role) {
    case plan_role::coordinator:
    case plan_role::metrics:
      a.node = 0;
      break;
    case plan_role::shard:
    case plan_role::aggregator:
      a.node = server_node(a.shard);
      break;
    case plan_role::machine_aggregator:
      a.node = worker_node(a.machine);
      break;
    case plan_role::validation_loader:
      a.node = worker_node(a.index);
      break;
    case plan_role::loader:
    case plan_role::compute:
      a.node = worker_node(a.rank / workers_per_node);
      break;
    }
  }
}

// A push hop's compression (topology_options::compression), by the roles at its ends. A bsp
// plan of one worker has no aggregator: its compute -> shard hop is the one into aggregate(all).
compression_spec compression_into(const placement_plan& p, plan_role from, plan_role to) {
  auto level_index = [&](aggregation_scope scope) {
    for (std::size_t i = 0; i < p.levels.size(); ++i)
      if (p.levels[i].scope == scope)
        return i;
    return p.levels.size();
  };
  auto hop = [&](std::size_t i) {
    return i < p.compression.size() ? p.compression[i] : compression_spec{};
  };
  if (to == plan_role::machine_aggregator)
    return hop(level_index(aggregation_scope::machine));
  if (to == plan_role::aggregator)
    return hop(level_index(aggregation_scope::all));
  if (from == plan_role::compute && sums_one_source(p))
    return hop(0);
  return hop(p.levels.size());
}

// Every route, in the order placement_plan::routes documents.
void plan_routes(placement_plan& p) {
  const int n = p.workers;
  const int shards = static_cast<int>(p.keys.shards.size());
  const bool hierarchical = find_level(p.levels, aggregation_scope::machine) != nullptr;
  const bool global =
    find_level(p.levels, aggregation_scope::all) != nullptr && !sums_one_source(p);
  std::int64_t example_bytes = 4; // float32 pixels and an int32 label
  for (auto d : p.data.sample_shape)
    example_bytes *= d;
  example_bytes += 4;
  auto id = [&](plan_role role, int index) { return p.actor(role, index); };
  auto route = [&](std::size_t from, std::size_t to, route_carries carries) -> planned_route& {
    p.routes.push_back({from, to, carries, -1, -1, 0, 0, 0});
    return p.routes.back();
  };
  auto shard_route = [&](std::size_t from, std::size_t to, route_carries carries, int k,
                         int source) {
    const auto& load = p.shard_loads[static_cast<std::size_t>(k)];
    p.routes.push_back({from, to, carries, k, source, load.keys, load.bytes, load.pushes});
  };
  for (int w = 0; w < n; ++w) {
    auto& r = route(id(plan_role::loader, w), id(plan_role::compute, w), route_carries::batches);
    r.bytes = p.train_batch * example_bytes;
    r.messages = 1;
  }
  for (int w = 0; w < n; ++w) {
    const int m = hierarchical ? machine_of(w, n, p.machines) : 0;
    for (int k = 0; k < shards; ++k) {
      const auto to = hierarchical ? id(plan_role::machine_aggregator, m * shards + k)
                      : global     ? id(plan_role::aggregator, k)
                                   : id(plan_role::shard, k);
      const int source = hierarchical ? w - first_worker_of(m, n, p.machines) : w;
      shard_route(id(plan_role::compute, w), to, route_carries::gradients, k, source);
    }
  }
  for (int m = 0; hierarchical && m < p.machines; ++m)
    for (int k = 0; k < shards; ++k)
      shard_route(id(plan_role::machine_aggregator, m * shards + k),
                  global ? id(plan_role::aggregator, k) : id(plan_role::shard, k),
                  route_carries::summed_gradients, k, m);
  for (int k = 0; k < shards && global; ++k)
    shard_route(id(plan_role::aggregator, k), id(plan_role::shard, k),
                route_carries::summed_gradients, k, 0);
  for (auto& r : p.routes)
    if (is_push(r.carries))
      r.compression = compression_into(p, p.actors[r.from].role, p.actors[r.to].role);
  // The answer follows the written answer route: `shard -> compute(...)` answers the computes,
  // `shard -> aggregate(machine)` each machine's aggregator, which answers its computes.
  for (int k = 0; p.answers_through_machines() && k < shards; ++k)
    for (int m = 0; m < p.machines; ++m)
      shard_route(id(plan_role::shard, k), id(plan_role::machine_aggregator, m * shards + k),
                  route_carries::weights, k, -1);
  for (int k = 0; k < shards; ++k)
    for (int w = 0; w < n; ++w) {
      const auto from = p.answers_through_machines() ? id(plan_role::machine_aggregator,
                                                          machine_of(w, n, p.machines) * shards + k)
                                                     : id(plan_role::shard, k);
      shard_route(from, id(plan_role::compute, w), route_carries::weights, k, -1);
    }
  const int validation_loaders = static_cast<int>(p.actors_of(plan_role::validation_loader).size());
  for (int w = 0; w < n; ++w) {
    // Worker processes hold equal runs of workers (plan_nodes checks that they divide).
    auto& r = route(id(plan_role::validation_loader, w / (n / validation_loaders)),
                    id(plan_role::compute, w), route_carries::validation_batches);
    r.bytes = p.validation_batch * example_bytes;
    r.messages = 1;
  }
  for (int w = 0; w < n; ++w)
    route(id(plan_role::coordinator, 0), id(plan_role::compute, w), route_carries::control);
  for (int w = 0; w < n; ++w)
    route(id(plan_role::compute, w), id(plan_role::metrics, 0), route_carries::reports).messages =
      1;
  route(id(plan_role::coordinator, 0), id(plan_role::metrics, 0), route_carries::reports);
}

} // namespace

data_facts data_facts_of(const dataset& train, const dataset& validation) {
  return {train.sample_shape(), train.classes(), train.size(), validation.size()};
}

data_facts expected_data_facts(const training_job& job) {
  auto examples = [](const dataset_options& d) -> std::int64_t {
    const bool train = d.which == split::train;
    // A class filter's count is the files' to say; `first` is known.
    if (d.subset.first > 0)
      return d.subset.first;
    if (d.name == "fashion-mnist" || d.name == "mnist")
      return train ? 60000 : 10000;
    if (d.name == "cifar10")
      return train ? 50000 : 10000;
    if (d.name == "synthetic")
      return synthetic_split_size(
        {d.synthetic_shape, d.synthetic_classes, d.synthetic_size, d.synthetic_seed}, d.which);
    return 0;
  };
  data_facts f;
  const auto& train = job.train_data;
  f.sample_shape = job.model.sample_shape;
  f.classes = job.model.classes;
  const int files_classes = train.subset.class_count > 0 ? train.subset.class_count : 10;
  if (train.name == "fashion-mnist" || train.name == "mnist") {
    f.sample_shape = {1, 28, 28};
    f.classes = files_classes;
  } else if (train.name == "cifar10") {
    f.sample_shape = {3, 32, 32};
    f.classes = files_classes;
  } else if (train.name == "synthetic") {
    f.sample_shape = train.synthetic_shape;
    f.classes = train.synthetic_classes;
  }
  f.train_examples = examples(job.train_data);
  f.validation_examples = examples(job.validation_data);
  return f;
}

const char* to_string(plan_role role) {
  switch (role) {
  case plan_role::loader:
    return "loader";
  case plan_role::validation_loader:
    return "validation_loader";
  case plan_role::compute:
    return "compute";
  case plan_role::machine_aggregator:
    return "machine_aggregator";
  case plan_role::aggregator:
    return "aggregator";
  case plan_role::shard:
    return "shard";
  case plan_role::coordinator:
    return "coordinator";
  case plan_role::metrics:
    return "metrics";
  }
  return "?";
}

const char* to_string(route_carries carries) {
  switch (carries) {
  case route_carries::batches:
    return "batches";
  case route_carries::validation_batches:
    return "validation batches";
  case route_carries::gradients:
    return "gradients";
  case route_carries::summed_gradients:
    return "summed gradients";
  case route_carries::weights:
    return "weights";
  case route_carries::control:
    return "control";
  case route_carries::reports:
    return "reports";
  }
  return "?";
}

bool is_push(route_carries carries) {
  return carries == route_carries::gradients || carries == route_carries::summed_gradients;
}

const char* to_string(node_kind kind) {
  switch (kind) {
  case node_kind::process:
    return "process";
  case node_kind::scheduler:
    return "scheduler";
  case node_kind::server:
    return "server";
  case node_kind::worker:
    return "worker";
  case node_kind::ctl:
    return "ctl";
  }
  return "?";
}

std::optional<node_kind> node_kind_named(const std::string& text) {
  for (auto kind : {node_kind::process, node_kind::scheduler, node_kind::server, node_kind::worker})
    if (text == to_string(kind))
      return kind;
  return std::nullopt;
}

placement_plan plan_placement(const training_job& job, const data_facts& data) {
  return plan_placement(job, data, {});
}

placement_plan plan_placement(const training_job& job, const data_facts& data,
                              std::vector<planned_parameter> parameters) {
  try {
    check_job(job);
  } catch (const std::invalid_argument& e) {
    fail(placement_subject::job, e.what());
  }
  placement_plan p;
  p.topology = job.topology.name;
  p.levels = job.topology.levels;
  p.workers = job.topology.workers;
  p.machines = job.topology.level(aggregation_scope::machine) ? job.topology.machines : 1;
  p.overlap = job.topology.overlap;
  p.compression = job.topology.compression;
  p.key_options = job.topology.keys;
  p.train_batch = job.train_batches.batch_size;
  p.validation_batch = job.validation_batches.batch_size;
  p.drop_last = job.train_batches.drop_last;
  p.data = data;
  if (parameters.empty()) {
    plan_model(job, data, p);
  } else {
    for (const auto& param : parameters)
      if (param.numel < 1 || param.name.empty())
        fail(placement_subject::model, "parameter '" + param.name + "' has no elements or no name");
    p.parameters = std::move(parameters);
  }
  plan_key_table(job, p);
  plan_steps(job, data, p);
  plan_actors(job, p);
  plan_nodes(job, p);
  plan_routes(p);
  p.hash = fnv1a_64(canonical_text(p));
  return p;
}

std::vector<std::size_t> placement_plan::actors_of(plan_role role) const {
  std::vector<std::size_t> found;
  for (std::size_t a = 0; a < actors.size(); ++a)
    if (actors[a].role == role)
      found.push_back(a);
  return found;
}

std::vector<std::size_t> placement_plan::actors_on(int node) const {
  std::vector<std::size_t> found;
  for (std::size_t a = 0; a < actors.size(); ++a)
    if (actors[a].node == node)
      found.push_back(a);
  return found;
}

std::size_t placement_plan::actor(plan_role role, int index) const {
  for (std::size_t a = 0; a < actors.size(); ++a)
    if (actors[a].role == role && actors[a].index == index)
      return a;
  throw std::out_of_range(std::string("plan has no ") + to_string(role) + " "
                          + std::to_string(index));
}

std::vector<std::size_t> placement_plan::routes_from(std::size_t a) const {
  std::vector<std::size_t> found;
  for (std::size_t r = 0; r < routes.size(); ++r)
    if (routes[r].from == a)
      found.push_back(r);
  return found;
}

std::vector<std::size_t> placement_plan::routes_to(std::size_t a) const {
  std::vector<std::size_t> found;
  for (std::size_t r = 0; r < routes.size(); ++r)
    if (routes[r].to == a)
      found.push_back(r);
  return found;
}

const planned_route& placement_plan::push_route(std::size_t a, int shard) const {
  for (const auto& r : routes)
    if (r.from == a && r.shard == shard && is_push(r.carries))
      return r;
  throw std::out_of_range("plan: " + (a < actors.size() ? actors[a].name : std::to_string(a))
                          + " pushes nothing for shard " + std::to_string(shard));
}

const planned_route& placement_plan::gradient_route(int rank, int shard) const {
  return push_route(actor(plan_role::compute, rank), shard);
}

std::string canonical_text(const placement_plan& p) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  auto list = [&](const auto& values) {
    out << '[';
    for (std::size_t i = 0; i < values.size(); ++i)
      out << (i ? "," : "") << values[i];
    out << ']';
  };
  out << "troupe placement plan 1\n"
      << "topology " << p.topology << " workers " << p.workers << " machines " << p.machines
      << " overlap " << p.overlap << '\n'
      << "keys slice_bytes " << p.key_options.slice_bytes << " group_bytes "
      << p.key_options.group_bytes << '\n'
      << "batch train " << p.train_batch << " validation " << p.validation_batch << " drop_last "
      << p.drop_last << '\n'
      << "data shape ";
  list(p.data.sample_shape);
  out << " classes " << p.data.classes << " train " << p.data.train_examples << " validation "
      << p.data.validation_examples << '\n'
      << "steps " << p.steps_per_epoch << " validation " << p.validation_batches << " workers ";
  list(p.worker_batches);
  out << '\n';
  for (const auto& x : p.parameters) {
    out << "parameter " << x.name << ' ';
    list(x.shape);
    out << " numel " << x.numel << " decay " << x.weight_decay << '\n';
  }
  for (const auto& k : p.key_table)
    out << "key " << k.shard << ' ' << k.index << " slot " << k.slice.slot << " offset "
        << k.slice.offset << " length " << k.slice.length << " whole " << k.slice.whole << ' '
        << k.name << '\n';
  for (const auto& g : p.keys.groups) {
    out << "group " << g.shard << ' ';
    list(g.keys);
    out << " elements " << g.elements << '\n';
  }
  for (const auto& x : p.nodes)
    out << "node " << to_string(x.kind) << ' ' << x.rank << ' ' << x.name << '\n';
  for (const auto& a : p.actors) {
    out << "actor " << to_string(a.role) << ' ' << a.index << " node " << a.node << ' ' << a.name
        << " worker " << a.rank << " machine " << a.machine << " shard " << a.shard << " sources "
        << a.sources << " need " << a.need << " position " << a.position << " deterministic "
        << a.deterministic << " keys ";
    list(a.keys);
    out << " workers " << a.workers << " staleness " << a.staleness << " batches " << a.batches
        << " limit " << a.batch_limit << " finish_after " << a.finish_after;
    if (a.finish_machines > 0) // only route sets with backups inside machines have it
      out << " finish_machines " << a.finish_machines;
    out << '\n';
  }
  for (const auto& r : p.routes)
    out << "route " << r.from << ' ' << r.to << ' ' << to_string(r.carries) << " shard " << r.shard
        << " source " << r.source << " keys " << r.keys << " bytes " << r.bytes << " messages "
        << r.messages
        << (r.compression.active() ? " compress " + to_string(r.compression) : std::string())
        << '\n';
  return out.str();
}

} // namespace troupe
