// The part is spawned in plan order: shards and aggregators first (spawn_push_side_of_node),
// then metrics, loaders, computes and the coordinator as the plan lists them, so every handle
// an actor is given exists when it is spawned. The wiring report is built from the handles
// actually handed out, so a wiring that strays from the plan shows.
#include <troupe/actors/node_part.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/loader_actor.hpp>
#include <troupe/actors/spawned_actor.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>

namespace troupe {

namespace {

// Routes are looked up by the address of the actor they were given (any handle's address()).
class wiring_recorder {
public:
  void actor(const caf::actor_addr& a, const planned_actor& entry) {
    names_[a] = entry.name;
    report_.actors.push_back({entry.name, entry.role});
  }
  void route(const caf::actor_addr& from, const caf::actor_addr& to, route_carries carries) {
    report_.routes.push_back({name_of(from), name_of(to), carries});
  }
  void downstream(const caf::actor_addr& from, const caf::actor_addr& to) { down_[from] = to; }
  // Weights come back along the push chain from the shard at its end: to the compute, or
  // (through_first_hop: answers through machines) to the aggregator it pushed to, which answers
  // it.
  void weights(const caf::actor_addr& pushed_to, const caf::actor_addr& compute,
               bool through_first_hop) {
    auto at = pushed_to;
    for (auto d = down_.find(at); d != down_.end(); d = down_.find(at))
      at = d->second;
    if (!through_first_hop)
      return route(at, compute, route_carries::weights);
    route(pushed_to, compute, route_carries::weights);
    if (answered_.insert(pushed_to).second)
      route(at, pushed_to, route_carries::weights);
  }
  wiring_report& report() { return report_; }

private:
  std::string name_of(const caf::actor_addr& a) const {
    auto it = names_.find(a);
    return it == names_.end() ? "tap" : it->second;
  }
  std::map<caf::actor_addr, std::string> names_;
  std::map<caf::actor_addr, caf::actor_addr> down_;
  std::set<caf::actor_addr> answered_; // first hops whose answer from the shard is recorded
  wiring_report report_;
};

// One compute per validation loader validates (BSP replicas are equal; a split validation
// set is covered once): the first compute each loader serves, by worker.
std::vector<std::size_t> validators_of(const placement_plan& plan) {
  std::vector<std::size_t> validators;
  for (auto v : plan.actors_of(plan_role::validation_loader))
    for (auto r : plan.routes_from(v))
      if (plan.routes[r].carries == route_carries::validation_batches) {
        validators.push_back(static_cast<std::size_t>(plan.actors[plan.routes[r].to].rank));
        break;
      }
  return validators;
}

// Everything spawn_node_part carries from one actor to the next.
struct part_builder {
  caf::actor_system& system;
  const training_job& job;
  const placement_plan& plan;
  const model_spec& spec;
  const node_data& data;
  const node_part_options& options;
  node_part& part;
  wiring_recorder wired;
  std::vector<loader_actor> loaders;                   // by plan actor index
  std::map<std::size_t, local_compute_actor> computes; // local ones, by plan actor index

  template <class Handle> void record(const Handle& a, const planned_actor& entry) {
    part.spawned.emplace_back(as_spawned(a), entry.name);
    wired.actor(a.address(), entry);
  }
  bool here(std::size_t i) const {
    const auto& a = plan.actors[i];
    if (options.node >= 0 && a.node != options.node)
      return false;
    if (options.ranks.empty())
      return true;
    if (a.role == plan_role::loader || a.role == plan_role::compute)
      return std::find(options.ranks.begin(), options.ranks.end(), a.rank) != options.ranks.end();
    return a.role == plan_role::validation_loader;
  }

  loader_actor loader_of(std::size_t compute, route_carries carries) const {
    for (auto r : plan.routes_to(compute))
      if (plan.routes[r].carries == carries)
        return loaders.at(plan.routes[r].from);
    throw std::invalid_argument("node part: the plan gives " + plan.actors[compute].name + " no "
                                + to_string(carries) + " route");
  }

  void spawn_loader_at(std::size_t i) {
    const auto& a = plan.actors[i];
    loader_options loader;
    loader.prefetch_depth = job.prefetch_depth;
    std::shared_ptr<const batch_source> source;
    const bool validation = a.role == plan_role::validation_loader;
    const auto& set = validation ? data.validation : data.train;
    if (!set)
      throw std::invalid_argument("node part: " + a.name + " lives here but this node has no "
                                  + (validation ? "validation" : "training") + " data");
    if (validation) {
      auto b = job.validation_batches;
      b.part = a.index; // a cluster's validation loaders each take one part
      b.parts = static_cast<int>(plan.actors_of(plan_role::validation_loader).size());
      source = std::make_shared<const batch_source>(set, b);
    } else {
      auto b = job.train_batches;
      b.part = a.rank;
      b.parts = plan.workers;
      source = std::make_shared<const batch_source>(set, b);
      loader.max_batches_per_epoch = a.batch_limit;
    }
    loaders[i] = spawn_loader(system, source, loader);
    record(loaders[i], a);
  }

  // The replica of the next compute spawned here, on its device (node_part_options::devices).
  std::unique_ptr<model> replica_for_next_compute() {
    auto replica = build_model(spec);
    replica->set_top_k(job.top_k); // its reports then carry the top-k counts
    if (!options.devices.empty()
        && !options.compute.stand_in.active()) { // a stand-in computes nowhere
      const auto& device = options.devices[part.computes.size() % options.devices.size()];
      if (device.kind != device_kind::cpu)
        replica->to_device(device);
    }
    return replica;
  }

  void spawn_compute_at(std::size_t i) {
    const auto& a = plan.actors[i];
    compute_wiring wiring;
    wiring.rank = a.rank;
    wiring.train_loader = loader_of(i, route_carries::batches);
    wiring.validation_loader = loader_of(i, route_carries::validation_batches);
    wiring.shards = compressing_routes(system, plan, routes_of(plan, part.targets, a.rank), a.rank);
    if (options.tap)
      for (std::size_t k = 0; k < wiring.shards.size(); ++k)
        wiring.shards[k].shard = options.tap(wiring.shards[k].shard, tap_point{a.rank, k});
    wiring.groups = plan.keys.groups;
    wiring.overlap = plan.overlap;
    wiring.metrics = part.metrics;
    wiring.batches_per_epoch = plan.steps_per_epoch;
    wiring.timeouts = options.timeouts;
    wiring.adopted = options.adopted;
    wiring.timeline = options.timeline;
    if (options.on_rewound)
      wiring.on_rewound = [tell = options.on_rewound, rank = a.rank](std::int64_t step) {
        tell(rank, step);
      };
    auto routes = wiring.shards;
    auto train_loader = wiring.train_loader, validation_loader = wiring.validation_loader;
    auto spawn_options = options.compute;
    if (part.computes.size() < options.compute_cpus.size())
      spawn_options.cpus = options.compute_cpus[part.computes.size()];
    if (spawn_options.stand_in.active() && spawn_options.stand_in.samples == 0)
      spawn_options.stand_in.samples = job.train_batches.batch_size;
    auto compute =
      spawn_compute(system, replica_for_next_compute(), std::move(wiring), spawn_options);
    computes[i] = compute;
    part.computes.emplace_back(a.rank, compute);
    const auto c = compute.address();
    record(compute, a);
    wired.route(train_loader.address(), c, route_carries::batches);
    wired.route(validation_loader.address(), c, route_carries::validation_batches);
    for (const auto& route : routes) {
      wired.route(c, route.shard.address(), route_carries::gradients);
      wired.weights(route.shard.address(), c, plan.answers_through_machines());
    }
    wired.route(c, part.metrics.address(), route_carries::reports);
  }

  // The coordinator drives every compute of the plan, here or elsewhere, in worker order.
  void spawn_coordinator_at(std::size_t i) {
    const auto& a = plan.actors[i];
    std::vector<compute_actor> all;
    for (auto c : plan.actors_of(plan_role::compute)) {
      if (here(c)) {
        all.push_back(computes.at(c));
        continue;
      }
      if (!options.remote.compute)
        throw std::invalid_argument("node part: the coordinator drives " + plan.actors[c].name
                                    + " on another node, and no proxy was given");
      all.push_back(options.remote.compute(c));
      record(all.back(), plan.actors[c]);
    }
    // The final weights are pulled from every shard, here or elsewhere.
    for (auto s : plan.actors_of(plan_role::shard))
      if (!part.targets[s]) {
        if (!options.remote.push_target)
          throw std::invalid_argument("node part: " + plan.actors[s].name
                                      + " is on another node, and no proxy was given");
        part.targets[s] = options.remote.push_target(s);
        part.spawned.emplace_back(as_spawned(part.targets[s]), plan.actors[s].name);
      }
    part.shards = shard_routes(plan, part.targets);
    coordinator_options co;
    co.epochs = job.epochs;
    co.validate = job.validate;
    co.validate_every = job.validate_every;
    co.finish_after = static_cast<std::size_t>(a.finish_after);
    if (a.finish_machines > 0) {
      co.finish_groups_needed = static_cast<std::size_t>(a.finish_machines);
      for (auto c : plan.actors_of(plan_role::compute))
        co.finish_groups.push_back(plan.actors[c].machine);
    }
    co.timeouts = options.timeouts;
    co.validators = validators_of(plan);
    co.between_epochs = options.between_epochs;
    co.drop_lost_computes = job.nodes.continue_on_worker_loss;
    if (!options.checkpoint_prefix.empty() || options.resume)
      spawn_checkpoint_at(co);
    if (options.resume_at_epoch
        >= 0) { // a restarted scheduler: the run goes on where the computes are
      if (options.resume_at_epoch >= job.epochs)
        throw std::invalid_argument("node part: the run goes on at epoch "
                                    + std::to_string(options.resume_at_epoch) + ", past the job's "
                                    + std::to_string(job.epochs) + " epochs");
      co.first_epoch = options.resume_at_epoch;
      co.epochs = job.epochs - options.resume_at_epoch;
      co.restore = false;
    }
    part.coordinator = spawn_coordinator(system, all, part.metrics, co);
    record(part.coordinator, a);
    for (auto& c : all)
      wired.route(part.coordinator.address(), c.address(), route_carries::control);
    wired.route(part.coordinator.address(), part.metrics.address(), route_carries::reports);
  }

  // The checkpoint actor (not a plan actor: it exists only in runs with checkpoints), and the
  // coordinator options that use it: in one process it takes every shard and compute here, in
  // a cluster it asks the members' parts.
  void spawn_checkpoint_at(coordinator_options& co) {
    part.checkpoint = options.node >= 0 ? spawn_manifest() : spawn_single_file();
    part.spawned.emplace_back(as_spawned(part.checkpoint), "checkpoint");
    co.checkpoint = part.checkpoint;
    co.save_period = options.checkpoint_prefix.empty() ? 0 : options.save_period;
    co.restore = options.resume != nullptr;
    if (options.resume) {
      co.first_epoch = options.resume->epoch;
      co.epochs = job.epochs - options.resume->epoch;
    }
  }

  checkpoint_actor spawn_single_file() {
    checkpoint_wiring w;
    w.prefix = options.checkpoint_prefix;
    for (auto s : plan.actors_of(plan_role::shard))
      w.shards.push_back({part.own_shards.at(s),
                          plan.keys.shards.at(static_cast<std::size_t>(plan.actors[s].shard))});
    w.replicas.resize(static_cast<std::size_t>(plan.workers));
    for (const auto& [index, compute] : computes)
      w.replicas.at(static_cast<std::size_t>(plan.actors[index].rank)) = compute;
    for (const auto& p : plan.parameters) {
      w.parameter_names.push_back(p.name);
      w.parameter_shapes.push_back(p.shape);
    }
    w.network = job.model.network;
    w.steps_per_epoch = plan.steps_per_epoch;
    w.optimizer = job.optimizer.kind;
    w.resume = options.resume;
    w.timeout = options.timeouts.phase;
    w.timeline = options.timeline;
    return spawn_checkpoint(system, std::move(w));
  }

  // Every member holding shards or computes saves and restores its own part.
  checkpoint_actor spawn_manifest() {
    if (!options.remote.checkpoint_part)
      throw std::invalid_argument(
        "node part: checkpoints in a cluster need the members' parts, and no "
        "proxy was given");
    manifest_checkpoint_wiring w;
    w.prefix = options.checkpoint_prefix;
    for (std::size_t n = 0; n < plan.nodes.size(); ++n)
      if (holds_state(static_cast<int>(n)))
        w.parts.push_back(
          {plan.nodes[n].name, options.remote.checkpoint_part(static_cast<int>(n))});
    w.header.network = job.model.network;
    w.header.steps_per_epoch = plan.steps_per_epoch;
    for (const auto& p : plan.parameters) {
      w.header.parameter_names.push_back(p.name);
      w.header.parameter_shapes.push_back(p.shape);
    }
    w.header.workers = plan.workers;
    w.header.shards = plan.keys.shards.size();
    w.resume_epoch = options.resume ? options.resume->epoch : -1;
    w.timeout = options.timeouts.phase;
    w.events = options.checkpoint_events;
    w.timeline = options.timeline;
    return spawn_manifest_checkpoint(system, std::move(w));
  }

  // Whether plan node `n` holds shards or computes, the state a checkpoint saves.
  bool holds_state(int n) const {
    for (auto i : plan.actors_on(n))
      if (plan.actors[i].role == plan_role::shard || plan.actors[i].role == plan_role::compute)
        return true;
    return false;
  }

  // A member's part of a cluster checkpoint, over the shards and computes spawned here.
  void spawn_part_of_checkpoint() {
    if (options.node < 0 || !holds_state(options.node))
      return;
    checkpoint_part_wiring w;
    for (auto s : plan.actors_on(options.node))
      if (plan.actors[s].role == plan_role::shard) {
        const auto index = static_cast<std::size_t>(plan.actors[s].shard);
        w.shards.push_back({index, part.own_shards.at(s), plan.keys.shards.at(index)});
      }
    for (const auto& [index, compute] : computes)
      w.replicas.emplace_back(plan.actors[index].rank, compute);
    for (const auto& p : plan.parameters) {
      w.parameter_names.push_back(p.name);
      w.parameter_shapes.push_back(p.shape);
    }
    w.run_shards = plan.keys.shards.size();
    w.run_workers = plan.workers;
    w.steps_per_epoch = plan.steps_per_epoch;
    w.timeline = options.timeline;
    part.checkpoint_part =
      spawn_checkpoint_part(system, std::move(w), options.detached_checkpoint_part);
    part.spawned.emplace_back(as_spawned(part.checkpoint_part), "checkpoint_part");
  }
};

} // namespace

void node_part::shut_down() {
  for (auto& [a, name] : spawned)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  spawned.clear();
}

void node_part::shut_down_named(const std::vector<std::string>& names) {
  auto named = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<caf::actor> leaving;
  for (const auto& [a, name] : spawned)
    if (named(name))
      leaving.push_back(a);
  spawned.erase(std::remove_if(spawned.begin(), spawned.end(),
                               [&](const auto& entry) { return named(entry.second); }),
                spawned.end());
  computes.erase(
    std::remove_if(computes.begin(), computes.end(),
                   [&](const auto& c) { return named("compute_" + std::to_string(c.first)); }),
    computes.end());
  for (auto& a : leaving)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

model_spec model_of(const training_job& job, const data_facts& facts) {
  auto spec = job.model;
  spec.sample_shape = facts.sample_shape;
  spec.classes = facts.classes;
  return spec;
}

std::vector<tensor> initial_weights(model& reference) {
  std::vector<tensor> initial;
  for (const auto* p : reference.parameters())
    initial.push_back(p->value);
  return initial;
}

namespace {

// What names a stalled run's likely cause: the rate, the staleness, a fixed 2-bit threshold.
run_watch_options run_watch_options_of(const training_job& job, int stall_epochs) {
  run_watch_options w;
  w.classes = static_cast<int>(job.model.classes);
  w.rising_epochs = stall_epochs;
  w.learning_rate = job.optimizer.schedule.base_lr;
  w.staleness = job.topology.staleness;
  w.asynchronous = !job.topology.synchronous() || job.topology.staleness >= 0;
  for (const auto& hop : job.topology.compression)
    if (hop.pushes == value_encoding::two_bit && !hop.fitted)
      w.two_bit_threshold = hop.threshold;
  return w;
}

} // namespace

metrics_options metrics_options_of(const training_job& job, const session_output& output) {
  metrics_options m;
  m.out = output.log;
  m.display_batches = output.log ? output.display_batches : 0;
  m.progress_bar = output.log && output.progress_bar;
  m.expect_validation = job.validate;
  m.jsonl_path = output.metrics_path;
  m.jsonl = output.metrics_file;
  m.written_through = output.metrics_written_through;
  m.position = output.position;
  m.terminal_columns = output.terminal_columns;
  m.events = output.events;
  m.tags = {{"network", job.model.network}, {"dataset", job.train_data.name}};
  m.number_tags = {{"batch_size", static_cast<double>(job.train_batches.batch_size)}};
  m.watch = run_watch_options_of(job, output.stall_epochs);
  m.fail_on_stall = output.fail_on_stall;
  m.step_records = output.step_records;
  m.status = output.status;
  return m;
}

void spawn_node_part(caf::actor_system& system, const training_job& job, const placement_plan& plan,
                     const model_spec& spec, const std::vector<tensor>& initial,
                     const node_data& data, const node_part_options& options, node_part& part) {
  if (!options.ranks.empty()) {
    if (options.node < 0)
      throw std::invalid_argument("node part: ranks apart from their node need that node");
    for (auto i : plan.actors_on(options.node))
      if (plan.actors[i].role == plan_role::machine_aggregator)
        throw std::invalid_argument("node part: " + plan.nodes.at(options.node).name
                                    + " holds its machine's aggregators, which sum its ranks in "
                                      "process: its ranks do not run apart");
  }
  part_builder b{system, job, plan, spec, data, options, part, {}, {}, {}};
  b.wired.report().plan_hash = plan.hash;
  b.loaders.resize(plan.actors.size());
  part.metrics = options.metrics;
  const auto metrics_at = plan.actor(plan_role::metrics, 0);
  if (!part.metrics && b.here(metrics_at)) {
    part.metrics = spawn_metrics(system, options.metrics_output);
    b.record(part.metrics, plan.actors[metrics_at]);
  } else if (part.metrics) {
    b.wired.actor(part.metrics.address(), plan.actors[metrics_at]);
  }
  auto side = spawn_push_side_of_node(
    system, plan, options.node, options.remote.push_target, initial, job.optimizer,
    [&](const push_target_actor& a, const planned_actor& entry,
        const push_target_actor& downstream) {
      b.record(a, entry);
      if (downstream) {
        b.wired.downstream(a.address(), downstream.address());
        b.wired.route(a.address(), downstream.address(), route_carries::summed_gradients);
      }
    },
    // (one process loses no worker: its aggregators keep nothing for adopters)
    push_side_options{job.epochs * plan.steps_per_epoch,
                      job.nodes.adopt_on_worker_loss && options.node >= 0, options.timeline});
  part.targets = std::move(side.targets);
  part.own_shards = std::move(side.shards);
  part.own_aggregators = std::move(side.aggregators);
  // Stand-ins for targets elsewhere end with the part too.
  for (std::size_t i = 0; i < plan.actors.size(); ++i)
    if (part.targets[i] && !b.here(i))
      part.spawned.emplace_back(as_spawned(part.targets[i]), plan.actors[i].name);
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    if (!b.here(i))
      continue;
    switch (plan.actors[i].role) {
    case plan_role::loader:
    case plan_role::validation_loader:
      b.spawn_loader_at(i);
      break;
    case plan_role::compute:
      b.spawn_compute_at(i);
      break;
    case plan_role::coordinator:
      b.spawn_coordinator_at(i);
      break;
    default:
      break; // metrics and the push side are spawned above
    }
  }
  b.spawn_part_of_checkpoint();
  if (options.on_wired)
    options.on_wired(b.wired.report());
}

} // namespace troupe
