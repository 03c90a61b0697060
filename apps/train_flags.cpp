#include "apps/train_flags.hpp"

#include <unistd.h>

#include <algorithm>

#include "apps/commands.hpp"
#include "apps/config_options.hpp"
#include "apps/flags.hpp"
#include <troupe/io/batch_source.hpp>
#include <troupe/io/normalization.hpp>

namespace troupe {

float default_learning_rate(const std::string& network) {
  if (network == "lenet" || network == "vgg" || network == "inception-bn")
    return 0.05f;
  return 0.1f;
}

std::string default_data_dir(const std::string& dataset) {
  if (dataset == "fashion-mnist")
    return "/usr/share/datasets/fashion-mnist";
  if (dataset == "mnist")
    return "/usr/share/datasets/mnist";
  return "";
}

namespace {

// Raw flag values, before defaults that depend on each other are resolved.
struct raw_flags {
  std::string network = "lenet", dataset = "fashion-mnist", data_dir, metrics;
  std::string lr_step_epochs, lr_schedule = "multi-step", progress = "auto";
  std::string image_shape = "1,28,28";
  std::string config, straggler;
  int num_layers = 0, threads = 2, shards = 1, prefetch = 3, num_classes = 10;
  std::int64_t batch_size = 128, val_batch_size = 500, num_epochs = 10, disp_batches = 100;
  std::int64_t eval_every = 1;
  std::int64_t seed = 0, random_crop_pad = -1, random_mirror = -1, num_examples = 60000;
  std::int64_t slice_bytes = key_plan_options{}.slice_bytes;
  std::int64_t group_bytes = key_plan_options{}.group_bytes;
  double lr = -1, lr_factor = 0.1, mom = 0.9, wd = 1e-4, warmup_epochs = 1;
  bool nesterov = false, no_validation = false, no_overlap = false;
};

void declare(flag_set& f, raw_flags& r) {
  f.add("config", r.config, "read the job from a .troupe config (docs/dsl.md); other flags given override it");
  f.add("straggler", r.straggler, "experiment knob W:MS: worker W waits MS ms after each backward (\"\": none)");
  f.add("network", r.network, "mlp | lenet | resnet | inception-bn | vgg");
  f.add("num-layers", r.num_layers, "depth for resnet (20/32/44/56/110, 18/50); 0 = default");
  f.add("dataset", r.dataset, "fashion-mnist | mnist | cifar10 | synthetic");
  f.add("data-dir", r.data_dir, "dataset directory (fashion-mnist: /usr/share/datasets/fashion-mnist)");
  f.add("batch-size", r.batch_size, "training batch size");
  f.add("val-batch-size", r.val_batch_size, "validation batch size");
  f.add("lr", r.lr, "initial learning rate (-1: 0.1 for mlp/resnet, 0.05 for lenet/vgg/inception-bn)");
  f.add("lr-schedule", r.lr_schedule, "multi-step | cosine | constant");
  f.add("lr-step-epochs", r.lr_step_epochs, "epochs where the lr is multiplied by --lr-factor, e.g. 5,8 (\"\": 50% and 75% of --num-epochs)");
  f.add("lr-factor", r.lr_factor, "multi-step lr multiplier");
  f.add("warmup-epochs", r.warmup_epochs, "linear lr warm-up from 0 over this many epochs (keeps lenet stable at lr 0.05)");
  f.add("mom", r.mom, "SGD momentum");
  f.add_switch("nesterov", r.nesterov, "use Nesterov momentum");
  f.add("wd", r.wd, "weight decay (L2) on weights; biases and batch-norm scale/shift are exempt");
  f.add("num-epochs", r.num_epochs, "epochs to train");
  f.add("seed", r.seed, "seed for initialization, shuffling and augmentation");
  f.add("threads", r.threads, "compute threads (oneDNN/OpenMP and oneTBB share this budget)");
  f.add("shards", r.shards, "parameter shard actors the weights are spread over");
  f.add("slice-bytes", r.slice_bytes, "parameters above this many bytes are cut into slices spread over the shards (>= 4)");
  f.add("group-bytes", r.group_bytes, "keys below this many bytes are bundled into one push per shard (0: never bundle)");
  f.add_switch("no-overlap", r.no_overlap, "send all pushes after backward instead of each as soon as backward produced it");
  f.add("prefetch", r.prefetch, "batches each loader builds ahead");
  f.add("random-crop-pad", r.random_crop_pad, "random crop after zero padding (-1: 4 for cifar10, else 0)");
  f.add("random-mirror", r.random_mirror, "random horizontal flip 0/1 (-1: 1 for cifar10, else 0)");
  f.add("image-shape", r.image_shape, "synthetic data: C,H,W");
  f.add("num-classes", r.num_classes, "synthetic data: classes");
  f.add("num-examples", r.num_examples, "synthetic data: training examples");
  f.add_switch("no-validation", r.no_validation, "skip the validation pass after each epoch");
  f.add("eval-every", r.eval_every, "validate after every Nth epoch and after the last");
  f.add("metrics", r.metrics, "write one JSON object per epoch to this file");
  f.add("disp-batches", r.disp_batches, "print speed and accuracy every N batches (0: never)");
  f.add("progress", r.progress, "progress bar: auto (when stdout is a terminal) | on | off");
}

void check_positive(const char* flag, double v) {
  if (!(v > 0))
    throw usage_error(std::string("--") + flag + " must be positive, got " + std::to_string(v));
}

// The same range as the config's cluster keys: at least `min`, at most max_bytes (1 TiB).
void check_bytes(const char* flag, std::int64_t v, std::int64_t min, const char* why) {
  constexpr std::int64_t ceiling = key_plan_options::max_bytes;
  if (v < min || v > ceiling)
    throw usage_error(std::string("--") + flag + " must be between " + std::to_string(min) + " ("
                      + why + ") and " + std::to_string(ceiling) + ", got " + std::to_string(v));
}

lr_schedule_options resolve_schedule(const raw_flags& r, bool lr_given) {
  if (lr_given && !(r.lr > 0))
    throw usage_error("--lr must be positive, got " + std::to_string(r.lr));
  lr_schedule_options s;
  s.base_lr = static_cast<float>(r.lr >= 0 ? r.lr : default_learning_rate(r.network));
  s.factor = static_cast<float>(r.lr_factor);
  s.total_epochs = static_cast<double>(r.num_epochs);
  s.warmup_epochs = r.warmup_epochs;
  if (r.lr_schedule == "multi-step") {
    s.policy = lr_policy::multi_step;
    s.step_epochs = r.lr_step_epochs.empty()
                      ? std::vector<double>{0.5 * r.num_epochs, 0.75 * r.num_epochs}
                      : parse_number_list("lr-step-epochs", r.lr_step_epochs);
  } else if (r.lr_schedule == "cosine") {
    s.policy = lr_policy::cosine;
  } else if (r.lr_schedule == "constant") {
    s.policy = lr_policy::constant;
  } else {
    throw usage_error("--lr-schedule: '" + r.lr_schedule
                      + "' is not one of multi-step, cosine, constant");
  }
  if (s.base_lr <= 0)
    throw usage_error("--lr must be positive");
  return s;
}

dataset_options resolve_data(const raw_flags& r, split which) {
  dataset_options d;
  d.name = r.dataset;
  d.dir = r.data_dir.empty() ? default_data_dir(r.dataset) : r.data_dir;
  d.which = which;
  if (r.dataset == "synthetic") {
    d.synthetic_shape = parse_shape("image-shape", r.image_shape);
    d.synthetic_classes = r.num_classes;
    // Both splits name the training size and the seed: io draws the test split (a sixth of
    // the size) from the same class prototypes with its own noise stream.
    d.synthetic_size = r.num_examples;
    d.synthetic_seed = static_cast<std::uint64_t>(r.seed);
  } else if (d.dir.empty()) {
    throw usage_error("--data-dir is required for --dataset " + r.dataset);
  }
  return d;
}

batch_source_options resolve_batches(const raw_flags& r, bool training) {
  batch_source_options b;
  b.batch_size = training ? r.batch_size : r.val_batch_size;
  b.shuffle = training;
  b.seed = static_cast<std::uint64_t>(r.seed);
  if (r.dataset != "synthetic") {
    auto [mean, stdev] = standard_normalization(r.dataset);
    b.augment.mean = mean;
    b.augment.stdev = stdev;
  }
  if (training) {
    const bool cifar = r.dataset == "cifar10";
    b.augment.pad_crop = r.random_crop_pad >= 0 ? r.random_crop_pad : (cifar ? 4 : 0);
    b.augment.mirror = r.random_mirror >= 0 ? r.random_mirror != 0 : cifar;
  }
  return b;
}

void check_known(const char* flag, const std::string& value,
                 const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), value) != known.end())
    return;
  std::string list;
  for (const auto& k : known)
    list += (list.empty() ? "" : ", ") + k;
  throw usage_error(std::string("--") + flag + ": unknown " + flag + " '" + value + "' (known: "
                    + list + ")");
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

// Flags the user gave on top of --config replace exactly the field they name. Flags that
// would change the data's shape are refused: the config's data statement says that.
void override_from_flags(train_command_line& out, const raw_flags& r, const flag_set& f) {
  for (const char* structural : {"dataset", "image-shape", "num-classes", "num-examples"})
    if (f.given(structural))
      throw usage_error(std::string("--") + structural + " cannot be combined with --config: "
                        "edit the config's data statement");
  auto& o = out.job;
  auto& s = o.optimizer.schedule;
  if (f.given("network")) o.model.network = r.network;
  if (f.given("num-layers")) o.model.num_layers = r.num_layers;
  if (f.given("data-dir")) o.train_data.dir = o.validation_data.dir = r.data_dir;
  if (f.given("batch-size")) o.train_batches.batch_size = r.batch_size;
  if (f.given("val-batch-size")) o.validation_batches.batch_size = r.val_batch_size;
  if (f.given("lr")) s.base_lr = static_cast<float>(r.lr);
  if (f.given("lr-schedule") || f.given("lr-step-epochs") || f.given("num-epochs")) {
    auto rebuilt = resolve_schedule(r, f.given("lr"));
    s.policy = f.given("lr-schedule") ? rebuilt.policy : s.policy;
    s.step_epochs = f.given("lr-step-epochs") ? rebuilt.step_epochs : s.step_epochs;
  }
  if (f.given("lr-factor")) s.factor = static_cast<float>(r.lr_factor);
  if (f.given("warmup-epochs")) s.warmup_epochs = r.warmup_epochs;
  if (f.given("mom")) o.optimizer.sgd.momentum = static_cast<float>(r.mom);
  if (f.given("wd")) o.optimizer.sgd.weight_decay = static_cast<float>(r.wd);
  if (f.given("nesterov")) o.optimizer.sgd.nesterov = true;
  if (f.given("num-epochs")) o.epochs = r.num_epochs, s.total_epochs = static_cast<double>(r.num_epochs);
  if (f.given("seed")) {
    o.model.seed = o.train_batches.seed = o.validation_batches.seed = static_cast<std::uint64_t>(r.seed);
  }
  if (f.given("threads")) out.threads = r.threads;
  if (f.given("shards")) o.shards = r.shards;
  if (f.given("slice-bytes")) o.topology.keys.slice_bytes = r.slice_bytes;
  if (f.given("group-bytes")) o.topology.keys.group_bytes = r.group_bytes;
  if (f.given("no-overlap")) o.topology.overlap = false;
  if (f.given("prefetch")) o.prefetch_depth = r.prefetch;
  if (f.given("random-crop-pad")) o.train_batches.augment.pad_crop = r.random_crop_pad;
  if (f.given("random-mirror")) o.train_batches.augment.mirror = r.random_mirror != 0;
  if (f.given("no-validation")) o.validate = false;
  if (f.given("eval-every")) o.validate_every = r.eval_every;
  if (f.given("metrics")) out.output.metrics_path = r.metrics;
  if (f.given("disp-batches")) out.output.display_batches = r.disp_batches;
  out.output.progress_bar = progress_wanted(r.progress);
}

train_command_line options_from_config(const raw_flags& r, const flag_set& f) {
  train_command_line out;
  try {
    auto config = load_job_config(r.config);
    resolve_app_defaults(config);
    out.job = to_training_job(config);
    out.output = session_output_of(config);
    out.threads = config.run.threads.value;
  } catch (const config_error& e) {
    throw usage_error(e.what());
  }
  override_from_flags(out, r, f);
  return out;
}

} // namespace

namespace {

// "--straggler W:MS" onto the topology, checked against the worker count.
void apply_straggler(const std::string& text, topology_options& t) {
  if (text.empty())
    return;
  auto colon = text.find(':');
  std::vector<double> parts;
  if (colon != std::string::npos)
    parts = parse_number_list("straggler", text.substr(0, colon) + "," + text.substr(colon + 1));
  if (parts.size() != 2 || parts[0] != static_cast<int>(parts[0]) || parts[0] < 0
      || parts[0] >= t.workers || parts[1] < 0)
    throw usage_error("--straggler: expected W:MS with 0 <= W < workers (" + std::to_string(t.workers)
                      + ") and MS >= 0, got '" + text + "'");
  t.straggler = static_cast<int>(parts[0]);
  t.straggle_ms = static_cast<int>(parts[1]);
}

} // namespace

train_command_line parse_train_flags(const std::vector<std::string>& args) {
  raw_flags r;
  flag_set f("train", "Trains a network with loader, compute, parameter-shard, coordinator and "
                      "metrics actors in one process and prints MXNet-style progress.");
  declare(f, r);
  train_command_line out;
  if (!f.parse(args)) {
    out.help = true;
    out.help_text = f.help();
    return out;
  }
  check_positive("batch-size", static_cast<double>(r.batch_size));
  check_positive("val-batch-size", static_cast<double>(r.val_batch_size));
  check_positive("num-epochs", static_cast<double>(r.num_epochs));
  check_positive("threads", r.threads);
  check_positive("shards", r.shards);
  check_positive("eval-every", static_cast<double>(r.eval_every));
  check_positive("prefetch", r.prefetch);
  if (r.mom < 0 || r.mom >= 1)
    throw usage_error("--mom must be in [0, 1), got " + std::to_string(r.mom));
  if (r.wd < 0)
    throw usage_error("--wd must not be negative");
  if (r.disp_batches < 0)
    throw usage_error("--disp-batches must not be negative");
  if (r.seed < 0)
    throw usage_error("--seed must not be negative");
  check_bytes("slice-bytes", r.slice_bytes, 4, "a slice holds at least one float");
  check_bytes("group-bytes", r.group_bytes, 0, "0 = never bundle");
  check_known("network", r.network, zoo_networks());
  check_known("dataset", r.dataset, dataset_names());
  if (f.given("config")) {
    auto from_config = options_from_config(r, f);
    apply_straggler(r.straggler, from_config.job.topology);
    return from_config;
  }

  auto& o = out.job;
  o.model.network = r.network;
  o.model.num_layers = r.num_layers;
  o.model.seed = static_cast<std::uint64_t>(r.seed);
  o.train_data = resolve_data(r, split::train);
  o.validation_data = resolve_data(r, split::test);
  o.train_batches = resolve_batches(r, true);
  o.validation_batches = resolve_batches(r, false);
  o.optimizer.sgd = sgd_options{static_cast<float>(r.mom), static_cast<float>(r.wd), r.nesterov};
  o.optimizer.schedule = resolve_schedule(r, f.given("lr"));
  o.prefetch_depth = r.prefetch;
  o.epochs = r.num_epochs;
  o.validate = !r.no_validation;
  o.validate_every = r.eval_every;
  o.shards = r.shards;
  o.topology.keys.slice_bytes = r.slice_bytes;
  o.topology.keys.group_bytes = r.group_bytes;
  o.topology.overlap = !r.no_overlap;
  out.output.display_batches = r.disp_batches;
  out.output.progress_bar = progress_wanted(r.progress);
  out.output.metrics_path = r.metrics;
  out.threads = r.threads;
  apply_straggler(r.straggler, o.topology);
  return out;
}

} // namespace troupe
