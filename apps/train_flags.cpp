// `troupe train` flags: declared, checked with the flag's name in every message, then written
// onto a job_config (see train_flags.hpp for why the config is the meeting point).
//
// Without --config the config the flags are written onto is the one an empty file gives,
// except for the data statements: --dataset, --image-shape, --num-classes, --num-examples and
// --classes (and for RecordIO data --data-train, --data-val, their -idx, --rgb-mean, --rgb-std)
// *are* those statements (which is why they are refused beside --config). They reach the
// parser as typed overrides (config_overrides), applied where the statement would be read, so
// it checks them as it checks the keys and derives what follows from the dataset (validation
// data, crop and mirror, shape, classes) exactly as it does for a file. So does the compute
// count (--workers, or one compute per worker process), from which the topology is compiled:
// everything is parsed once.
#include "apps/train_flags.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "apps/commands.hpp"
#include "apps/config_options.hpp"
#include "apps/flags.hpp"
#include "apps/integer_text.hpp"
#include "apps/key_flags.hpp"
#include "apps/record_flags.hpp"
#include "apps/topology_flags.hpp"
#include "apps/train_flag_checks.hpp"
#include "apps/train_raw_flags.hpp"
#include <troupe/graph/config/job_plan.hpp>
#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/graph/config/key_table.hpp>
#include <troupe/graph/placement.hpp>
#include <troupe/kernels/device_info.hpp>
#include <troupe/kernels/lr_schedule.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

using train_flag_parts::declare;
using train_flag_parts::raw_flags;

std::string key_help(const char* flag, const std::string& extra) {
  const std::string help = config_key_of_flag(flag)->help;
  return extra.empty() ? help : help + " (" + extra + ")";
}

int default_thread_count() {
  if (const char* text = std::getenv("OMP_NUM_THREADS")) {
    // OpenMP reads a list of per-level counts; the first is the outermost level's. Blanks
    // around it are allowed, as OpenMP runtimes allow them.
    std::string first(text, std::strcspn(text, ","));
    first.erase(0, first.find_first_not_of(" \t"));
    first.erase(first.find_last_not_of(" \t") + 1);
    const auto v = parse_integer(first);
    if (v && *v > 0 && *v <= 4096)
      return static_cast<int>(*v);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

// A flag's value against the one range it shares with its config key
// (graph/config/key_ranges.hpp): what `train { threads = N }` accepts, --threads N accepts.
void check_flag(const char* flag, double v) {
  const auto* range = range_of_flag(flag);
  if (range != nullptr && !range->contains(v))
    throw usage_error(std::string("--") + flag + " must be " + range_text(*range) + ", got "
                      + shortest_number(v));
}

void check_known(const char* flag, const std::string& value,
                 const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), value) != known.end())
    return;
  std::string list;
  for (const auto& k : known)
    list += (list.empty() ? "" : ", ") + k;
  throw usage_error(std::string("--") + flag + ": unknown " + flag + " '" + value
                    + "' (known: " + list + ")");
}

bool progress_wanted(const std::string& mode) {
  if (mode == "on")
    return true;
  if (mode == "off")
    return false;
  if (mode == "auto")
    return isatty(STDOUT_FILENO) == 1;
  throw usage_error("--progress: '" + mode + "' is not one of auto, on, off");
}

void check_values(const raw_flags& r, const flag_set& f) {
  r.keys.check(f);
  check_flag("val-batch-size", static_cast<double>(r.val_batch_size));
  check_flag("threads", r.threads);
  check_flag("eval-every", static_cast<double>(r.eval_every));
  if (f.given("on-worker-loss") && r.on_worker_loss != "stop" && r.on_worker_loss != "continue"
      && r.on_worker_loss != "adopt")
    throw usage_error("--on-worker-loss must be stop, continue or adopt, got " + r.on_worker_loss);
  std::string why;
  if (!parse_compression(r.compression, why))
    throw usage_error("--compression: " + why);
  // -1 (or unset) means "the default the config derives" for these: checked when given.
  for (const auto& [flag, value] :
       {std::pair<const char*, double>{"lr", r.lr}, {"warmup-epochs", r.warmup_epochs}})
    if (f.given(flag))
      check_flag(flag, value);
  if (r.top_k < 0)
    throw usage_error("--top-k must not be negative (0: off), got " + std::to_string(r.top_k));
  check_flag("top-k", r.top_k);
  if (f.given("num-layers") && r.num_layers != 0) { // 0: the network's default depth
    const auto& layers = range_of_key("model.layers");
    check_range("num-layers", r.num_layers, static_cast<std::int64_t>(layers.min),
                static_cast<std::int64_t>(layers.max), "0 = the network's default");
  }
  check_range("random-crop-pad", r.random_crop_pad, -1,
              static_cast<std::int64_t>(range_of_key("data.crop_pad").max),
              "-1: the dataset's default");
  if (r.random_mirror < -1 || r.random_mirror > 1)
    throw usage_error("--random-mirror must be 0 or 1 (-1: the dataset's default), got "
                      + std::to_string(r.random_mirror));
  check_record_flags(r.record, f);
  check_known("network", r.network, zoo_networks());
  check_known("dataset", r.dataset, dataset_names());
  if (f.given("optimizer"))
    check_known("optimizer", r.optimizer, optimizer_names());
  try {
    parse_lr_policy(r.lr_schedule);
  } catch (const std::invalid_argument&) {
    throw usage_error("--lr-schedule: '" + r.lr_schedule
                      + "' is not one of multi-step, step, cosine, poly, one-cycle, constant");
  }
}

// Flag spellings use '-', the config language '_' (inception-bn, fashion_mnist, multi_step).
std::string config_spelling(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// How a refusal of an override names it: by the flag that gave it (config_overrides::name_of).
std::string flag_of_key(const std::string& key) {
  const std::pair<const char*, const char*> unranged[] = {{"data.first", "--num-examples"},
                                                          {"data.dataset", "--dataset"},
                                                          {"data.dir", "--data-dir"},
                                                          {"data.path", "--data-train"},
                                                          {"data.index", "--data-train-idx"}};
  for (const auto& [k, flag] : unranged)
    if (key == k)
      return flag;
  return std::string("--") + config_key_of(key).flag;
}

// The data statement --dataset, --image-shape, --num-classes, --num-examples and --classes
// stand for; only what was given is set, so the rest stays the language's default. A file
// dataset's files say its shape, so --image-shape is refused there rather than left unread; its
// --num-examples keeps the first N training examples (the statement's `first`).
void add_data_overrides(const raw_flags& r, const flag_set& f, config_overrides& o) {
  const bool records = !r.record.train.empty() || (f.given("dataset") && r.dataset == "recordio");
  if (records && f.given("classes"))
    throw usage_error("--classes keeps the examples of a dataset held in memory: RecordIO images "
                      "are streamed");
  if (records)
    return add_record_overrides(r.record, f, r.dataset, r.image_shape, r.num_classes, o);
  const bool synthetic = r.dataset == "synthetic";
  if (!synthetic && f.given("image-shape"))
    throw usage_error("--image-shape describes generated data (--dataset synthetic) or RecordIO: "
                      + r.dataset + " takes its shape from its files");
  if (!f.given("dataset") && !f.given("num-classes") && !f.given("num-examples")
      && !f.given("classes"))
    return;
  data_override d;
  d.dataset = config_spelling(r.dataset);
  if (f.given("num-classes"))
    d.classes = r.num_classes;
  if (f.given("classes"))
    d.class_subset = r.classes;
  if (synthetic && f.given("image-shape"))
    d.shape = parse_shape("image-shape", r.image_shape);
  if (f.given("num-examples")) {
    if (synthetic)
      d.examples = r.num_examples;
    else
      d.first = r.num_examples;
  }
  o.train_data = d;
}

// What the flags say beside the config's text: the data statements (refused with --config,
// whose data statements say so) and the compute count.
config_overrides overrides_of(const raw_flags& r, const flag_set& f) {
  config_overrides o;
  o.name_of = flag_of_key;
  if (f.given("config")) {
    std::vector<std::string> structural{"dataset", "image-shape", "num-classes", "num-examples",
                                        "classes"};
    structural.insert(structural.end(), record_statement_flags.begin(),
                      record_statement_flags.end());
    for (const auto& flag : structural)
      if (f.given(flag))
        throw usage_error("--" + flag
                          + " cannot be combined with --config: "
                            "edit the config's data statement");
  } else {
    add_data_overrides(r, f, o);
  }
  if (f.given("workers"))
    o.workers = r.workers;
  o.topology = r.topology.override_of(f);
  return o;
}

// The config the flags are written onto: --config's file, or an empty one.
job_config base_config(const raw_flags& r, const flag_set& f, const config_overrides& o) {
  if (f.given("config"))
    return load_job_config(r.config, o);
  auto config = parse_job_config("command line", "", o);
  const auto& data = config.train_data.dataset.value;
  if (f.given("dataset") && r.data_dir.empty() && data != "synthetic" && data != "recordio"
      && default_data_dir(io_dataset_name(data)).empty())
    throw usage_error("--data-dir is required for --dataset " + r.dataset);
  return config;
}

// A value a flag set: given, at no place in the config's text.
template <typename T, typename V> void set_given(located<T>& target, V value) {
  target.value = T(std::move(value));
  target.span = source_span{};
  target.given = true;
}

void apply_data_flags(job_config& c, const raw_flags& r, const flag_set& f) {
  r.keys.apply(c, f, "data");
  auto& train = c.train_data;
  auto& val = c.validation_data;
  if (!r.data_dir.empty()) {
    set_given(train.dir, r.data_dir);
    if (val.dataset.value == train.dataset.value)
      set_given(val.dir, r.data_dir);
  }
  if (f.given("val-batch-size"))
    set_given(val.batch, r.val_batch_size);
  if (r.random_crop_pad >= 0)
    set_given(train.crop_pad, r.random_crop_pad);
  if (r.random_mirror >= 0)
    set_given(train.mirror, r.random_mirror != 0);
  apply_record_flags(r.record, f, train, val);
  if (r.no_validation)
    val.enabled = false;
}

void apply_model_and_optimizer_flags(job_config& c, const raw_flags& r, const flag_set& f) {
  for (const char* section : {"model", "optimizer", "schedule"})
    r.keys.apply(c, f, section);
  if (f.given("network"))
    set_given(c.model.network, config_spelling(r.network));
  if (f.given("num-layers"))
    set_given(c.model.layers, r.num_layers);
  auto& o = c.optimizer;
  if (f.given("lr"))
    set_given(o.lr, r.lr);
  if (f.given("optimizer"))
    set_given(o.name, r.optimizer);
  resolve_optimizer_defaults(c);
  auto& s = c.schedule;
  if (f.given("lr-schedule"))
    set_given(s.policy, config_spelling(r.lr_schedule));
  if (f.given("lr-step-epochs")) {
    if (r.lr_step_epochs.empty()) // "": 50% and 75% of the run, whatever the config wrote
      s.written_steps = {};
    else
      set_given(s.written_steps, parse_steps_flag(r.lr_step_epochs));
  }
  if (f.given("warmup-epochs"))
    set_given(s.warmup, r.warmup_epochs);
}

// The cluster section's flags. --workers is not among them: it is an override (overrides_of),
// applied before the topology is compiled from it.
void apply_cluster_flags(job_config& c, const raw_flags& r, const flag_set& f) {
  r.keys.apply(c, f, "cluster");
  auto& cluster = c.cluster;
  if (r.no_overlap)
    set_given(cluster.overlap, false);
  if (r.no_priority)
    set_given(cluster.priority, false);
  if (f.given("on-worker-loss"))
    set_given(cluster.on_worker_loss, r.on_worker_loss);
}

void apply_run_flags(job_config& c, const raw_flags& r, const flag_set& f) {
  r.keys.apply(c, f, "train");
  auto& run = c.run;
  if (f.given("eval-every")) {
    set_given(run.eval_every, r.eval_every);
    if (r.eval_every == 0) // as `train { eval_every = 0 }`: no validation
      c.validation_data.enabled = false;
  }
  if (f.given("threads"))
    set_given(run.threads, r.threads);
  else if (!run.threads.given)
    run.threads.value = r.threads; // default_thread_count()
  if (f.given("top-k")) {
    if (r.top_k > c.model.classes.value)
      throw usage_error("--top-k must be at most the " + std::to_string(c.model.classes.value)
                        + " classes, got " + std::to_string(r.top_k));
    set_given(run.top_k, r.top_k);
  }
  if (f.given("devices")) {
    try {
      set_given(run.devices, parse_compute_devices(r.devices));
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("--devices: ") + e.what());
    }
  }
  apply_cluster_flags(c, r, f);
  if (f.given("compression")) {
    std::string why;
    const auto spec = *parse_compression(r.compression, why); // checked in check_values
    compress_machine_exit(c.topology, spec);
    check_compression_flag(c.topology, spec);
  }
}

// Flags onto the config, then the values the parser derives from the run's length, which a
// flag may have changed (warm-up, multi-step boundaries: resolve_schedule_defaults).
void apply_flags(job_config& c, const raw_flags& r, const flag_set& f) {
  apply_data_flags(c, r, f);
  apply_model_and_optimizer_flags(c, r, f);
  apply_run_flags(c, r, f);
  resolve_schedule_defaults(c);
  check_schedule_flags(c, f);
  check_optimizer_flags(c, f);
}

} // namespace

train_command_line parse_train_flags(const std::vector<std::string>& args) {
  return parse_train_flags(
    args, "train",
    "Trains a network with loader, compute, parameter-shard, coordinator and "
    "metrics actors in one process and prints MXNet-style progress.",
    {});
}

namespace {

cluster_network network_of(const cluster_config& k) {
  return cluster_network{k.scheduler.value,      k.listen.value,       k.join_timeout.value,
                         k.heartbeat.value,      k.peer_timeout.value, k.request_timeout.value,
                         k.tcp_congestion.value, k.link_mbit.value,    k.backward_ms.value,
                         k.balance.value};
}

// The compute count when none is given: one per worker process, asked of `worker_processes`
// with the cluster section as the flags leave it (they are applied to the config itself later,
// with the rest).
config_overrides::count_question
compute_count_default(const raw_flags& r, const flag_set& f,
                      const std::function<int(const cluster_settings&)>& worker_processes) {
  return [&r, &f, worker_processes](const cluster_config& read) -> std::optional<int> {
    job_config flagged;
    flagged.cluster = read;
    apply_cluster_flags(flagged, r, f);
    const auto& cluster = flagged.cluster;
    const cluster_settings settings{network_of(cluster), cluster.server_nodes.value,
                                    cluster.worker_nodes.value, f.given_flags()};
    const int processes = worker_processes ? worker_processes(settings) : settings.worker_nodes;
    if (processes <= 0)
      return std::nullopt;
    return processes;
  };
}

// The command line of a parsed config with the flags on it.
train_command_line command_line_of(job_config& config, const raw_flags& r, const flag_set& f) {
  train_command_line out;
  out.given = f.given_flags();
  apply_flags(config, r, f);
  resolve_app_defaults(config);
  out.job = to_training_job(config);
  out.output = session_output_of(config);
  out.threads = config.run.threads.value;
  out.threads_given = config.run.threads.given;
  out.workers_given = config.cluster.workers.given;
  out.devices = config.run.devices.value;
  out.convolutions = convolution_algorithms_flag(r.cudnn_algorithms);
  out.network = network_of(config.cluster);
  out.config = config;
  out.notes = config.notes;
  return out;
}

} // namespace

train_command_line
parse_train_flags(const std::vector<std::string>& args, const std::string& command,
                  const std::string& summary, const std::function<void(flag_set&)>& declare_own,
                  const std::function<int(const cluster_settings&)>& worker_processes,
                  const std::set<std::string>& reads) {
  raw_flags r;
  r.threads = default_thread_count();
  flag_set f(command, summary);
  if (declare_own)
    declare_own(f);
  declare(f, r);
  if (!reads.empty())
    f.keep_only(reads, "is not read by troupe " + command + " (troupe " + command
                         + " --help lists what it reads)");
  train_command_line out;
  if (!f.parse(args)) {
    out.help = true;
    out.help_text = f.help();
    return out;
  }
  check_values(r, f);
  const bool progress_bar = progress_wanted(r.progress);
  try {
    auto overrides = overrides_of(r, f);
    overrides.default_workers = compute_count_default(r, f, worker_processes);
    auto config = base_config(r, f, overrides);
    out = command_line_of(config, r, f);
    r.topology.check_processes(f, out.job.nodes.servers, out.job.nodes.workers, command == "node");
    check_plan(config, out.job, f.given("shards"));
  } catch (const config_error& e) {
    throw usage_error(e.what());
  }
  out.output.progress_bar = progress_bar;
  out.timeline_path = r.timeline;
  return out;
}

std::set<std::string> train_flag_names() {
  raw_flags r;
  flag_set f("train", "");
  declare(f, r);
  const auto names = f.names();
  return {names.begin(), names.end()};
}

convolution_algorithms convolution_algorithms_flag(const std::string& text) {
  try {
    return parse_convolution_algorithms(text);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--cudnn-algorithms: ") + e.what());
  }
}

void require_compute_devices(const std::vector<compute_device>& devices,
                             convolution_algorithms convolutions) {
  require_compute_devices(devices);
  set_convolution_algorithms(convolutions);
}

void require_compute_devices(const std::vector<compute_device>& devices) {
  require_devices(devices, query_devices());
}

} // namespace troupe
