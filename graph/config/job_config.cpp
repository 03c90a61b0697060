// The meaning of each section: which calls and keys it accepts, their types, ranges and
// defaults. Each section may appear once (`data` once per binding), so a repeated section is
// an error at its second occurrence rather than a silent override. Defaults that depend on
// other values (validation data follows the training set, crop/mirror follow the dataset,
// classes follow the data) are filled in after every section is read.
#include <troupe/graph/config/job_config.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <troupe/graph/config/key_ranges.hpp>

#include "graph/config/config_overrides.hpp"
#include "graph/config/recordio_keys.hpp"
#include "graph/config/value_reader.hpp"

namespace troupe {

const std::vector<std::string> data_statement_calls{"fashion_mnist", "mnist", "cifar10",
                                                    "synthetic", "recordio"};

namespace {

const std::vector<std::string> sections{"cluster",  "data",     "model", "optimizer",
                                        "schedule", "topology", "train"};
const std::vector<std::string> networks{"mlp", "lenet", "resnet", "inception_bn", "vgg"};
const std::vector<std::string> schedules{"multi_step", "cosine", "constant"};

// The call (or bare name) a section needs; error when it is missing or a block was given.
const syntax_value& head_of(const value_reader& r, const syntax_statement& st,
                            const std::string& expected) {
  if (!st.head || st.has_block)
    r.fail(st.section_span, "'" + st.section + "' takes " + expected + ", not a { } block");
  return *st.head;
}

void require_block_only(const value_reader& r, const syntax_statement& st) {
  if (st.head || !st.routes.empty() || !st.has_block)
    r.fail(st.head ? st.head->span : st.section_span,
           "'" + st.section + "' takes a { key = value ... } block");
}

void check_name(const value_reader& r, const syntax_value& v, const std::string& what,
                const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), v.text) == known.end())
    r.fail(v.span, "unknown " + what + " '" + v.text + "' (known: " + join_names(known) + ")");
}

// A byte count below `min` gets a message saying why `min` is the floor; the ceiling is
// key_plan_options::max_bytes.
std::int64_t byte_count(const value_reader& r, const syntax_value& v, const std::string& key,
                        std::int64_t min, const std::string& why) {
  constexpr std::int64_t ceiling = key_plan_options::max_bytes;
  if (v.type == syntax_value::kind::number && v.integral && v.number < static_cast<double>(min)
      && v.number > -static_cast<double>(ceiling)) // far below: r.integer's wording
    r.fail(v.span, key + " must be at least " + std::to_string(min) + " (" + why + "), got "
                     + std::to_string(static_cast<std::int64_t>(v.number)));
  return r.integer(v, key, min, ceiling);
}

void read_cluster(const value_reader& r, const syntax_statement& st, cluster_config& c) {
  require_block_only(r, st);
  keyed_values k(r, "cluster", st.assignments,
                 {"servers",         "workers",        "shards",    "slice_bytes",
                  "group_bytes",     "overlap",        "priority",  "server_nodes",
                  "worker_nodes",    "on_worker_loss", "replicas",  "scheduler",
                  "listen",          "join_timeout",   "heartbeat", "peer_timeout",
                  "request_timeout", "tcp_congestion", "link_mbit", "backward_ms"});
  if (auto* v = k.find("servers")) {
    if (v->type == syntax_value::kind::number && v->integral && v->number == 0)
      r.fail(v->span, "servers = 0: no shard would own the model's keys (need at least 1)");
    r.set(c.servers, static_cast<int>(r.integer(*v, "servers", range_of_key("cluster.servers"))),
          *v);
  }
  if (auto* v = k.find("workers"))
    r.set(c.workers, static_cast<int>(r.integer(*v, "workers", range_of_key("cluster.workers"))),
          *v);
  c.shards.value = c.servers.value;
  if (auto* v = k.find("shards"))
    r.set(c.shards, static_cast<int>(r.integer(*v, "shards", range_of_key("cluster.shards"))), *v);
  if (auto* v = k.find("slice_bytes"))
    r.set(c.slice_bytes, byte_count(r, *v, "slice_bytes", 4, "a slice holds at least one float"),
          *v);
  if (auto* v = k.find("group_bytes"))
    r.set(c.group_bytes, byte_count(r, *v, "group_bytes", 0, "0 = never bundle"), *v);
  if (auto* v = k.find("overlap"))
    r.set(c.overlap, r.boolean(*v, "overlap"), *v);
  if (auto* v = k.find("priority"))
    r.set(c.priority, r.boolean(*v, "priority"), *v);
  if (auto* v = k.find("server_nodes"))
    r.set(c.server_nodes,
          static_cast<int>(r.integer(*v, "server_nodes", range_of_key("cluster.server_nodes"))),
          *v);
  if (auto* v = k.find("worker_nodes"))
    r.set(c.worker_nodes,
          static_cast<int>(r.integer(*v, "worker_nodes", range_of_key("cluster.worker_nodes"))),
          *v);
  if (auto* v = k.find("on_worker_loss")) {
    r.set(c.on_worker_loss, r.name(*v, "on_worker_loss"), *v);
    if (c.on_worker_loss.value != "stop" && c.on_worker_loss.value != "continue"
        && c.on_worker_loss.value != "adopt")
      r.fail(v->span,
             "on_worker_loss must be stop, continue or adopt, got " + c.on_worker_loss.value);
  }
  if (auto* v = k.find("replicas"))
    r.set(c.replicas, static_cast<int>(r.integer(*v, "replicas", range_of_key("cluster.replicas"))),
          *v);
  if (auto* v = k.find("scheduler"))
    r.set(c.scheduler, r.string(*v, "scheduler"), *v);
  if (auto* v = k.find("listen"))
    r.set(c.listen, r.string(*v, "listen"), *v);
  if (auto* v = k.find("join_timeout"))
    r.set(c.join_timeout, r.real(*v, "join_timeout", range_of_key("cluster.join_timeout")), *v);
  if (auto* v = k.find("heartbeat"))
    r.set(c.heartbeat, r.real(*v, "heartbeat", range_of_key("cluster.heartbeat")), *v);
  if (auto* v = k.find("peer_timeout"))
    r.set(c.peer_timeout, r.real(*v, "peer_timeout", range_of_key("cluster.peer_timeout")), *v);
  if (auto* v = k.find("request_timeout"))
    r.set(c.request_timeout, r.real(*v, "request_timeout", range_of_key("cluster.request_timeout")),
          *v);
  if (auto* v = k.find("tcp_congestion")) {
    r.set(c.tcp_congestion, r.name(*v, "tcp_congestion"), *v);
    if (!congestion_control_name(c.tcp_congestion.value))
      r.fail(v->span, "tcp_congestion must be auto, system or a congestion control's name (lower "
                      "case, e.g. cubic), got "
                        + c.tcp_congestion.value);
  }
  if (auto* v = k.find("link_mbit"))
    r.set(c.link_mbit, r.integer(*v, "link_mbit", range_of_key("cluster.link_mbit")), *v);
  if (auto* v = k.find("backward_ms")) {
    r.set(c.backward_ms, r.real(*v, "backward_ms", range_of_key("cluster.backward_ms")), *v);
    if (!backward_ms_allowed(c.backward_ms.value))
      r.fail(v->span, "backward_ms must be -1 (the compute stand-in's backward) or 0 to "
                        + shortest_number(range_of_key("cluster.backward_ms").max)
                        + " milliseconds, got " + shortest_number(c.backward_ms.value));
  }
  if (!peer_timeout_fits(c.heartbeat.value, c.peer_timeout.value)) {
    const auto& at = k.find("peer_timeout") ? *k.find("peer_timeout") : *k.find("heartbeat");
    r.fail(at.span, std::string("peer_timeout ") + peer_timeout_rule);
  }
  if ((c.server_nodes.value == 0) != (c.worker_nodes.value == 0)) {
    const auto& given =
      c.server_nodes.value == 0 ? *k.find("worker_nodes") : *k.find("server_nodes");
    r.fail(given.span,
           "a cluster needs server_nodes and worker_nodes both >= 1 (or both 0 for one process)");
  }
}

void read_augmentation(const value_reader& r, const keyed_values& k, data_config& d) {
  if (auto* v = k.find("crop_pad"))
    r.set(d.crop_pad, r.integer(*v, "crop_pad", range_of_key("data.crop_pad")), *v);
  if (auto* v = k.find("mirror"))
    r.set(d.mirror, r.boolean(*v, "mirror"), *v);
  if (auto* v = k.find("normalize")) {
    r.set(d.normalize, r.boolean(*v, "normalize"), *v);
    if (d.normalize.value && d.dataset.value == "synthetic")
      r.fail(v->span, "synthetic data has no standard normalization (use normalize = false)");
  }
  if (auto* v = k.find("shuffle"))
    r.set(d.shuffle, r.boolean(*v, "shuffle"), *v);
}

void read_data(const value_reader& r, const syntax_statement& st, data_config& d) {
  const auto& call = head_of(r, st, "a dataset call such as fashion_mnist(...)");
  d.span = call.span;
  if (call.type == syntax_value::kind::name && call.text == "none") {
    d.enabled = false;
    return;
  }
  check_name(r, call, "dataset", data_statement_calls);
  r.set(d.dataset, call.text, call);
  const bool synthetic = call.text == "synthetic";
  const bool recordio = call.text == "recordio";
  std::vector<std::string> keys{"batch", "mirror", "normalize", "shuffle"};
  if (!recordio)
    keys.insert(keys.end(), {"split", "crop_pad"});
  if (synthetic)
    keys.insert(keys.end(), {"shape", "classes", "examples"});
  else if (recordio)
    keys.insert(keys.end(), recordio_keys.begin(), recordio_keys.end());
  else
    keys.push_back("dir");
  keyed_values k(r, call.text, call.arguments, keys,
                 synthetic  ? std::vector<std::string>{}
                 : recordio ? std::vector<std::string>{"path"}
                            : std::vector<std::string>{"dir"});
  if (auto* v = k.find("dir"))
    r.set(d.dir, r.string(*v, "dir"), *v);
  if (auto* v = k.find("split")) {
    r.set(d.split, r.string(*v, "split"), *v);
    if (d.split.value != "train" && d.split.value != "test")
      r.fail(v->span, "split must be \"train\" or \"test\", got \"" + d.split.value + "\"");
  }
  if (auto* v = k.find("batch"))
    r.set(d.batch, r.integer(*v, "batch", range_of_key("data.batch")), *v);
  if (auto* v = k.find("shape")) {
    r.set(d.shape,
          r.integers(*v, "shape", 1, static_cast<std::int64_t>(range_of_key("data.shape").max)),
          *v);
    if (d.shape.value.size() != 3)
      r.fail(v->span, "shape must have 3 elements [channels, height, width]");
  }
  if (auto* v = k.find("classes"))
    r.set(d.classes, static_cast<int>(r.integer(*v, "classes", range_of_key("data.classes"))), *v);
  if (auto* v = k.find("examples"))
    r.set(d.examples, r.integer(*v, "examples", range_of_key("data.examples")), *v);
  if (synthetic)
    d.normalize.value = false;
  if (recordio)
    read_recordio_keys(r, k, d);
  read_augmentation(r, k, d);
}

void read_model(const value_reader& r, const syntax_statement& st, model_config& m) {
  const auto& call = head_of(r, st, "a network such as lenet or resnet(layers = 20)");
  check_name(r, call, "network", networks);
  r.set(m.network, call.text, call);
  m.span = call.span;
  keyed_values k(r, call.text, call.arguments, {"layers", "classes"}, {});
  if (auto* v = k.find("layers"))
    r.set(m.layers, static_cast<int>(r.integer(*v, "layers", range_of_key("model.layers"))), *v);
  if (auto* v = k.find("classes"))
    r.set(m.classes, static_cast<int>(r.integer(*v, "classes", range_of_key("data.classes"))), *v);
}

void read_optimizer(const value_reader& r, const syntax_statement& st, optimizer_config& o) {
  const auto& call = head_of(r, st, "sgd(...)");
  check_name(r, call, "optimizer", {"sgd"});
  keyed_values k(r, "sgd", call.arguments, {"lr", "momentum", "wd", "nesterov"}, {"lr"});
  if (auto* v = k.find("lr"))
    r.set(o.lr, r.real(*v, "lr", range_of_key("optimizer.lr")), *v);
  if (auto* v = k.find("momentum"))
    r.set(o.momentum, r.real(*v, "momentum", range_of_key("optimizer.momentum")), *v);
  if (auto* v = k.find("wd"))
    r.set(o.wd, r.real(*v, "wd", range_of_key("optimizer.wd")), *v);
  if (auto* v = k.find("nesterov"))
    r.set(o.nesterov, r.boolean(*v, "nesterov"), *v);
}

// `steps = [5, 7.5]` (epochs) or `[50%, 75%]` (shares of the run, which follow --num-epochs).
// Elements of one kind must increase here; a mixed list is checked once the epochs are known.
std::vector<schedule_step> read_steps(const value_reader& r, const syntax_value& v) {
  if (v.type != syntax_value::kind::list)
    r.fail(v.span,
           "steps must be a list such as [50%, 75%] (shares of the run) or [5, 7.5] (epochs)");
  std::vector<schedule_step> steps;
  for (const auto& item : v.items) {
    if (item.type != syntax_value::kind::number)
      r.fail(item.span, "a step is an epoch (5, 7.5) or a share of the run (50%)");
    if (item.percent && !(item.number > 0 && item.number < 100))
      r.fail(item.span, "a step written as a share of the run must be above 0% and below 100%, got "
                          + shortest_number(item.number) + "%");
    if (!item.percent && item.number < 0)
      r.fail(item.span, "steps element must be at least 0, got " + shortest_number(item.number));
    schedule_step step{item.percent ? item.number / 100 : item.number, item.percent, item.span};
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
      if (it->share == step.share) {
        if (step.value <= it->value)
          r.fail(item.span, "steps must increase");
        break;
      }
    steps.push_back(step);
  }
  return steps;
}

void read_schedule(const value_reader& r, const syntax_statement& st, schedule_config& s) {
  const auto& call = head_of(r, st, "multi_step(...), cosine(...) or constant");
  check_name(r, call, "schedule", schedules);
  r.set(s.policy, call.text, call);
  std::vector<std::string> keys{"warmup"};
  if (call.text == "multi_step")
    keys.insert(keys.end(), {"steps", "factor"});
  if (call.text == "cosine")
    keys.push_back("final_lr");
  keyed_values k(r, call.text, call.arguments, keys, {});
  if (auto* v = k.find("steps"))
    r.set(s.written_steps, read_steps(r, *v), *v);
  if (auto* v = k.find("factor"))
    r.set(s.factor, r.real(*v, "factor", range_of_key("schedule.factor")), *v);
  if (auto* v = k.find("warmup"))
    r.set(s.warmup, r.real(*v, "warmup", range_of_key("schedule.warmup")), *v);
  if (auto* v = k.find("final_lr"))
    r.set(s.final_lr, r.real(*v, "final_lr", range_of_key("schedule.final_lr")), *v);
}

void read_run(const value_reader& r, const syntax_statement& st, run_config& t) {
  require_block_only(r, st);
  keyed_values k(r, "train", st.assignments,
                 {"epochs", "eval_every", "seed", "threads", "prefetch", "display", "metrics",
                  "top_k", "devices", "model_prefix", "save_period", "load_epoch"});
  if (auto* v = k.find("epochs"))
    r.set(t.epochs, r.integer(*v, "epochs", range_of_key("train.epochs")), *v);
  if (auto* v = k.find("eval_every"))
    r.set(t.eval_every, r.integer(*v, "eval_every", range_of_key("train.eval_every")), *v);
  if (auto* v = k.find("seed"))
    r.set(t.seed, r.integer(*v, "seed", range_of_key("train.seed")), *v);
  if (auto* v = k.find("threads"))
    r.set(t.threads, static_cast<int>(r.integer(*v, "threads", range_of_key("train.threads"))), *v);
  if (auto* v = k.find("prefetch"))
    r.set(t.prefetch, static_cast<int>(r.integer(*v, "prefetch", range_of_key("train.prefetch"))),
          *v);
  if (auto* v = k.find("display"))
    r.set(t.display, r.integer(*v, "display", range_of_key("train.display")), *v);
  if (auto* v = k.find("metrics"))
    r.set(t.metrics, r.string(*v, "metrics"), *v);
  if (auto* v = k.find("top_k")) // at most the classes: checked once the data is known
    r.set(t.top_k, static_cast<int>(r.integer(*v, "top_k", range_of_key("train.top_k"))), *v);
  if (auto* v = k.find("model_prefix"))
    r.set(t.model_prefix, r.string(*v, "model_prefix"), *v);
  if (auto* v = k.find("save_period"))
    r.set(t.save_period, r.integer(*v, "save_period", range_of_key("train.save_period")), *v);
  if (auto* v = k.find("load_epoch"))
    r.set(t.load_epoch, r.integer(*v, "load_epoch", range_of_key("train.load_epoch")), *v);
  if (auto* v = k.find("devices")) {
    if (v->type != syntax_value::kind::list || v->items.empty())
      r.fail(v->span, "devices must be a list such as [\"gpu:0\", \"gpu:1\"] (or [\"cpu\"])");
    std::vector<compute_device> devices;
    for (const auto& item : v->items) {
      if (item.type != syntax_value::kind::string && item.type != syntax_value::kind::name)
        r.fail(item.span, "a device is a string, \"cpu\" or \"gpu:N\"");
      try {
        devices.push_back(parse_compute_device(item.text));
      } catch (const std::invalid_argument& e) {
        r.fail(item.span, e.what());
      }
    }
    r.set(t.devices, std::move(devices), *v);
  }
}

} // namespace

namespace {

std::vector<std::int64_t> implied_shape(const data_config& d) {
  if (d.dataset.value == "cifar10")
    return {3, 32, 32};
  if (d.dataset.value == "synthetic" || d.dataset.value == "recordio")
    return d.shape.value;
  return {1, 28, 28};
}

// Validation follows the training set unless written: same dataset, dir and synthetic
// parameters, the test split, batch 500, no augmentation and no shuffling.
void fill_data_defaults(job_config& c, bool validation_written) {
  auto& t = c.train_data;
  if (!t.split.given)
    t.split.value = "train";
  const bool cifar = t.dataset.value == "cifar10";
  const bool recordio = t.dataset.value == "recordio";
  if (!t.crop_pad.given)
    t.crop_pad.value = cifar ? 4 : 0;
  if (!t.mirror.given)
    t.mirror.value = cifar || recordio;
  if (!t.random_crop.given)
    t.random_crop.value = recordio;
  auto& v = c.validation_data;
  // A RecordIO training file has no test split beside it: validation needs its own file.
  if (!validation_written && recordio)
    v.enabled = false;
  if (!validation_written) {
    v.dataset = t.dataset;
    v.dir = t.dir;
    v.shape = t.shape;
    v.classes = t.classes;
    v.examples = t.examples;
    v.normalize = t.normalize;
    v.span = t.span;
    v.dataset.given = false;
  }
  if (!v.split.given)
    v.split.value = "test";
  if (!v.batch.given)
    v.batch.value = 500;
  if (!v.shuffle.given)
    v.shuffle.value = false;
  t.shape.value = implied_shape(t);
  v.shape.value = implied_shape(v);
}

void check_data_agree(const value_reader& r, job_config& c) {
  const auto& t = c.train_data;
  const auto& v = c.validation_data;
  if (v.enabled && (v.shape.value != t.shape.value || v.classes.value != t.classes.value))
    r.fail(v.span, "validation data must have the training data's example shape and classes");
  if (!c.model.classes.given)
    c.model.classes.value = t.classes.value;
  else if (c.model.classes.value != t.classes.value)
    r.fail(c.model.classes.span, "model has " + std::to_string(c.model.classes.value)
                                   + " classes but the training data has "
                                   + std::to_string(t.classes.value));
  if (c.run.top_k.value > c.model.classes.value)
    r.fail(c.run.top_k.span, "top_k must be at most the " + std::to_string(c.model.classes.value)
                               + " classes, got " + std::to_string(c.run.top_k.value));
  resolve_schedule_defaults(c);
  check_schedule_steps(c);
}

// Reads one statement into its section; `seen` catches repeated sections.
void dispatch(const value_reader& r, const syntax_statement& st, job_config& c,
              std::map<std::string, bool>& seen, const syntax_statement*& topology) {
  if (std::find(sections.begin(), sections.end(), st.section) == sections.end())
    r.fail(st.section_span,
           "unknown section '" + st.section + "' (sections: " + join_names(sections) + ")");
  std::string id = st.section == "data" ? "data " + st.binding : st.section;
  if (st.section == "data" && st.binding != "train" && st.binding != "val")
    r.fail(st.binding.empty() ? st.section_span : st.binding_span,
           "data needs a binding: 'data train = ...' or 'data val = ...'");
  if (st.section != "data" && !st.binding.empty())
    r.fail(st.binding_span, "'" + st.section + "' takes no 'name =' binding");
  if (seen[id])
    r.fail(st.section_span, "duplicate '" + id + "' section");
  seen[id] = true;
  if (st.section == "cluster")
    read_cluster(r, st, c.cluster);
  else if (st.section == "data") {
    auto& d = st.binding == "train" ? c.train_data : c.validation_data;
    read_data(r, st, d);
    if (!d.enabled && st.binding == "train")
      r.fail(st.head->span, "training data cannot be none");
  } else if (st.section == "model")
    read_model(r, st, c.model);
  else if (st.section == "optimizer")
    read_optimizer(r, st, c.optimizer);
  else if (st.section == "schedule")
    read_schedule(r, st, c.schedule);
  else if (st.section == "train")
    read_run(r, st, c.run);
  else
    topology = &st;
}

} // namespace

void resolve_schedule_defaults(job_config& c) {
  auto& s = c.schedule;
  const auto epochs = static_cast<double>(c.run.epochs.value);
  if (!s.warmup.given)
    s.warmup.value = std::min(1.0, 0.1 * epochs);
  s.steps.value.clear();
  s.steps.given = s.written_steps.given;
  s.steps.span = s.written_steps.span;
  if (s.policy.value != "multi_step")
    return;
  const std::vector<schedule_step> shares{{0.5, true}, {0.75, true}};
  for (const auto& step : s.written_steps.given ? s.written_steps.value : shares)
    s.steps.value.push_back(step.share ? step.value * epochs : step.value);
}

void check_schedule_steps(const job_config& c, const std::string& epochs_origin) {
  const auto& s = c.schedule;
  if (s.policy.value != "multi_step" || !s.written_steps.given)
    return;
  const auto epochs = c.run.epochs.value;
  const auto& written = s.written_steps.value;
  for (std::size_t i = 0; i < written.size() && i < s.steps.value.size(); ++i) {
    if (written[i].span.line == 0)
      continue;
    if (!written[i].share && s.steps.value[i] >= static_cast<double>(epochs))
      config_fail(c, written[i].span,
                  "step " + shortest_number(written[i].value) + " is not inside the run's "
                    + std::to_string(epochs) + " epochs"
                    + (epochs_origin.empty() ? "" : " (" + epochs_origin + ")")
                    + ": a step at or after the last epoch never applies; write steps as shares "
                      "of the run (steps = [50%, 75%]) to follow its length"
                    + (epochs_origin.empty() ? "" : ", or give --lr-step-epochs"));
    if (i > 0 && !(s.steps.value[i] > s.steps.value[i - 1]))
      config_fail(c, written[i].span,
                  "steps must increase, but this one falls at epoch "
                    + shortest_number(s.steps.value[i]) + ", not after epoch "
                    + shortest_number(s.steps.value[i - 1]));
  }
}

job_config parse_job_config(const std::string& path, const std::string& text,
                            const config_overrides& overrides) {
  auto file = parse_syntax(path, text);
  value_reader r(file);
  job_config c;
  c.path = path;
  c.text = text;
  std::map<std::string, bool> seen;
  const syntax_statement* topology = nullptr;
  for (const auto& st : file.statements)
    dispatch(r, st, c, seen, topology);
  const auto overridden = apply_overrides(c, overrides);
  fill_data_defaults(c, seen["data val"] || overridden.validation);
  check_data_agree(r, c);
  if (c.run.eval_every.given && c.run.eval_every.value == 0)
    c.validation_data.enabled = false;
  resolve_topology(c, topology);
  return c;
}

// A directory opens as a stream on Linux and reads as empty, which would be the default job:
// refused by name, as are unreadable files (with the system's reason) and binary files.
job_config load_job_config(const std::string& path, const config_overrides& overrides) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw_config_error(path, "", source_span{},
                       std::string("cannot open config file: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    throw_config_error(path, "", source_span{}, "cannot read config file: it is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw_config_error(path, "", source_span{},
                       std::string("cannot open config file: ")
                         + std::strerror(errno ? errno : EACCES));
  // Bounded, so that a device such as /dev/zero or a data file given by mistake is refused
  // after a read of max_config_bytes rather than read whole into memory.
  std::string bytes(max_config_bytes + 1, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  if (auto nul = bytes.find('\0'); nul != std::string::npos)
    throw_config_error(path, "", source_span{},
                       "not a text file (a NUL byte at offset " + std::to_string(nul) + ")");
  if (bytes.size() > max_config_bytes)
    throw_config_error(path, "", source_span{},
                       "not a config file: longer than " + std::to_string(max_config_bytes >> 20)
                         + " MiB (a config is a page of text)");
  return parse_job_config(path, bytes, overrides);
}

std::string zoo_network_name(const std::string& dsl_name) {
  return dsl_name == "inception_bn" ? "inception-bn" : dsl_name;
}

bool backward_ms_allowed(double ms) {
  return ms == -1 || (ms >= 0 && range_of_key("cluster.backward_ms").contains(ms));
}

bool congestion_control_name(const std::string& name) {
  return !name.empty() && name.size() < 16 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

std::string io_dataset_name(const std::string& dsl_name) {
  return dsl_name == "fashion_mnist" ? "fashion-mnist" : dsl_name;
}

model_spec model_spec_of(const job_config& c) {
  model_spec spec;
  spec.network = zoo_network_name(c.model.network.value);
  spec.num_layers = c.model.layers.value;
  spec.sample_shape = shape_t(c.train_data.shape.value.begin(), c.train_data.shape.value.end());
  spec.classes = c.model.classes.value;
  spec.seed = static_cast<std::uint64_t>(c.run.seed.value);
  return spec;
}

key_plan_options key_options_of(const job_config& c) {
  key_plan_options o;
  o.slice_bytes = c.cluster.slice_bytes.value;
  o.group_bytes = c.cluster.group_bytes.value;
  return o;
}

void config_fail(const job_config& c, const source_span& span, const std::string& message) {
  throw_config_error(c.path, c.text, span, message);
}

} // namespace troupe
