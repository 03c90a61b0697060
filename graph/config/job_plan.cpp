// Expands the role-level routes of a topology into actor instances: loader i feeds compute i,
// machine m aggregates workers [m*W/M, (m+1)*W/M), each shard has its own aggregator chain
// (as actors/topology_wiring.cpp spawns them) and exchanges only its own keys.
// A gradient route carries one message per push group of the key plan, and every aggregator
// forwards each group's sum on its own, so the message count per step is the same on every
// hop to a shard and back.
#include <troupe/graph/config/job_plan.hpp>

#include <map>
#include <sstream>
#include <stdexcept>

#include <troupe/graph/config/key_assignment.hpp>

namespace troupe {

namespace {

std::vector<std::size_t> spawn(job_plan& p, const std::string& prefix, int count) {
  std::vector<std::size_t> ids;
  for (int i = 0; i < count; ++i) {
    ids.push_back(p.actors.size());
    p.actors.push_back(count == 1 && prefix == "aggregator" ? prefix : prefix + "_" + std::to_string(i));
  }
  return ids;
}

// Keys, bytes and pushes per shard from the same plan_keys call the session makes.
void plan_shards(const job_config& c, model& m, job_plan& p) {
  std::vector<std::int64_t> numels;
  for (const auto* param : m.parameters())
    numels.push_back(param->value.numel());
  p.key_options = key_options_of(c);
  p.overlap = c.cluster.overlap.value;
  const auto plan = plan_keys(numels, c.cluster.shards.value, p.key_options);
  std::map<std::size_t, std::int64_t> slices;  // slot -> slices, for cut parameters
  for (const auto& keys : plan.shards) {
    std::int64_t bytes = 0;
    for (const auto& key : keys) {
      bytes += key.length * 4;
      if (!key.whole)
        ++slices[key.slot];
    }
    p.shard_keys.push_back(static_cast<std::int64_t>(keys.size()));
    p.shard_bytes.push_back(bytes);
    p.keys_per_step += static_cast<std::int64_t>(keys.size());
  }
  p.shard_pushes.assign(plan.shards.size(), 0);
  for (const auto& group : plan.groups)
    ++p.shard_pushes[group.shard];
  p.pushes_per_step = static_cast<std::int64_t>(plan.groups.size());
  for (const auto& [slot, count] : slices)
    p.sliced.push_back({m.parameters()[slot]->name, numels[slot] * 4, count});
}

// Builds the model to size the parameters and the key plan; returns the bytes of one batch
// (images and labels).
std::int64_t size_model(const job_config& c, job_plan& p) {
  std::unique_ptr<model> m;
  try {
    m = build_model(model_spec_of(c));
  } catch (const std::exception& e) {
    config_fail(c, c.model.span.line ? c.model.span : c.model.network.span, e.what());
  }
  p.parameters = m->parameter_count();
  plan_shards(c, *m, p);
  std::int64_t numel = 1;
  for (auto d : c.train_data.shape.value)
    numel *= d;
  return c.train_data.batch.value * (numel * 4 + 4);
}

} // namespace

job_plan build_plan(const job_config& c) {
  job_plan p;
  const std::int64_t batch_bytes = size_model(c, p);
  const int workers = c.cluster.workers.value;
  const auto& t = c.topology;
  auto loaders = spawn(p, "loader", workers);
  auto computes = spawn(p, "compute", workers);
  bool machine = false, global = false;
  for (const auto& w : t.routes) {
    machine |= w.to == actor_role::machine_aggregator;
    global |= w.to == actor_role::aggregator;
  }
  // As the session wires it: one aggregator chain per shard, so shards sum in parallel.
  const std::size_t n_shards = p.shard_keys.size();
  auto aggregator = global ? spawn(p, "aggregator", static_cast<int>(n_shards))
                           : std::vector<std::size_t>{};
  std::vector<std::vector<std::size_t>> machines;  // [machine][shard]
  for (int m = 0; machine && m < t.machines.value; ++m) {
    machines.emplace_back();
    for (std::size_t k = 0; k < n_shards; ++k) {
      machines.back().push_back(p.actors.size());
      p.actors.push_back("machine_aggregator_" + std::to_string(m)
                         + (n_shards > 1 ? "_" + std::to_string(k) : std::string{}));
    }
  }
  auto shards = spawn(p, "shard", static_cast<int>(n_shards));
  for (int i = 0; i < workers; ++i)
    p.routes.push_back({loaders[i], computes[i], "batch", 0, batch_bytes, 0});
  const int per_machine = machine ? workers / t.machines.value : workers;
  auto shard_route = [&](std::size_t from, std::size_t to, std::size_t k, const char* carries) {
    p.routes.push_back({from, to, carries, p.shard_keys[k], p.shard_bytes[k], p.shard_pushes[k]});
  };
  for (int i = 0; i < workers; ++i)
    for (std::size_t k = 0; k < n_shards; ++k)
      shard_route(computes[i],
                  machine ? machines[i / per_machine][k] : global ? aggregator[k] : shards[k], k,
                  "gradients");
  for (const auto& m : machines)
    for (std::size_t k = 0; k < n_shards; ++k)
      shard_route(m[k], aggregator[k], k, "summed gradients");
  for (std::size_t k = 0; k < n_shards && global; ++k)
    shard_route(aggregator[k], shards[k], k, "summed gradients");
  for (std::size_t k = 0; k < n_shards; ++k)
    for (auto compute : computes)
      shard_route(shards[k], compute, k, "weights");
  return p;
}

namespace {

std::string human_bytes(std::int64_t b) {
  std::ostringstream s;
  s.precision(3);
  if (b >= std::int64_t{1} << 30)
    s << static_cast<double>(b) / (1 << 30) << " GiB";
  else if (b >= 1 << 20)
    s << static_cast<double>(b) / (1 << 20) << " MiB";
  else if (b >= 1 << 10)
    s << static_cast<double>(b) / (1 << 10) << " KiB";
  else
    s << b << " B";
  return s.str();
}

// "gradients: 12 keys in 3 pushes, 1.2 MiB/step"; weights come back as replies.
std::string label(const plan_route& r) {
  std::string text = r.carries + ": ";
  if (r.keys)
    text += std::to_string(r.keys) + " keys in " + std::to_string(r.messages)
            + (r.carries == "weights" ? " replies" : " pushes") + ", ";
  return text + human_bytes(r.bytes) + "/step";
}

template <typename T>
void show(std::ostream& out, const std::string& key, const located<T>& v) {
  out << "  " << key << " = " << v.value;
  out << (v.given ? "  # line " + std::to_string(v.span.line) : std::string("  # default")) << '\n';
}

template <typename T>
void show(std::ostream& out, const std::string& key, const located<std::vector<T>>& v) {
  std::ostringstream list;
  for (std::size_t i = 0; i < v.value.size(); ++i)
    list << (i ? ", " : "") << v.value[i];
  located<std::string> text{"[" + list.str() + "]", v.span, v.given};
  show(out, key, text);
}

void show_data(std::ostream& out, const std::string& name, const data_config& d) {
  if (!d.enabled) {
    out << "  data." << name << " = none\n";
    return;
  }
  auto p = "data." + name + ".";
  show(out, p + "dataset", d.dataset);
  if (d.dataset.value == "synthetic") {
    show(out, p + "shape", d.shape);
    show(out, p + "classes", d.classes);
    show(out, p + "examples", d.examples);
  } else {
    show(out, p + "dir", d.dir);
  }
  show(out, p + "split", d.split);
  show(out, p + "batch", d.batch);
  show(out, p + "crop_pad", d.crop_pad);
  show(out, p + "mirror", d.mirror);
  show(out, p + "normalize", d.normalize);
  show(out, p + "shuffle", d.shuffle);
}

} // namespace

void print_config(std::ostream& out, const job_config& c) {
  out << std::boolalpha << c.path << ": ok\n";
  show(out, "cluster.servers", c.cluster.servers);
  show(out, "cluster.workers", c.cluster.workers);
  show(out, "cluster.shards", c.cluster.shards);
  show(out, "cluster.slice_bytes", c.cluster.slice_bytes);
  show(out, "cluster.group_bytes", c.cluster.group_bytes);
  show(out, "cluster.overlap", c.cluster.overlap);
  show_data(out, "train", c.train_data);
  show_data(out, "val", c.validation_data);
  show(out, "model.network", c.model.network);
  show(out, "model.layers", c.model.layers);
  show(out, "model.classes", c.model.classes);
  show(out, "optimizer.lr", c.optimizer.lr);
  show(out, "optimizer.momentum", c.optimizer.momentum);
  show(out, "optimizer.wd", c.optimizer.wd);
  show(out, "optimizer.nesterov", c.optimizer.nesterov);
  show(out, "schedule.policy", c.schedule.policy);
  if (c.schedule.policy.value == "multi_step") {
    show(out, "schedule.steps", c.schedule.steps);
    show(out, "schedule.factor", c.schedule.factor);
  }
  if (c.schedule.policy.value == "cosine")
    show(out, "schedule.final_lr", c.schedule.final_lr);
  show(out, "schedule.warmup", c.schedule.warmup);
  out << "  topology = " << to_string(c.topology.kind)
      << (c.topology.explicit_wiring ? "  # explicit wiring\n" : "  # preset routes\n");
  show(out, "topology.staleness", c.topology.staleness);
  show(out, "topology.backups", c.topology.backup_workers);
  show(out, "topology.machines", c.topology.machines);
  show(out, "topology.deterministic", c.topology.deterministic);
  for (const auto& w : c.topology.routes)
    out << "  route " << to_string(w.from) << " -> " << to_string(w.to)
        << (w.fan.empty() ? "" : "(" + w.fan + ")") << '\n';
  show(out, "train.epochs", c.run.epochs);
  show(out, "train.eval_every", c.run.eval_every);
  show(out, "train.seed", c.run.seed);
  show(out, "train.threads", c.run.threads);
  show(out, "train.prefetch", c.run.prefetch);
  show(out, "train.display", c.run.display);
  show(out, "train.metrics", c.run.metrics);
}

void print_plan(std::ostream& out, const job_plan& p) {
  out << "plan: " << p.actors.size() << " actors, " << p.routes.size() << " routes, "
      << p.parameters << " parameters (" << human_bytes(p.parameters * 4) << ")\n";
  out << "  keys: " << p.keys_per_step << " (parameters above "
      << human_bytes(p.key_options.slice_bytes) << " are sliced)\n";
  for (const auto& s : p.sliced)
    out << "  " << s.name << " (" << human_bytes(s.bytes) << ") cut into " << s.slices
        << " slices\n";
  out << "  pushes: each worker sends " << p.pushes_per_step << " per step, "
      << (p.overlap ? "during backward" : "after backward")
      << (p.key_options.group_bytes > 0
            ? " (keys under " + human_bytes(p.key_options.group_bytes) + " bundled per shard)\n"
            : " (one key per push)\n");
  for (std::size_t k = 0; k < p.shard_keys.size(); ++k)
    out << "  shard_" << k << " owns " << p.shard_keys[k] << " keys, "
        << human_bytes(p.shard_bytes[k]) << "; " << p.shard_pushes[k]
        << " pushes per worker per step\n";
  for (const auto& r : p.routes)
    out << "  " << p.actors[r.from] << " -> " << p.actors[r.to] << "  [" << label(r) << "]\n";
}

std::string plan_to_dot(const job_plan& p, const std::string& title) {
  std::ostringstream out;
  std::string safe = title;
  for (auto& ch : safe)
    ch = ch == '"' || ch == '\\' ? '_' : ch;
  out << "digraph troupe {\n  label=\"" << safe << "\";\n  rankdir=LR;\n  node [shape=box];\n";
  for (const auto& a : p.actors)
    out << "  " << a << ";\n";
  for (const auto& r : p.routes)
    out << "  " << p.actors[r.from] << " -> " << p.actors[r.to] << " [label=\"" << label(r)
        << "\"];\n";
  out << "}\n";
  return out.str();
}

} // namespace troupe
