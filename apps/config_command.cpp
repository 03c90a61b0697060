// `troupe check CONFIG` and `troupe graph CONFIG`: validate a config without training.
// check prints every resolved value (defaults marked) and the placement plan the session would
// spawn, with its hash; graph prints the plan as Graphviz DOT. Config errors print the
// compiler-style diagnostic and exit 2. Neither opens data files: a config is checked, not the
// data it names, so the plan counts steps from the datasets' standard sizes
// (expected_data_facts); a run that opens the data plans again from what it finds.
// `troupe check CONFIG --push-groups` prints only the push groups, one line each, for tools that
// move the same messages with another system (scripts/bench_pslite.py), with each group's share
// of a compute stand-in's step (stand_in_timing.hpp), so such a tool times its steps as ours.
// `troupe check --reference` prints the key table (key_table.hpp) as docs/dsl.md holds it.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <tuple>

#include "apps/commands.hpp"
#include "apps/config_options.hpp"
#include "apps/flags.hpp"
#include <troupe/actors/stand_in_timing.hpp>
#include <troupe/graph/config/job_plan.hpp>
#include <troupe/graph/config/key_table.hpp>
#include <troupe/graph/zoo.hpp>

namespace troupe {

namespace {

struct node_counts {
  int server_nodes = 0, worker_nodes = 0;
  bool push_groups = false; // check only: print the push groups, nothing else
  bool reference = false;   // check only: print the key table, read no config
};

flag_set node_flag_set(const std::string& command, node_counts& n) {
  flag_set f(command,
             command == "check"
               ? "Checks a .troupe config (docs/dsl.md) and prints every resolved value and "
                 "the actor plan a run would spawn."
               : "Prints the actor plan of a .troupe config (docs/dsl.md) as Graphviz DOT.");
  f.set_operands("CONFIG");
  f.add("server-nodes", n.server_nodes, "server processes of a cluster run to plan for");
  f.add("worker-nodes", n.worker_nodes, "worker processes of a cluster run to plan for");
  if (command == "check") {
    f.add_switch("reference", n.reference,
                 "print every config key (default, range, flag, meaning) as docs/dsl.md's "
                 "tables, without a config");
    f.add_switch("push-groups", n.push_groups,
                 "print only the pushes a worker sends per step, in backward order, one line each: "
                 "`push_group G shard S node NODE elements N work W` (W: the group's share of a "
                 "compute stand-in's step) and every key as NAME=ELEMENTS");
  }
  return f;
}

// `--server-nodes N` / `--worker-nodes N` after the config (the processes of a cluster run,
// as `troupe train` takes them), through the app's flag parser: anything else is a
// usage_error naming it. False: --help was asked for (and printed).
bool apply_node_flags(const char* command, const std::vector<std::string>& args, job_config& config,
                      node_counts& n) {
  auto f = node_flag_set(command, n);
  if (!f.parse({args.begin() + 1, args.end()})) {
    std::cout << f.help();
    return false;
  }
  if (n.reference)
    throw usage_error("--reference prints every config key and reads no config: give it alone");
  const int server_nodes = n.server_nodes, worker_nodes = n.worker_nodes;
  for (auto [flag, value, target] :
       {std::tuple{"server-nodes", server_nodes, &config.cluster.server_nodes},
        std::tuple{"worker-nodes", worker_nodes, &config.cluster.worker_nodes}}) {
    if (!f.given(flag))
      continue;
    check_range(flag, value, 0, 1024);
    target->value = value;
    target->given = true;
  }
  return true;
}

int with_config(const char* command, const std::vector<std::string>& args,
                void (*body)(const job_config&, const placement_plan&, const node_counts&)) {
  const bool help = std::find(args.begin(), args.end(), "--help") != args.end()
                    || std::find(args.begin(), args.end(), "-h") != args.end();
  if (help) {
    node_counts n;
    std::cout << node_flag_set(command, n).help();
    return 0;
  }
  if (std::string(command) == "check" && args.size() == 1 && args[0] == "--reference") {
    std::cout << key_reference();
    return 0;
  }
  if (args.empty() || args[0].rfind("-", 0) == 0)
    throw usage_error("needs a config file first: troupe " + std::string(command)
                      + " CONFIG [--server-nodes N --worker-nodes N]"
                      + (std::string(command) == "check" ? ", or --reference alone" : ""));
  try {
    auto config = load_job_config(args[0]);
    node_counts n;
    if (!apply_node_flags(command, args, config, n))
      return 0;
    resolve_app_defaults(config);
    const auto job = to_training_job(config);
    body(config, plan_config(config, job, expected_data_facts(job)), n);
    return 0;
  } catch (const config_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
}

} // namespace

// The push groups in the order backward completes them (the stand-in's order); NODE is the
// process holding the group's shard ("-" in one process); W the group's share of the step, from
// the model's work (built here, as a worker builds its replica).
void print_push_groups(std::ostream& out, const job_config& c, const placement_plan& p) {
  const auto replica = build_model(model_spec_of(c));
  const stand_in_timing timing(replica->forward_work_by_slot(), p.keys.shards, p.keys.groups);
  for (std::size_t g = 0; g < p.keys.groups.size(); ++g) {
    const auto& group = p.keys.groups[g];
    const auto& shard = p.actors[p.actor(plan_role::shard, static_cast<int>(group.shard))];
    out << "push_group " << g << " shard " << group.shard << " node "
        << (p.nodes.size() > 1 ? p.nodes[static_cast<std::size_t>(shard.node)].name : "-")
        << " elements " << group.elements << " work " << std::setprecision(9) << timing.share(g);
    for (auto k : group.keys)
      for (const auto& key : p.key_table)
        if (key.shard == group.shard && key.index == k)
          out << ' ' << key.name << '=' << key.slice.length;
    out << '\n';
  }
}

int check_command(const std::vector<std::string>& args) {
  return with_config("check", args,
                     [](const job_config& c, const placement_plan& p, const node_counts& n) {
                       if (n.push_groups)
                         return print_push_groups(std::cout, c, p);
                       print_config(std::cout, c);
                       print_plan(std::cout, p);
                     });
}

int graph_command(const std::vector<std::string>& args) {
  return with_config("graph", args,
                     [](const job_config& c, const placement_plan& p, const node_counts&) {
                       std::cout << plan_to_dot(p, c.path);
                     });
}

} // namespace troupe
