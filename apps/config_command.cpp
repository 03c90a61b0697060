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

int with_config(const char* command, const std::vector<std::string>& args,
                void (*body)(const job_config&, const placement_plan&)) {
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    std::cerr << "usage: troupe " << command << " CONFIG   (see docs/dsl.md)\n";
    return args.size() == 1 ? 0 : 2;
  }
  try {
    auto config = load_job_config(args[0]);
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
