// Turns `troupe train` flags into typed training options, with MXNet train_*.py spellings
// (--network --num-layers --dataset --data-dir --batch-size --lr --lr-step-epochs --lr-factor
// --mom --wd --num-epochs --seed --threads --metrics --disp-batches) plus Troupe's own.
//
// Every training flag names a field of a job_config (graph/config/job_config.hpp): the flags
// are written onto the config read by --config, or onto the default config when there is none,
// and that config becomes the training_job by the one conversion `troupe check` also uses
// (config_options.hpp). So a config and the flags that say the same thing train the same job,
// and the defaults that depend on other values (lr on the network, data directory and
// augmentation on the dataset, multi-step boundaries at 50% and 75% of the epochs) are
// resolved in one place.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "apps/flags.hpp"

#include <troupe/actors/training_session.hpp>
#include <troupe/graph/config/job_config.hpp>
#include <troupe/kernels/compute_device.hpp>

namespace troupe {

/// How a cluster's processes reach each other, as the config says (`troupe node` flags
/// override each).
struct cluster_network {
  std::string scheduler; ///< "HOST:PORT"; empty: not said
  std::string listen = "127.0.0.1";
  double join_timeout = 120, heartbeat = 1, peer_timeout = 5; ///< seconds
  /// Seconds a request within a step (a push, a pull, a batch) may wait: the run's
  /// request_timeouts::step, in one process and across processes alike.
  double request_timeout = 600;
  /// cluster.tcp_congestion: auto, system or an algorithm (cluster/tcp_congestion.hpp).
  std::string tcp_congestion = "auto";
  /// cluster.link_mbit: the hosts' link rate per direction (0: not stated); cluster.backward_ms.
  std::int64_t link_mbit = 0;
  double backward_ms = -1;
  /// cluster.balance: "off" or "auto" (the scheduler re-places ranks between epochs).
  std::string balance = "off";
};

struct train_command_line {
  training_job job;
  session_output output;
  cluster_network network;
  /// Compute threads: --threads, else the config's train.threads, else default_thread_count().
  int threads = 1;
  /// Whether --threads or the config's train.threads said so (else threads is the default).
  bool threads_given = false;
  /// Whether --workers or the config's cluster.workers set the compute actors (else 1, or one
  /// per worker process of a cluster run).
  bool workers_given = false;
  /// --devices, else the config's train.devices; empty: the CPU.
  std::vector<compute_device> devices;
  /// --cudnn-algorithms (require_compute_devices makes it the process's choice).
  convolution_algorithms convolutions = convolution_algorithms::exact;
  bool help = false;
  std::string help_text;
  /// The flags the user gave (a command's own too), to tell a value given from a default.
  std::set<std::string> given;
  /// The config with the flags on it and the defaults resolved, which `job` was made from:
  /// what `troupe check` prints.
  job_config config;
  /// What resolving the job changed that neither the config nor the flags say (a warm-up
  /// shortened with the run, job_config::notes): printed under the "Resolved:" line.
  std::vector<std::string> notes;
  /// --timeline: where the run's timeline is written at its end; empty: none is recorded.
  std::string timeline_path;
};

/// The name of every flag `troupe train` takes (hidden ones too): what each command that
/// takes the training flags (check, node) declares alike.
std::set<std::string> train_flag_names();

/// Throws usage_error naming the flag for anything it cannot accept (and, with --config,
/// carrying the config's diagnostic for a config it cannot accept).
train_command_line parse_train_flags(const std::vector<std::string>& args);

/// A cluster run's settings as the flags and the config's cluster section give them, before
/// the job is made: what `troupe node` resolves its place from.
struct cluster_settings {
  cluster_network network;
  int server_nodes = 0; ///< processes; 0: not said (or one process)
  int worker_nodes = 0;
  /// The flags the user gave, to tell a value given from the config's.
  std::set<std::string> given;
};

/// The same for a command that takes the training flags and flags of its own (`troupe
/// node`): `declare_own` adds them to the flag set before parsing. `worker_processes` says
/// how many worker processes the run has once the cluster's settings are read (troupe node
/// asks its launcher's environment; it is asked once, also when the count is given); without
/// it, the flags' and config's --worker-nodes. When neither --workers nor the config's
/// cluster.workers says, the run gets one compute per worker process (`troupe launch -n 2
/// --network mlp` trains two computes, not one that cannot be split over two processes), and
/// the topology is compiled for that count. `reads`, when not empty, names every flag the command
/// reads (its own too): the others are left out of its help and refused when given.
train_command_line
parse_train_flags(const std::vector<std::string>& args, const std::string& command,
                  const std::string& summary, const std::function<void(flag_set&)>& declare_own,
                  const std::function<int(const cluster_settings&)>& worker_processes = {},
                  const std::set<std::string>& reads = {});

/// Checks, before anything starts, that this process has the devices the run asks for:
/// std::runtime_error naming a GPU it lacks (or a build without CUDA).
void require_compute_devices(const std::vector<compute_device>& devices);
/// The same, and makes `convolutions` the process's choice of cuDNN algorithms: what a command
/// runs before its GPU models are built.
void require_compute_devices(const std::vector<compute_device>& devices,
                             convolution_algorithms convolutions);
/// --cudnn-algorithms's value; usage_error naming the flag when it is not exact or fastest.
convolution_algorithms convolution_algorithms_flag(const std::string& text);

/// The help of a flag that sets a config key: what the key table says of the key
/// (key_table.hpp), with `extra` in parentheses where the flag's value means more than the
/// key's (-1 for a default derived from other values).
std::string key_help(const char* flag, const std::string& extra = "");

/// The compute threads a run gets when neither --threads nor the config says: as OpenMP
/// programs do, OMP_NUM_THREADS when it is a positive integer up to 4096 (the config's limit;
/// of a comma list, the first), else the hardware's threads (1 when unknown). Reads the
/// environment each call.
int default_thread_count();

} // namespace troupe
