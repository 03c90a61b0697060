// `troupe`: the command-line entry point. Dispatches to a subcommand; every error that
// reaches here is printed as one line and turned into a non-zero exit status.
#include <troupe/kernels/cpu_support.hpp>
#include <troupe/version.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "apps/commands.hpp"
#include "apps/flags.hpp"

namespace {

const char* overview = R"(usage: troupe <command> [flags]

Troupe trains image classifiers as a dataflow of actors (loaders, compute, parameter shards).

commands:
  train    train a network on a dataset (Fashion-MNIST by default) and report accuracy per epoch
  node     run one process of a training cluster (scheduler, server or worker)
  bench    measure training throughput (samples/s) of mlp, lenet and resnet-20
  devices  list compute devices (CPU threads, CUDA GPUs when built with CUDA)
  check    validate a .troupe config and print the resolved plan (docs/dsl.md)
  graph    print a .troupe config's actor graph as Graphviz DOT
  launch   start a cluster run (scheduler, servers, workers) here or on hosts over ssh
  im2rec   pack a folder of JPEGs (or a .lst) into MXNet RecordIO files for --data-train
  help     print this overview

`troupe <command> --help` describes every flag of a command.
)";

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << overview;
    return args.empty() ? 2 : 0;
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
    if (command == "im2rec")
      return troupe::im2rec_command(args);
    std::cerr << "troupe: unknown command '" << command << "' (commands: train, node, bench, devices, check, graph, launch, im2rec, help)\n";
    return 2;
  } catch (const troupe::usage_error& e) {
    std::cerr << "troupe " << command << ": " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "troupe " << command << ": error: " << e.what() << '\n';
    return 1;
  }
}
