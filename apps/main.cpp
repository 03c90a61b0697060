// `troupe`: the command-line entry point. Dispatches to a subcommand; every error that
// reaches here is printed as one line and turned into a non-zero exit status: 2 for a usage
// error (a flag, a config), 1 for a failure while running (data, files, the run itself).
// Asked for help (`troupe help`, `troupe help COMMAND`, `COMMAND --help`), it prints to stdout
// and exits 0; a bare `troupe` is a usage error: a short usage on stderr, exit 2.
#include <iostream>
#include <string>
#include <troupe/kernels/cpu_support.hpp>
#include <troupe/version.hpp>
#include <vector>

#include "apps/commands.hpp"
#include "apps/flags.hpp"

namespace {

const char* overview = R"(usage: troupe <command> [flags]

Troupe trains image classifiers as a dataflow of actors (loaders, compute, parameter shards).

commands:
  train    train a network on a dataset (Fashion-MNIST by default) and report accuracy per epoch
  eval     evaluate a saved checkpoint on a dataset: accuracy, top-k, loss, per class
  node     run one process of a training cluster (scheduler, server or worker)
  bench    measure training throughput (samples/s) of mlp, lenet and resnet-20; `bench transport`,
           `bench decode`, `bench scaling` (workers on emulated hosts, root)
  devices  list compute devices (CPU threads, CUDA GPUs when built with CUDA)
  check    validate a .troupe config and print the resolved plan (docs/dsl.md)
  graph    print a .troupe config's actor graph as Graphviz DOT
  launch   start a cluster run (scheduler, servers, workers) here or on hosts over ssh
  ctl      ask a running cluster's scheduler for its status, or to drain a worker
  im2rec   pack a folder of JPEGs (or a .lst) into MXNet RecordIO files for --data-train
  timeline merge the --timeline parts of a cluster's nodes onto the scheduler's clock
  help     print this overview; `troupe help COMMAND` prints a command's help

`troupe <command> --help` describes every flag of a command.
)";

const char* short_usage =
  "usage: troupe <command> [flags]\n"
  "commands: train, eval, node, bench, devices, check, graph, launch, ctl, im2rec, timeline, help\n"
  "`troupe help` says what each does; `troupe help COMMAND` describes its flags\n";

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << short_usage;
    return 2;
  }
  const auto is_help = [](const std::string& a) {
    return a == "help" || a == "--help" || a == "-h";
  };
  if (args[0] == "help" && args.size() > 1 && !is_help(args[1]))
    args = {args[1], "--help"}; // `troupe help train` is `troupe train --help`
  else if (is_help(args[0])) {
    std::cout << overview;
    return 0;
  }
  if (args[0] == "--version") {
    std::cout << "troupe " TROUPE_VERSION_STRING << (TROUPE_WITH_CUDA ? " (CUDA)" : "") << " for "
              << troupe::cpu_baseline() << "\n";
    return 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "train")
      return troupe::train_command(args);
    if (command == "eval")
      return troupe::eval_command(args);
    if (command == "bench")
      return troupe::bench_command(args);
    if (command == "node")
      return troupe::node_command(args);
    if (command == "devices")
      return troupe::devices_command(args);
    if (command == "check")
      return troupe::check_command(args);
    if (command == "graph")
      return troupe::graph_command(args);
    if (command == "launch")
      return troupe::launch_command(args);
    if (command == "ctl")
      return troupe::ctl_command(args);
    if (command == "im2rec")
      return troupe::im2rec_command(args);
    if (command == "timeline")
      return troupe::timeline_command(args);
    std::cerr << ("troupe: unknown command '" + command
                  + "' (commands: train, eval, node, bench, devices, check, graph, launch, ctl, "
                    "im2rec, timeline, help)\n");
    return 2;
  } catch (const troupe::usage_error& e) {
    // One write per line: processes under one launcher (mpirun) may share the stream.
    std::cerr << ("troupe " + command + ": " + e.what() + "\n") << std::flush;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << ("troupe " + command + ": error: " + e.what() + "\n") << std::flush;
    return 1;
  }
}
