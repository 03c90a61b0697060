// The raw values of `troupe train`'s flags, and their declaration: what train_flags.cpp
// checks and writes onto a job_config. Private to apps/.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "apps/flags.hpp"
#include "apps/key_flags.hpp"
#include "apps/record_flags.hpp"
#include "apps/topology_flags.hpp"
#include <troupe/graph/config/job_config.hpp>

namespace troupe::train_flag_parts {

// Raw flag values. -1 and "" mean "the default the config derives", so those flags are
// written onto the config only when they carry a value.
struct raw_flags {
  // The defaults are the config language's (a default job_config's), save where -1 or ""
  // stands for a default derived from other values.
  static const job_config& language() {
    static const job_config defaults;
    return defaults;
  }
  std::string network = language().model.network.value, dataset = "fashion-mnist", data_dir;
  std::string lr_step_epochs, lr_schedule = "multi-step", progress = "auto";
  std::string image_shape = "1,28,28", classes;
  std::string config, devices, cudnn_algorithms = "exact";
  std::string timeline;    // a process-local output, like the progress bar: no config key
  record_flags record;     ///< --data-train, --data-val, ... (apps/record_flags.cpp)
  topology_flags topology; ///< --topology, --kv-store (apps/topology_flags.cpp)
  int num_layers = 0, threads = 1, num_classes = language().train_data.classes.value;
  int top_k = 0, workers = language().cluster.workers.value;
  std::string on_worker_loss; // empty: the topology's default
  std::string optimizer;      // empty: the config's (sgd when it names none)
  std::string compression = "none";
  std::int64_t val_batch_size = 500;
  std::int64_t eval_every = language().run.eval_every.value;
  std::int64_t random_crop_pad = -1, random_mirror = -1;
  std::int64_t num_examples = language().train_data.examples.value;
  double lr = -1, warmup_epochs = -1;
  bool no_validation = false, no_overlap = false, no_priority = false;
  /// The flags of the plain keys (apps/key_flags.hpp).
  key_flags keys{declared_by_hand()};

private:
  // The keys with a flag that are not plain flags of their key, and why: an override applied
  // before the topology is compiled (workers); a value that derives a default (-1 for lr and
  // warmup-epochs, 0 for num-layers) or does more than set its key (eval-every 0 turns
  // validation off); a value checked against another key (top-k against the classes) or
  // spelled otherwise (on-worker-loss, lr-step-epochs); the thread count's default from
  // OMP_NUM_THREADS; the data statements (overrides of the statement, config_overrides); and
  // the network keys, which troupe node declares as seconds and addresses.
  static std::set<std::string> declared_by_hand() {
    return {"workers",        "on-worker-loss", "num-layers",  "lr",           "warmup-epochs",
            "lr-step-epochs", "eval-every",     "threads",     "top-k",        "devices",
            "data-train",     "data-train-idx", "image-shape", "num-classes",  "num-examples",
            "classes",        "rgb-mean",       "rgb-std",     "data-dir",     "scheduler",
            "listen",         "join-timeout",   "heartbeat",   "peer-timeout", "request-timeout",
            "tcp-congestion", "link-mbit",      "backward-ms"};
  }
};

/// Declares every flag of `troupe train` on `f`, each writing into `r`, with its help and its
/// placeholder (`--lr RATE`).
void declare(flag_set& f, raw_flags& r);

} // namespace troupe::train_flag_parts
