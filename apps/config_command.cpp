// `troupe check CONFIG` and `troupe graph CONFIG`: validate a config without training.
// check prints every resolved value (defaults marked) and the placement plan the session would
// spawn, with its hash; graph prints the plan as Graphviz DOT. Config errors print the
// compiler-style diagnostic and exit 2. Neither opens data files: a config is checked, not the
// data it names, so the plan counts steps from the datasets' standard sizes
// (expected_data_facts); a run that opens the data plans again from what it finds.
#include <iostream>

#include "apps/commands.hpp"
#include "apps/config_options.hpp"
#include <troupe/graph/config/job_plan.hpp>

namespace troupe {

namespace {

// `--server-nodes N` / `--worker-nodes N` after the config: the processes of a cluster run,
// as `troupe train` and `troupe node` take them. Returns false on anything else.
bool apply_node_flags(const std::vector<std::string>& args, job_config& config) {
  for (std::size_t i = 1; i < args.size(); i += 2) {
    auto* target = args[i] == "--server-nodes"   ? &config.cluster.server_nodes
                   : args[i] == "--worker-nodes" ? &config.cluster.worker_nodes
                                                 : nullptr;
    if (!target || i + 1 >= args.size())
      return false;
    try {
      std::size_t used = 0;
      const int value = std::stoi(args[i + 1], &used);
      if (used != args[i + 1].size() || value < 0 || value > 1024)
        return false;
      target->value = value;
      target->given = true;
    } catch (const std::exception&) {
      return false;
    }
  }
  return true;
}

int with_config(const char* command, const std::vector<std::string>& args,
                void (*body)(const job_config&, const placement_plan&)) {
  const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
  if (args.empty() || help || args[0].rfind("-", 0) == 0) {
    std::cerr << "usage: troupe " << command
              << " CONFIG [--server-nodes S --worker-nodes W]   (see docs/dsl.md)\n";
    return help ? 0 : 2;
  }
  try {
    auto config = load_job_config(args[0]);
    if (!apply_node_flags(args, config)) {
      std::cerr << "troupe " << command << ": after the config only --server-nodes N and "
                << "--worker-nodes N (0..1024) are taken\n";
      return 2;
    }
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
