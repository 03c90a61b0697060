// A training job as a config file describes it, every value resolved (defaults filled in) and
// checked, each remembering where it was written so later checks can point at it.
//
// `parse_job_config` is the front door of the config language: syntax (parser.cpp), then the
// meaning of each section (job_config.cpp), then the topology wiring (topology_config.cpp).
// Anything wrong throws config_error with the position. The struct is deliberately free of
// actor types: apps/ maps it onto training_options, so graph/ does not depend on actors/.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <troupe/graph/config/diagnostics.hpp>
#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/roles.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/kernels/compute_device.hpp>

namespace troupe {

/// A value and where it came from. `given` is false for defaults (span then points at the
/// statement that implied the default, or is line 0).
template <typename T> struct located {
  T value{};
  source_span span{};
  bool given = false;
};

struct cluster_config {
  located<int> servers{1};
  located<int> workers{1};
  located<int> shards{1}; ///< parameter shards; defaults to servers
  /// Parameters above this many bytes are cut into slices spread over the shards.
  located<std::int64_t> slice_bytes{key_plan_options{}.slice_bytes};
  /// Keys below this many bytes are bundled into one push per shard; 0 = never bundle.
  located<std::int64_t> group_bytes{key_plan_options{}.group_bytes};
  /// Compute actors push each group during backward as soon as it is ready.
  located<bool> overlap{true};
  /// Channels write pushes and their answers first layers first (false: in backward's order).
  located<bool> priority{true};
  /// Processes of a cluster run (training_job::nodes); both 0: one process.
  located<int> server_nodes{0};
  located<int> worker_nodes{0};
  /// `stop`, `continue` (async, ssp) or `adopt` (bsp): what a lost worker process does to the
  /// run. Empty (not given): `adopt` where one aggregation level sums every worker's push (bsp),
  /// else `stop`.
  located<std::string> on_worker_loss{""};
  /// `off`, or `auto`: at each gate between epochs the scheduler re-places compute ranks so a
  /// faster worker process runs more of them (docs/operations.md, "Balance").
  located<std::string> balance{"off"};
  /// 0, or 1: a backup of each server process's shards on the next one (promoted on its loss).
  located<int> shard_backups{0};
  /// The old name of shard_backups, counting the primary: replicas = N is shard_backups = N - 1.
  located<int> replicas{1};
  /// How the processes of a cluster run reach each other (`troupe node`; flags override).
  /// Not part of the job: two runs of one job may use other addresses and timeouts.
  located<std::string> scheduler;           ///< "HOST:PORT" where the scheduler listens
  located<std::string> listen{"127.0.0.1"}; ///< where a server listens for workers
  located<double> join_timeout{120};        ///< seconds
  located<double> heartbeat{1};
  located<double> peer_timeout{5};
  located<double> request_timeout{600};
  /// TCP congestion control of the channels between hosts: auto (cubic where it may be set),
  /// system (the host's default) or an algorithm's name (cluster/tcp_congestion.hpp).
  located<std::string> tcp_congestion{"auto"};
  /// The rate of each host's link per direction in Mbit/s (0: not stated): every node paces
  /// its TCP channels at an equal share of it and every worker writes a step's pushes in one fixed
  /// order (cluster/frame_priority.hpp; `troupe node --link-mbit`).
  located<std::int64_t> link_mbit{0};
  /// With link_mbit: milliseconds a step's backward takes, which sets how much of the last
  /// layers goes first; -1: the compute stand-in's backward, 0 for real computes.
  located<double> backward_ms{-1};
};

struct data_config {
  bool enabled = true; ///< `data val = none` turns validation off
  located<std::string> dataset{
    "fashion_mnist"};         ///< DSL name (fashion_mnist, mnist, cifar10, synthetic, recordio)
  located<std::string> dir;   ///< recordio: the .rec file (key `path`)
  located<std::string> split; ///< "train" or "test"
  located<std::int64_t> batch{128}; ///< per compute actor
  located<std::int64_t> crop_pad{0};
  located<bool> mirror{false};
  located<bool> normalize{true};
  located<bool> shuffle{true};
  located<std::vector<std::int64_t>> shape{{1, 28, 28}}; ///< synthetic only (else implied)
  located<int> classes{10};                              ///< synthetic only (else implied)
  located<std::int64_t> examples{60000};                 ///< synthetic only
  /// Files and synthetic data: keep only these classes' examples ("0-4", "0,1,2"; "": all).
  located<std::string> class_subset;
  located<std::int64_t> first{0}; ///< files: keep the first N examples of the split (0: all)
  // recordio only (docs/data.md):
  located<std::string> index;            ///< the .idx; "" = PATH with .idx if it exists
  located<std::vector<double>> rgb_mean; ///< pixel units (0..255); empty = ImageNet's
  located<std::vector<double>> rgb_std;
  located<bool> random_crop{false}; ///< random resized crop (train default), else centre
  located<std::vector<double>> scale{{0.08, 1.0}};            ///< crop area fraction [min, max]
  located<std::vector<double>> ratio{{3.0 / 4.0, 4.0 / 3.0}}; ///< crop width/height range
  located<std::int64_t> resize{0}; ///< centre crop: shorter side first resized to this
  /// Colour jitter bounds, factors drawn from [1 - b, 1 + b], and the largest rotation in
  /// degrees (io/image_augment.hpp); 0: none.
  located<double> brightness{0}, contrast{0}, saturation{0};
  located<double> max_rotate_angle{0};
  located<bool> skip_bad_records{false};
  source_span span;
};

struct model_config {
  located<std::string> network{"lenet"}; ///< DSL name (inception_bn, not inception-bn)
  located<int> layers{0};                ///< 0: the network's default depth
  located<int> classes{10};
  source_span span;
};

/// The optimizer statement. Values not given take the optimizer's defaults
/// (resolve_optimizer_defaults); the ones below are SGD's.
struct optimizer_config {
  located<std::string> name{"sgd"}; ///< sgd | adam | adamw | rmsprop | adagrad | lamb | lars
  located<double> lr{0.05};
  located<double> momentum{0.9};
  located<double> wd{1e-4};
  located<bool> nesterov{false};
  located<double> beta1{0.9};
  located<double> beta2{0.999};
  located<double> eps{1e-8};
  located<double> alpha{0.99};
  located<double> trust{0.001};
};

/// A multi-step boundary as written: an epoch (`5`, `7.5`) or a share of the run (`50%`,
/// held as 0.5), which follows the run's length when flags change the epochs.
struct schedule_step {
  double value = 0;
  bool share = false;
  source_span span{}; ///< the element's text; line 0 when a flag gave it
};

struct schedule_config {
  /// multi_step | step | cosine | poly | one_cycle | constant
  located<std::string> policy{"multi_step"};
  /// multi_step: the boundaries as the config or --lr-step-epochs wrote them; not given:
  /// 50% and 75% of the run.
  located<std::vector<schedule_step>> written_steps;
  /// multi_step: the epochs where lr *= factor, resolved from written_steps for the run's
  /// epochs (resolve_schedule_defaults); `given` and `span` follow written_steps.
  located<std::vector<double>> steps;
  located<double> factor{0.1};
  located<double> warmup{1};   ///< epochs; default min(1, epochs / 10)
  located<double> final_lr{0}; ///< cosine and poly end value
  located<double> period{1};   ///< step: epochs between decays
  located<double> power{2};    ///< poly: exponent
  located<double> cycle{0};    ///< cosine: first cycle's epochs; 0: no restarts
  located<double> cycle_mult{1};
  located<double> pct_start{0.3}; ///< one_cycle: share of the run rising to lr
  located<double> div_factor{25};
  located<double> final_div_factor{1e4};
  /// The epochs the config's own text gave the run (0 until the config is read): a flag that
  /// shortens the run shortens with it a warm-up that would reach the first decay.
  std::int64_t config_epochs = 0;
};

/// One route `from -> to` with the properties written on its ends: what the `topology`
/// statement's block holds (a chain `a -> b -> c` is two routes), or what a preset expands to.
struct wiring_route {
  plan_role from, to; ///< loader, compute, machine_aggregator, aggregator or shard
  std::string fan;    ///< into compute: "all" (broadcast) or "sender" (reply); else ""
  int need = 0;       ///< into an aggregate: contributions that complete its step; 0: all
  int staleness = -1; ///< out of a shard: SSP bound on its answers; -1: none
  source_span span;   ///< the route's text (none for an expanded preset)
  /// A gradient route's `compress = "..."` (written on its target): the hop's compression.
  compression_spec compression{};
};
/// "compute -> aggregate(all, need = 3)", as the language writes it.
std::string to_string(const wiring_route& route);

struct topology_config {
  /// The first word: a preset's name, or the user's own name for a route set of theirs.
  located<std::string> name{"bsp"};
  std::optional<topology_kind> preset; ///< set when `name` is a preset's
  located<int> machines{1};
  located<bool> deterministic{true};
  bool explicit_wiring = false; ///< a block of routes was written
  /// The compiled routes, as they run: the preset's expansion or the written block, in the
  /// language's canonical order (loader, the gradient chain, the answer).
  std::vector<wiring_route> routes;
  std::vector<aggregation_level> levels; ///< compiled: compute -> levels... -> shard
  int staleness = -1;                    ///< compiled: the shard's SSP bound
  /// compiled: by hop of the push path (topology_options::compression); empty: none
  std::vector<compression_spec> compression;
  source_span span;
};

/// `--compression`: the hop where gradients leave their machine (machine_exit_hop) compresses
/// as `spec`, and no other hop does (none: no hop); the routes are rewritten to say so.
void compress_machine_exit(topology_config& topology, const compression_spec& spec);

struct run_config {
  located<std::int64_t> epochs{10};
  located<std::int64_t> eval_every{1};
  located<std::int64_t> seed{0};
  located<int> threads{2};
  located<int> prefetch{3};
  located<std::int64_t> display{100};
  located<std::string> metrics;
  /// Also report top-k accuracy (MXNet's --top-k): 1..classes; 0: off.
  located<int> top_k{0};
  /// Checkpoints (docs/checkpoints.md): PREFIX of PREFIX-EEEE.safetensors ("": none), saved
  /// every save_period epochs and after the last; load_epoch >= 0 resumes from that one.
  located<std::string> model_prefix;
  located<std::int64_t> save_period{1};
  located<std::int64_t> load_epoch{-1};
  /// The run's own warnings (run_watch.hpp): rising loss over this many epochs, and whether a
  /// warning stops the run.
  located<std::int64_t> stall_epochs{2};
  located<std::int64_t> metrics_every{0}; ///< a step record every N steps; 0: none
  located<bool> fail_on_stall{false};
  /// Where the status server listens (`PORT` on loopback, or `HOST:PORT`); "": no server.
  located<std::string> status_listen;
  /// Fine-tuning (docs/checkpoints.md): start from the weights of the checkpoint PREFIX-EPOCH
  /// (or a .safetensors / .manifest.json file), epoch 0 and a fresh optimizer; "": the
  /// initializer's weights. reset_layers: comma list of parameter-name prefixes that keep the
  /// initializer's weights instead.
  located<std::string> init_from;
  located<std::string> reset_layers;
  /// Where the compute actors run (`devices = ["gpu:0", "gpu:1"]`): compute i on
  /// devices[i % size]; empty: the CPU.
  located<std::vector<compute_device>> devices;
};

struct job_config {
  std::string path;
  std::string text; ///< the file, for diagnostics raised after parsing
  cluster_config cluster;
  data_config train_data;
  data_config validation_data;
  model_config model;
  optimizer_config optimizer;
  schedule_config schedule;
  topology_config topology;
  run_config run;
  /// What resolving the job changed that neither the text nor the flags say (a warm-up
  /// shortened with the run), one line each with its position: printed before the run.
  std::vector<std::string> notes;
};

/// A `data` statement given as typed values rather than text: `troupe train --dataset synthetic
/// --image-shape 3,32,32` is `data train = synthetic(shape = [3, 32, 32])`. A value left unset
/// is a key the statement leaves unwritten (its default, or what follows from the data).
struct data_override {
  std::string dataset; ///< the call: fashion_mnist, mnist, cifar10, synthetic or recordio
  std::optional<std::string> dir;                       ///< file datasets: `dir`; recordio: `path`
  std::optional<std::string> index;                     ///< recordio
  std::optional<std::vector<std::int64_t>> shape;       ///< synthetic, recordio
  std::optional<int> classes;                           ///< every dataset
  std::optional<std::int64_t> examples;                 ///< synthetic
  std::optional<std::vector<double>> rgb_mean, rgb_std; ///< recordio, pixel units
  std::optional<std::string> class_subset;              ///< files, synthetic
  std::optional<std::int64_t> first;                    ///< files
};

/// A `topology` statement given as a preset and its one argument rather than text: `troupe
/// train --topology ssp:3` is `topology ssp(staleness = 3)`. It replaces the text's statement,
/// routes and all, as a flag replaces the key it sets.
struct topology_override {
  topology_kind preset = topology_kind::bsp;
  int argument = -1; ///< ssp: staleness, hierarchical: machines, backup: backups; -1: default
  std::string said;  ///< how a refusal names it ("--topology backup:3")
};

/// Values given beside a config's text (troupe's flags), each applied where the statement or
/// key it stands for would be read, so that what follows from it is derived as for the text:
/// the data statements before validation data, augmentation, shape and classes follow from
/// them, the compute count before the topology is compiled from it. Each value is checked as
/// the language checks the key, and a refusal names it by `name_of` (the flag that gave it).
struct config_overrides {
  std::optional<data_override> train_data;      ///< replaces `data train = ...`
  std::optional<data_override> validation_data; ///< replaces `data val = ...`
  std::optional<int> workers;                   ///< as `cluster { workers = N }`
  std::optional<topology_override> topology;    ///< replaces `topology ...`
  /// Asked once, with the cluster section as read, before the topology is compiled: the
  /// compute count when neither the text nor `workers` gives one (`troupe node`: one compute
  /// per worker process of its launcher); nothing keeps the default.
  using count_question = std::function<std::optional<int>(const cluster_config&)>;
  count_question default_workers;
  /// How a refusal names a value by its key ("data.shape" -> "--image-shape"); unset: the key.
  std::function<std::string(const std::string& key)> name_of;
};

/// Parses and checks a config, with `overrides` applied as described there. Throws
/// config_error (for an override, its message names the value by `name_of`, with no position).
job_config parse_job_config(const std::string& path, const std::string& text,
                            const config_overrides& overrides = {});
/// The most a config file may hold; a longer file is refused after reading this much.
inline constexpr std::size_t max_config_bytes = std::size_t{1} << 20;
/// Reads `path` and parses it. Throws config_error (also when the file cannot be read, is a
/// directory, holds NUL bytes or is longer than max_config_bytes).

job_config load_job_config(const std::string& path, const config_overrides& overrides = {});

/// The schedule values that follow from the run's length unless written: multi-step
/// boundaries at 50% and 75% of the epochs (none for the other policies); warm-up over a tenth
/// of the epochs, at most one and at most half the epochs before the first decay. Called by
/// the parser, and again after flags change the epochs: then a warm-up the config wrote that
/// would reach the shorter run's first decay keeps its share of the config's run instead, and
/// a line in `notes` says so.
void resolve_schedule_defaults(job_config& config);
/// Empty, or why the resolved warm-up cannot stand: it does not end before the first decay
/// (multi_step, step) or the run's end (cosine, poly, constant), so the rate is never reached.
std::string warmup_overlap(const job_config& config);
/// The optimizer's own defaults for the values not given (weight decay, momentum, eps: each
/// optimizer's in PyTorch, SGD's as before). Called by the parser, and again after a flag
/// names the optimizer.
void resolve_optimizer_defaults(job_config& config);
/// The optimizer's default learning rate; 0 for sgd, whose default follows the network.
double optimizer_default_lr(const std::string& optimizer);
/// Checks the resolved multi-step boundaries a config wrote against the run's epochs: each
/// inside the run, increasing. A boundary written as an epoch at or after the last epoch is an
/// error at that element; `epochs_origin` names what set the epochs when not the config (a
/// flag, "--num-epochs 3"), so the message says which flag shortened the run. Boundaries a
/// flag gave (span line 0) are the flag's to check.
void check_schedule_steps(const job_config& config, const std::string& epochs_origin = "");

/// The zoo's name for a DSL network name ("inception_bn" -> "inception-bn").
std::string zoo_network_name(const std::string& dsl_name);
/// io's name for a DSL dataset name ("fashion_mnist" -> "fashion-mnist").
std::string io_dataset_name(const std::string& dsl_name);
/// Whether `name` can name a TCP congestion control (cluster.tcp_congestion): 1 to 15 of a-z,
/// 0-9, '_' and '-' (the kernel's limit is 16 with the terminating zero).
bool congestion_control_name(const std::string& name);
/// Whether cluster.backward_ms (and `troupe node --backward-ms`) accepts `ms`: -1 (the compute
/// stand-in's backward) or from 0 to the key's range's top.
bool backward_ms_allowed(double ms);
/// The model input and class count a config implies, for build_model.
model_spec model_spec_of(const job_config& config);
/// The key plan options (slicing, grouping) the cluster section sets.
key_plan_options key_options_of(const job_config& config);
/// Throws config_error at `span` of the config's file.
[[noreturn]] void config_fail(const job_config& config, const source_span& span,
                              const std::string& message);

/// Resolves the `topology` statement's wiring (topology_config.cpp). Needs cluster already.
struct syntax_statement;
void resolve_topology(job_config& config, const syntax_statement* statement);
/// Sets the topology to `o`'s preset as `topology NAME(ARGUMENT)` without a block would, for
/// the computes of config.cluster; throws config_error naming o.said for an argument the run
/// cannot take (machines that do not divide the computes, backups not fewer than them).
void resolve_topology(job_config& config, const topology_override& o);

} // namespace troupe
