// `troupe train`: parse flags, open the metrics file, size the thread pools, start an
// in-process node, run the job. Everything that can be refused (flags, config, devices, the
// metrics file, the checkpoint folder) is refused before the actor system starts, so no
// failure waits for an epoch.
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <caf/actor_system.hpp>

#include "apps/commands.hpp"
#include "apps/interrupt_watch.hpp"
#include "apps/run_output.hpp"
#include "apps/status_serving.hpp"
#include "apps/train_flags.hpp"
#include "apps/weights_digest.hpp"
#include <troupe/cluster/local_node.hpp>
#include <troupe/io/atomic_file.hpp>
#include <troupe/io/checkpoint_file.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/kernels/threading.hpp>

namespace troupe {

int train_command(const std::vector<std::string>& args) {
  auto cli = parse_train_flags(args);
  if (cli.help) {
    std::cout << cli.help_text;
    return 0;
  }
  require_compute_devices(cli.devices, cli.convolutions);
  check_prefix_folder(cli.output.checkpoint.prefix);
  if (!cli.output.metrics_path.empty())
    cli.output.metrics_file =
      open_metrics_file(cli.output.metrics_path, run_record(args, cli.job, cli.threads));
  cli.output.timeline = open_timeline(cli.timeline_path, "troupe");
  set_compute_threads(cli.threads);
  cli.output.log = &std::cout;
  cli.output.position = std::make_shared<run_position>();
  cli.output.terminal_columns = terminal_columns();
  std::cout << argument_lines(args, cli.job, cli.threads) << note_lines(cli.notes) << std::flush;
  status_serving status(cli, std::cout);
  interrupt_watch interrupts(cli.output.position); // before the actor system's threads start
  local_node_config config;
  caf::actor_system system{config};
  request_timeouts timeouts; // the config's request_timeout, checked against its range there
  timeouts.step =
    std::chrono::milliseconds(static_cast<std::int64_t>(cli.network.request_timeout * 1000));
  auto result = run_training(system, cli.job, cli.output, cli.devices, timeouts);
  std::cout << weights_digest_line(result) << std::endl;
  const int code = finished_run_status(result, std::cerr);
  status.end(code == 0 ? "finished" : "failed");
  const int written = write_timeline(cli.output.timeline, cli.timeline_path, std::cerr);
  return code != 0 ? code : written;
}

} // namespace troupe
