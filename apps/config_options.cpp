// One function per options group; each reads resolved config values only.
#include "apps/config_options.hpp"

#include <algorithm>
#include <filesystem>

#include <troupe/io/dataset_subset.hpp>
#include <troupe/io/normalization.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>
#include <troupe/status/status_server.hpp>

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

// The index MXNet's tools write beside a .rec: PREFIX.idx for PREFIX.rec, used when present.
std::string index_beside(const std::string& record_file) {
  namespace fs = std::filesystem;
  fs::path index(record_file);
  index.replace_extension(".idx");
  std::error_code error;
  return index.string() != record_file && fs::is_regular_file(index, error) ? index.string() : "";
}

void record_options(const job_config& c, const data_config& d, dataset_options& o) {
  if (o.dir.empty())
    config_fail(c, d.span, "recordio needs its .rec file: recordio(\"/path/to/train.rec\")");
  o.record_index = d.index.given ? d.index.value : index_beside(o.dir);
  o.record_shape = shape_t(d.shape.value.begin(), d.shape.value.end());
  o.record_classes = d.classes.value;
  o.skip_bad_records = d.skip_bad_records.value;
}

dataset_options data_options(const job_config& c, const data_config& d, split which) {
  dataset_options o;
  o.name = io_dataset_name(d.dataset.value);
  o.dir = d.dir.given ? d.dir.value : default_data_dir(o.name);
  o.which = which;
  if (o.name == "synthetic") {
    o.synthetic_shape = shape_t(d.shape.value.begin(), d.shape.value.end());
    o.synthetic_classes = d.classes.value;
    o.synthetic_size = d.examples.value;
    o.synthetic_seed = static_cast<std::uint64_t>(c.run.seed.value);
  } else if (o.name == "recordio") {
    record_options(c, d, o);
  } else if (o.dir.empty()) {
    config_fail(c, d.span,
                d.dataset.value + " needs a directory: " + d.dataset.value + "(\"/path/to/data\")");
  }
  if (o.name != "recordio" && !d.class_subset.value.empty())
    o.subset.classes = parse_class_list(d.class_subset.value); // checked when read
  if (o.name != "recordio" && o.name != "synthetic") {
    o.subset.first = d.first.value;
    o.subset.class_count = d.classes.given ? d.classes.value : 0;
  }
  return o;
}

batch_source_options batch_options(const job_config& c, const data_config& d) {
  batch_source_options b;
  b.batch_size = d.batch.value;
  b.shuffle = d.shuffle.value;
  b.seed = static_cast<std::uint64_t>(c.run.seed.value);
  const bool recordio = d.dataset.value == "recordio";
  if (d.normalize.value) {
    auto [mean, stdev] =
      standard_normalization(recordio ? "imagenet" : io_dataset_name(d.dataset.value));
    // rgb_mean / rgb_std are in pixel units, as MXNet's flags; augment's in [0, 1].
    if (recordio && d.rgb_mean.given)
      for (std::size_t ch = 0; ch < 3; ++ch)
        mean[ch] = static_cast<float>(d.rgb_mean.value[ch] / 255.0);
    if (recordio && d.rgb_std.given)
      for (std::size_t ch = 0; ch < 3; ++ch)
        stdev[ch] = static_cast<float>(d.rgb_std.value[ch] / 255.0);
    b.augment.mean = mean;
    b.augment.stdev = stdev;
  }
  b.augment.pad_crop = recordio ? 0 : d.crop_pad.value;
  b.augment.mirror = d.mirror.value;
  if (recordio) {
    b.augment.random_resized_crop = d.random_crop.value;
    b.augment.crop_scale_min = d.scale.value[0];
    b.augment.crop_scale_max = d.scale.value[1];
    b.augment.crop_ratio_min = d.ratio.value[0];
    b.augment.crop_ratio_max = d.ratio.value[1];
    b.augment.resize_shorter = d.resize.value;
    b.augment.brightness = d.brightness.value;
    b.augment.contrast = d.contrast.value;
    b.augment.saturation = d.saturation.value;
    b.augment.max_rotate_angle = d.max_rotate_angle.value;
  }
  return b;
}

// The optimizer's default rate, or for sgd the network's.
double default_lr_of(const job_config& c) {
  const double own = optimizer_default_lr(c.optimizer.name.value);
  return own > 0 ? own : default_learning_rate(zoo_network_name(c.model.network.value));
}

update_rule update_rule_of(const job_config& c) {
  const auto& o = c.optimizer;
  update_rule u;
  u.kind = optimizer_of_name(o.name.value).value_or(optimizer_kind::sgd); // named by the parser
  u.sgd = sgd_options{static_cast<float>(o.momentum.value), static_cast<float>(o.wd.value),
                      o.nesterov.value};
  u.beta1 = static_cast<float>(o.beta1.value);
  u.beta2 = static_cast<float>(o.beta2.value);
  u.eps = static_cast<float>(o.eps.value);
  u.alpha = static_cast<float>(o.alpha.value);
  u.trust = static_cast<float>(o.trust.value);
  return u;
}

lr_schedule_options schedule_options(const job_config& c) {
  lr_schedule_options s;
  const auto& k = c.schedule;
  s.base_lr = static_cast<float>(c.optimizer.lr.given ? c.optimizer.lr.value : default_lr_of(c));
  s.policy = parse_lr_policy(k.policy.value);
  s.step_epochs = k.steps.value;
  s.factor = static_cast<float>(k.factor.value);
  s.total_epochs = static_cast<double>(c.run.epochs.value);
  s.final_lr = static_cast<float>(k.final_lr.value);
  s.warmup_epochs = k.warmup.value;
  s.period = k.period.value;
  s.power = k.power.value;
  s.cycle = k.cycle.value;
  s.cycle_mult = k.cycle_mult.value;
  s.pct_start = k.pct_start.value;
  s.div_factor = k.div_factor.value;
  s.final_div_factor = k.final_div_factor.value;
  return s;
}

topology_options topology_of(const job_config& c) {
  topology_options t;
  const auto& k = c.topology;
  t.name = k.name.value;
  t.workers = c.cluster.workers.value;
  t.levels = k.levels;
  t.staleness = k.staleness;
  t.machines = t.level(aggregation_scope::machine) ? k.machines.value : 1;
  t.deterministic = k.deterministic.value;
  t.overlap = c.cluster.overlap.value;
  t.priority = c.cluster.priority.value;
  t.keys = key_options_of(c);
  t.compression = k.compression;
  return t;
}

} // namespace

// replicas, the old name of shard_backups, counts the primary too.
void resolve_old_names(job_config& c) {
  auto& old = c.cluster.replicas;
  auto& now = c.cluster.shard_backups;
  if (!old.given)
    return;
  if (now.given)
    config_fail(
      c, old.span.line == 0 ? now.span : old.span,
      "replicas is the old name of shard_backups (replicas = N is shard_backups = N - 1, the "
      "old --replicas N is --shard-backups N - 1): give one of the two");
  now = located<int>{old.value - 1, old.span, true};
}

void resolve_app_defaults(job_config& c) {
  resolve_old_names(c);
  resolve_optimizer_defaults(c);
  if (!c.optimizer.lr.given)
    c.optimizer.lr.value = default_lr_of(c);
  for (auto* d : {&c.train_data, &c.validation_data})
    if (!d->dir.given)
      d->dir.value = default_data_dir(io_dataset_name(d->dataset.value));
}

namespace {

// init_from and reset_layers onto the job; the names are checked against the model when the
// run builds it.
void init_options(const job_config& c, training_job& o) {
  const auto& run = c.run;
  if (!run.reset_layers.value.empty() && run.init_from.value.empty())
    config_fail(c, run.reset_layers.span,
                "reset_layers needs init_from (the checkpoint whose other weights are kept)");
  if (!run.init_from.value.empty() && run.load_epoch.value >= 0)
    config_fail(c, run.init_from.span,
                "init_from starts a new run from a checkpoint's weights, load_epoch resumes one: "
                "give one of them");
  o.init_from = run.init_from.value;
  const auto& text = run.reset_layers.value;
  for (std::size_t start = 0; !text.empty() && start <= text.size();) {
    const auto comma = std::min(text.find(',', start), text.size());
    auto name = text.substr(start, comma - start);
    if (name.empty())
      config_fail(c, run.reset_layers.span,
                  "reset_layers \"" + text + "\": an empty name (write fc2 or fc1,fc2)");
    o.reset_layers.push_back(std::move(name));
    start = comma + 1;
  }
}

} // namespace

training_job to_training_job(const job_config& c) {
  training_job o;
  o.model = model_spec_of(c);
  o.train_data = data_options(c, c.train_data, split::train);
  o.validation_data =
    c.validation_data.enabled ? data_options(
      c, c.validation_data, c.validation_data.split.value == "train" ? split::train : split::test)
                              : o.train_data;
  o.train_data.which = c.train_data.split.value == "test" ? split::test : split::train;
  o.train_batches = batch_options(c, c.train_data);
  o.validation_batches = batch_options(c, c.validation_data);
  static_cast<update_rule&>(o.optimizer) = update_rule_of(c);
  o.optimizer.schedule = schedule_options(c);
  o.prefetch_depth = c.run.prefetch.value;
  o.epochs = c.run.epochs.value;
  o.validate = c.validation_data.enabled;
  o.validate_every = std::max<std::int64_t>(1, c.run.eval_every.value); // 0 means none: above
  o.shards = c.cluster.shards.value;
  o.topology = topology_of(c);
  o.top_k = c.run.top_k.value;
  // Not given: a lost worker is adopted where one aggregation level sums every worker's push
  // (bsp), which is what adoption covers; elsewhere the run stops, as it must be told otherwise.
  // Compression keeps state per worker (residuals, the weights it holds) that an adopter
  // cannot recover, so a compressed run stops unless told otherwise.
  bool compressed = false;
  for (const auto& hop : o.topology.compression)
    compressed = compressed || hop.active();
  const auto& policy = c.cluster.on_worker_loss.value;
  // A flag has no place in the config's text: the refusal names it instead.
  const bool loss_by_flag = c.cluster.on_worker_loss.span.line == 0;
  if (compressed && policy == "adopt")
    config_fail(
      c, c.cluster.on_worker_loss.span,
      std::string(loss_by_flag ? "--on-worker-loss adopt" : "on_worker_loss = adopt")
        + " recomputes a lost worker's step, and a compressed route's residuals and held weights "
          "were lost with it, so the weights would not be a run's that lost nothing: keep stop, "
          "or turn compression off");
  const bool adopt =
    policy == "adopt" || (policy.empty() && o.topology.levels.size() == 1 && !compressed);
  o.nodes = cluster_nodes{c.cluster.server_nodes.value, c.cluster.worker_nodes.value,
                          policy == "continue", adopt, c.cluster.shard_backups.value};
  const auto& backups = c.cluster.shard_backups;
  // The refusals name the spelling the user gave: key or flag, new or old name (still read).
  const bool by_key = backups.span.line != 0;
  const std::string old_name = by_key ? "replicas = 2" : "--replicas 2"; // still read
  const std::string new_name = by_key ? "shard_backups = 1" : "--shard-backups 1";
  const std::string backed = c.cluster.replicas.given ? old_name : new_name; // the old, if given
  if (o.nodes.shard_backups == 1 && !o.nodes.single_process() && o.nodes.servers < 2)
    config_fail(c, backups.span,
                backed
                  + " keeps each server's shards on another server process too, and this run has "
                  + std::to_string(o.nodes.servers)
                  + " (server_nodes, --server-nodes, launch -s): give it at least 2");
  const bool balance_by_flag = c.cluster.balance.span.line == 0;
  if (c.cluster.balance.value != "off" && c.cluster.balance.value != "auto")
    config_fail(c, c.cluster.balance.span,
                std::string(balance_by_flag ? "--balance" : "balance")
                  + " must be off or auto, got " + c.cluster.balance.value);
  if (c.cluster.balance.value == "auto" && !o.nodes.single_process()) {
    const std::string balance = balance_by_flag ? "--balance auto" : "balance = auto";
    if (!adopt)
      config_fail(c, c.cluster.balance.span,
                  balance
                    + " moves compute ranks between worker processes as an adoption does: "
                      "it needs on_worker_loss = adopt, and this run's is "
                    + worker_loss_policy(o.nodes));
    bool machine = false;
    for (const auto& level : o.topology.levels)
      machine = machine || level.scope == aggregation_scope::machine;
    if (machine)
      config_fail(c, c.cluster.balance.span,
                  balance + " moves ranks one by one, and topology " + o.topology.name
                    + "'s aggregate(machine) sums each machine's ranks in its process");
  }
  if (o.nodes.continue_on_worker_loss && o.topology.synchronous())
    config_fail(c, c.cluster.on_worker_loss.span,
                "on_worker_loss = continue needs computes that push straight to the shards "
                "(async or ssp); topology "
                  + o.topology.name
                  + " waits at an aggregator for "
                    "every worker, so it can only stop when one is lost");
  init_options(c, o);
  return o;
}

session_output session_output_of(const job_config& c) {
  if (c.run.load_epoch.value >= 0 && c.run.model_prefix.value.empty())
    config_fail(c, c.run.load_epoch.span,
                "load_epoch needs model_prefix (the checkpoint's PREFIX)");
  session_output o;
  o.display_batches = c.run.display.value;
  o.metrics_path = c.run.metrics.value;
  o.checkpoint.prefix = c.run.model_prefix.value;
  o.checkpoint.save_period = c.run.save_period.value;
  o.checkpoint.load_epoch = c.run.load_epoch.value;
  o.stall_epochs = static_cast<int>(c.run.stall_epochs.value);
  o.fail_on_stall = c.run.fail_on_stall.value;
  o.step_records = c.run.metrics_every.value;
  o.status_listen = c.run.status_listen.value;
  if (!o.status_listen.empty()) {
    try {
      parse_listen_address(o.status_listen);
    } catch (const std::invalid_argument& e) {
      config_fail(c, c.run.status_listen.span, "status_listen " + std::string(e.what()));
    }
  }
  return o;
}

} // namespace troupe
