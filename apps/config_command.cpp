// `troupe check CONFIG` and `troupe graph CONFIG`: validate a config without training.
// check prints every resolved value (defaults marked) and the placement plan the session would
// spawn, with its hash; graph prints the plan as Graphviz DOT. Config errors print the
// compiler-style diagnostic and exit 2. Neither opens data files: a config is checked, not the
// data it names, so the plan counts steps from the datasets' standard sizes
// (expected_data_facts); a run that opens the data plans again from what it finds.
#include <algorithm>
#include <iostream>
#include <tuple>

#include "apps/commands.hpp"
#include "apps/config_options.hpp"
#include "apps/flags.hpp"
#include <troupe/graph/config/job_plan.hpp>

namespace troupe {

namespace {

struct node_counts {
  int server_nodes = 0, worker_nodes = 0;
};

flag_set node_flag_set(const std::string& command, node_counts& n) {
  flag_set f(command, command == "check"
                        ? "Checks a .troupe config (docs/dsl.md) and prints every resolved value and "
                          "the actor plan a run would spawn."
                        : "Prints the actor plan of a .troupe config (docs/dsl.md) as Graphviz DOT.");
  f.set_operands("CONFIG");
  f.add("server-nodes", n.server_nodes, "server processes of a cluster run to plan for");
  f.add("worker-nodes", n.worker_nodes, "worker processes of a cluster run to plan for");
  return f;
}

// `--server-nodes N` / `--worker-nodes N` after the config (the processes of a cluster run,
// as `troupe train` takes them), through the app's flag parser: anything else is a
// usage_error naming it. False: --help was asked for (and printed).
bool apply_node_flags(const char* command, const std::vector<std::string>& args, job_config& config) {
  node_counts n;
  auto f = node_flag_set(command, n);
  if (!f.parse({args.begin() + 1, args.end()})) {
    std::cout << f.help();
    return false;
  }
  const int server_nodes = n.server_nodes, worker_nodes = n.worker_nodes;
  for (auto [flag, value, target] : {std::tuple{"server-nodes", server_nodes, &config.cluster.server_nodes},
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
                void (*body)(const job_config&, const placement_plan&)) {
  const bool help = std::find(args.begin(), args.end(), "--help") != args.end()
                    || std::find(args.begin(), args.end(), "-h") != args.end();
  if (help) {
    node_counts n;
    std::cout << node_flag_set(command, n).help();
    return 0;
  }
  if (args.empty() || args[0].rfind("-", 0) == 0)
    throw usage_error("needs a config file first: troupe " + std::string(command)
                      + " CONFIG [--server-nodes N --worker-nodes N]");
  try {
    auto config = load_job_config(args[0]);
    if (!apply_node_flags(command, args, config))
      return 0;
    resolve_app_defaults(config);
    const auto job = to_training_job(config);
    body(config, plan_config(config, job, expected_data_facts(job)));
    return 0;
  } catch (const config_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
}

} // namespace

int check_command(const std::vector<std::string>& args) {
  return with_config("check", args, [](const job_config& c, const placement_plan& p) {
    print_config(std::cout, c);
    print_plan(std::cout, p);
  });
}

int graph_command(const std::vector<std::string>& args) {
  return with_config("graph", args, [](const job_config& c, const placement_plan& p) {
    std::cout << plan_to_dot(p, c.path);
  });
}

} // namespace troupe
