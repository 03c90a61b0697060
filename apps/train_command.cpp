// `troupe train`: parse flags, size the thread pools, start an in-process node, run the job.
#include <iostream>

#include <caf/actor_system.hpp>

#include "apps/commands.hpp"
#include "apps/train_flags.hpp"
#include "apps/weights_digest.hpp"
#include <troupe/cluster/local_node.hpp>
#include <troupe/kernels/threading.hpp>

namespace troupe {

int train_command(const std::vector<std::string>& args) {
  auto cli = parse_train_flags(args);
  if (cli.help) {
    std::cout << cli.help_text;
    return 0;
  }
  require_compute_devices(cli.devices);
  set_compute_threads(cli.threads);
  cli.output.log = &std::cout;
  local_node_config config;
  caf::actor_system system{config};
  auto result = run_training(system, cli.job, cli.output, cli.devices);
  std::cout << weights_digest_line(result) << std::endl;
  return result.phases.empty() ? 1 : 0;
}

} // namespace troupe
