// Turns the placement plan into text. The plan decides; this file only words it: routes are
// labelled with what they carry per step, shard chains with the source index the sender uses,
// and the steps with how they were counted (or that they are unknown without the data).
#include <troupe/graph/config/job_plan.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/graph/config/key_table.hpp>

namespace troupe {

namespace {

// Where the first of these keys was written (none written: no place).
source_span first_given(std::initializer_list<const located<int>*> keys) {
  for (const auto* k : keys)
    if (k->given && k->span.line != 0)
      return k->span;
  return source_span{};
}

} // namespace

placement_plan plan_config(const job_config& c, const training_job& job, const data_facts& data) {
  try {
    return plan_placement(job, data);
  } catch (const placement_error& e) {
    switch (e.subject()) {
    case placement_subject::model:
      config_fail(c, c.model.span.line ? c.model.span : c.model.network.span, e.what());
    case placement_subject::data:
      config_fail(c, c.cluster.workers.given ? c.cluster.workers.span : c.train_data.span,
                  e.what());
    case placement_subject::shards:
      config_fail(c, first_given({&c.cluster.shards, &c.cluster.server_nodes, &c.cluster.servers}),
                  e.what());
    case placement_subject::workers:
      config_fail(c, first_given({&c.cluster.workers, &c.cluster.worker_nodes}), e.what());
    case placement_subject::job:
      break;
    }
    config_fail(c, c.topology.span, e.what());
  }
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

// Where a value came from: a line of the config, a flag (given at no line), or the default.
std::string origin(bool given, const source_span& span) {
  if (!given)
    return "default";
  return span.line == 0 ? std::string("flag") : "line " + std::to_string(span.line);
}

template <typename T> void show(std::ostream& out, const std::string& key, const located<T>& v) {
  out << "  " << key << " = " << v.value << "  # " << origin(v.given, v.span) << '\n';
}

// A text unset shows as the language writes it, "" (not as nothing after the `=`).
void show(std::ostream& out, const std::string& key, const located<std::string>& v) {
  out << "  " << key << " = " << (v.value.empty() ? "\"\"" : v.value) << "  # "
      << origin(v.given, v.span) << '\n';
}

template <typename T>
void show(std::ostream& out, const std::string& key, const located<std::vector<T>>& v) {
  std::ostringstream list;
  for (std::size_t i = 0; i < v.value.size(); ++i)
    list << (i ? ", " : "") << v.value[i];
  located<std::string> text{"[" + list.str() + "]", v.span, v.given};
  show(out, key, text);
}

// The boundaries in epochs, and what they follow: `50%, 75% of the run` unless all were
// written as epochs (which stay put when flags change the run's length).
void show_steps(std::ostream& out, const schedule_config& s) {
  std::ostringstream epochs, written;
  const std::vector<schedule_step> shares{{0.5, true}, {0.75, true}};
  const auto& marks = s.written_steps.given ? s.written_steps.value : shares;
  bool any_share = false;
  for (std::size_t i = 0; i < s.steps.value.size(); ++i) {
    epochs << (i ? ", " : "") << s.steps.value[i];
    if (i < marks.size()) {
      written << (i ? ", " : "")
              << (marks[i].share ? shortest_number(100 * marks[i].value) + "%"
                                 : shortest_number(marks[i].value));
      any_share = any_share || marks[i].share;
    }
  }
  out << "  schedule.steps = [" << epochs.str() << "]  # "
      << origin(s.written_steps.given, s.written_steps.span)
      << (any_share ? ": " + written.str() + " of the run" : std::string()) << '\n';
}

// Every key of `section` that `call` takes (every one: ""), in the key table's order, printed
// from its field; a key `own` says yes to is the caller's to print (it needs words of its own).
template <class Own>
void show_keys(std::ostream& out, const std::string& prefix, const std::string& section,
               const std::string& call, key_target at, Own own) {
  for (const auto& key : config_keys()) {
    if (section != key.section || !key.taken_by(call) || own(key))
      continue;
    std::visit(
      [&](auto field) {
        if constexpr (!std::is_same_v<decltype(field), std::monostate>)
          show(out, prefix + key.name, field(at));
      },
      key.field);
  }
}

void show_data(std::ostream& out, const std::string& name, job_config& c, data_config& d) {
  if (!d.enabled) {
    out << "  data." << name << " = none\n";
    return;
  }
  show(out, "data." + name + ".dataset", d.dataset);
  show_keys(out, "data." + name + ".", "data", d.dataset.value, {c, d},
            [](const config_key&) { return false; });
}

} // namespace

void print_config(std::ostream& out, const job_config& config) {
  // The key table reaches fields through a mutable target: one copy, read and never changed.
  auto c = config;
  const key_target job{c, c.train_data};
  out << std::boolalpha << c.path << ": ok\n";
  const auto none = [](const config_key&) { return false; };
  show_keys(out, "cluster.", "cluster", "", job, [&](const config_key& key) {
    const std::string name = key.name;
    if (name == "shards" && c.cluster.shards.value < c.cluster.servers.value) {
      // the plan gives each server one
      out << "  cluster.shards = " << c.cluster.servers.value << "  # "
          << (c.cluster.shards.given
                ? "line " + std::to_string(c.cluster.shards.span.line) + " says "
                : std::string("default "))
          << c.cluster.shards.value << ", raised to one per server\n";
      return true;
    }
    if (name == "on_worker_loss" && !c.cluster.on_worker_loss.given) {
      out << "  cluster.on_worker_loss = (adopt in bsp, else stop)  # default\n";
      return true;
    }
    return false;
  });
  show_data(out, "train", c, c.train_data);
  show_data(out, "val", c, c.validation_data);
  show(out, "model.network", c.model.network);
  show_keys(out, "model.", "model", "", job, none);
  show(out, "optimizer.name", c.optimizer.name);
  show_keys(out, "optimizer.", "optimizer", c.optimizer.name.value, job, none);
  show(out, "schedule.policy", c.schedule.policy);
  show_keys(out, "schedule.", "schedule", c.schedule.policy.value, job, [&](const config_key& key) {
    if (std::string(key.name) != "steps")
      return false;
    show_steps(out, c.schedule);
    return true;
  });
  out << "  topology = " << c.topology.name.value
      << (c.topology.explicit_wiring ? "  # routes as written, compiled:\n"
          : c.topology.name.given && c.topology.name.span.line == 0
            ? "  # preset given by a flag, expands to:\n"
            : "  # preset, expands to:\n");
  for (const auto& w : c.topology.routes)
    out << "    " << to_string(w) << '\n';
  if (std::any_of(c.topology.levels.begin(), c.topology.levels.end(),
                  [](const aggregation_level& l) { return l.scope == aggregation_scope::machine; }))
    show(out, "topology.machines", c.topology.machines);
  if (!c.topology.levels.empty())
    show(out, "topology.deterministic", c.topology.deterministic);
  show_keys(out, "train.", "train", "", job, [&](const config_key& key) {
    if (std::string(key.name) != "devices")
      return false;
    std::vector<std::string> names;
    for (const auto& d : c.run.devices.value)
      names.push_back(to_string(d));
    show(out, "train.devices",
         located<std::vector<std::string>>{names, c.run.devices.span, c.run.devices.given});
    return true;
  });
}

// Weights come back as replies, so their routes count replies, not pushes.
std::string route_label(const placement_plan& p, const planned_route& r) {
  std::string text = to_string(r.carries);
  switch (r.carries) {
  case route_carries::batches:
    return text + ": " + human_bytes(r.bytes) + "/step";
  case route_carries::validation_batches:
    return text + ": " + human_bytes(r.bytes) + " each";
  case route_carries::control:
    return text;
  case route_carries::reports:
    return p.actors[r.from].role == plan_role::compute ? text + ": 1/step" : text;
  case route_carries::gradients:
  case route_carries::summed_gradients:
    text += " (source " + std::to_string(r.source) + ")";
    break;
  case route_carries::weights:
    break;
  }
  return text + ": " + std::to_string(r.keys) + " keys in " + std::to_string(r.messages)
         + (r.carries == route_carries::weights ? " replies, " : " pushes, ") + human_bytes(r.bytes)
         + "/step";
}

namespace {

std::string hex(std::uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

void print_steps(std::ostream& out, const placement_plan& p) {
  if (p.steps_per_epoch == 0) {
    out << "  steps per epoch: unknown until the data is opened\n";
  } else {
    const auto [low, high] = std::minmax_element(p.worker_batches.begin(), p.worker_batches.end());
    std::string batches = std::to_string(*low);
    const char* rule = ")\n";
    if (*low != *high) {
      batches += " to " + std::to_string(*high);
      rule = p.synchronous() ? "; synchronous: every worker takes the fewest)\n"
                             : "; asynchronous: step ids count up to the most)\n";
    }
    out << "  steps per epoch: " << p.steps_per_epoch << " (" << p.data.train_examples
        << " training examples over " << p.workers << " compute(s): " << batches << " batches of "
        << p.train_batch << " each" << rule;
  }
  if (p.validation_batches > 0)
    out << "  validation: " << p.validation_batches << " batches of " << p.validation_batch << " ("
        << p.data.validation_examples << " examples)\n";
}

// The aggregators' sums: how many sources, how many a step needs, where they go.
void print_aggregators(std::ostream& out, const placement_plan& p) {
  if (p.synchronous() && p.actors_of(plan_role::aggregator).empty()
      && p.actors_of(plan_role::machine_aggregator).empty())
    out << "  no aggregators: one worker's gradients are the sum, it pushes to the shards\n";
  for (const auto& a : p.actors) {
    if (a.role != plan_role::aggregator && a.role != plan_role::machine_aggregator)
      continue;
    out << "  " << a.name << " sums " << a.sources << " source(s)";
    if (a.need != a.sources)
      out << ", a step needs the first " << a.need;
    const auto& down = p.actors[p.push_route(p.actor(a.role, a.index), a.shard).to];
    out << " for shard_" << a.shard << ", source " << a.position << " at " << down.name;
    if (a.role == plan_role::machine_aggregator) {
      std::vector<int> workers;
      for (const auto& w : p.actors)
        if (w.role == plan_role::compute && w.machine == a.machine)
          workers.push_back(w.rank);
      out << " (machine " << a.machine << ": computes " << workers.front() << " to "
          << workers.back() << ")";
    }
    out << '\n';
  }
}

// Which actors each process holds (a cluster run; one process needs no list).
void print_nodes(std::ostream& out, const placement_plan& p) {
  if (p.nodes.size() < 2)
    return;
  out << "  processes: " << p.nodes.size() << '\n';
  for (std::size_t n = 0; n < p.nodes.size(); ++n) {
    out << "    " << p.nodes[n].name << ":";
    for (auto a : p.actors_on(static_cast<int>(n)))
      out << ' ' << p.actors[a].name;
    out << '\n';
  }
}

// " (server_0 -> worker_1)" for a route between processes, else nothing.
std::string crossing(const placement_plan& p, const planned_route& r) {
  const int from = p.actors[r.from].node, to = p.actors[r.to].node;
  if (from == to)
    return {};
  return " (" + p.nodes[static_cast<std::size_t>(from)].name + " -> "
         + p.nodes[static_cast<std::size_t>(to)].name + ")";
}

} // namespace

void print_plan(std::ostream& out, const placement_plan& p) {
  out << "plan: " << p.actors.size() << " actors, " << p.routes.size() << " routes, "
      << p.parameter_count << " parameters (" << human_bytes(p.parameter_count * 4) << ")\n";
  out << "  hash: " << hex(p.hash) << '\n';
  print_steps(out, p);
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
  for (std::size_t k = 0; k < p.shard_loads.size(); ++k)
    out << "  shard_" << k << " owns " << p.shard_loads[k].keys << " keys, "
        << human_bytes(p.shard_loads[k].bytes) << "; " << p.shard_loads[k].pushes
        << " pushes per worker per step\n";
  print_aggregators(out, p);
  print_nodes(out, p);
  for (const auto& r : p.routes)
    out << "  " << p.actors[r.from].name << " -> " << p.actors[r.to].name << "  ["
        << route_label(p, r) << "]" << crossing(p, r) << "\n";
}

std::string plan_to_dot(const placement_plan& p, const std::string& title) {
  std::ostringstream out;
  std::string safe = title;
  for (auto& ch : safe)
    ch = ch == '"' || ch == '\\' ? '_' : ch;
  out << "digraph troupe {\n  label=\"" << safe << "\";\n  rankdir=LR;\n  node [shape=box];\n";
  if (p.nodes.size() < 2) {
    for (const auto& a : p.actors)
      out << "  " << a.name << ";\n";
  }
  for (std::size_t n = 0; p.nodes.size() > 1 && n < p.nodes.size(); ++n) {
    out << "  subgraph cluster_" << p.nodes[n].name << " {\n    label=\"" << p.nodes[n].name
        << "\";\n";
    for (auto a : p.actors_on(static_cast<int>(n)))
      out << "    " << p.actors[a].name << ";\n";
    out << "  }\n";
  }
  for (const auto& r : p.routes) {
    const bool side = r.carries == route_carries::control || r.carries == route_carries::reports;
    out << "  " << p.actors[r.from].name << " -> " << p.actors[r.to].name << " [label=\""
        << route_label(p, r) << "\"" << (side ? ", style=dashed, color=gray" : "") << "];\n";
  }
  out << "}\n";
  return out.str();
}

} // namespace troupe
