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
#include <type_traits>

#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/graph/config/key_table.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>

#include "graph/config/config_overrides.hpp"
#include "graph/config/value_reader.hpp"

namespace troupe {

const std::vector<std::string> data_statement_calls{"fashion_mnist", "mnist", "cifar10",
                                                    "synthetic", "recordio"};

namespace {

const std::vector<std::string> sections{"cluster",  "data",     "model", "optimizer",
                                        "schedule", "topology", "train"};
const std::vector<std::string> networks{"mlp", "lenet", "resnet", "inception_bn", "vgg"};
const std::vector<std::string> schedules{"multi_step", "step",      "cosine",
                                         "poly",       "one_cycle", "constant"};

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

// A plain key: its field, read by the field's type and the key's range.
struct plain_read {
  const value_reader& r;
  const config_key& key;
  const syntax_value& v;
  void operator()(located<int>& f) const {
    r.set(f, static_cast<int>(r.integer(v, key.name, key.range.value())), v);
  }
  void operator()(located<std::int64_t>& f) const {
    r.set(f, r.integer(v, key.name, key.range.value()), v);
  }
  void operator()(located<double>& f) const { r.set(f, r.real(v, key.name, key.range.value()), v); }
  void operator()(located<bool>& f) const { r.set(f, r.boolean(v, key.name), v); }
  void operator()(located<std::string>& f) const {
    r.set(f, key.type == key_type::name ? r.name(v, key.name) : r.string(v, key.name), v);
  }
};

// Whether a key's field is a plain value, which the generic reader reads (a list has a reader
// of its own).
template <class F>
inline constexpr bool is_plain_field =
  std::disjunction_v<std::is_same<F, key_field<int>>, std::is_same<F, key_field<std::int64_t>>,
                     std::is_same<F, key_field<double>>, std::is_same<F, key_field<bool>>,
                     std::is_same<F, key_field<std::string>>>;

void read_key(const value_reader& r, const config_key& key, const syntax_value& v, key_target& t) {
  if (key.read != nullptr)
    key.read(r, v, t);
  else
    std::visit(
      [&](auto field) {
        if constexpr (is_plain_field<decltype(field)>)
          plain_read{r, key, v}(field(t));
      },
      key.field);
  if (key.check != nullptr)
    key.check(r, v, t);
}

// The keys of `section` that `call` takes ("" every one), as `k` holds them, in the table's
// order.
void read_keys(const value_reader& r, const keyed_values& k, const std::string& section,
               const std::string& call, key_target t) {
  for (const auto& key : config_keys())
    if (section == key.section && key.taken_by(call))
      if (const auto* v = k.find(key.name))
        read_key(r, key, *v, t);
}

// The rules between the cluster section's keys, once each is read.
void check_cluster(const value_reader& r, const keyed_values& k, cluster_config& c) {
  if (!c.shards.given)
    c.shards.value = c.servers.value;
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

void read_cluster(const value_reader& r, const syntax_statement& st, job_config& c) {
  require_block_only(r, st);
  keyed_values k(r, "cluster", st.assignments, section_keys("cluster"));
  read_keys(r, k, "cluster", "", {c, c.train_data});
  check_cluster(r, k, c.cluster);
}

void read_data(const value_reader& r, const syntax_statement& st, job_config& c, data_config& d) {
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
  keyed_values k(r, call.text, call.arguments, section_keys("data", call.text),
                 synthetic  ? std::vector<std::string>{}
                 : recordio ? std::vector<std::string>{"path"}
                            : std::vector<std::string>{"dir"});
  if (synthetic)
    d.normalize.value = false;
  read_keys(r, k, "data", call.text, {c, d});
  if (!recordio)
    return;
  if (!d.shape.given)
    d.shape.value = {3, 224, 224};
  else if (d.shape.value[0] != 3)
    r.fail(k.find("shape")->span, "recordio images are RGB: shape must be [3, height, width]");
}

void read_model(const value_reader& r, const syntax_statement& st, job_config& c) {
  const auto& call = head_of(r, st, "a network such as lenet or resnet(layers = 20)");
  check_name(r, call, "network", networks);
  r.set(c.model.network, call.text, call);
  c.model.span = call.span;
  keyed_values k(r, call.text, call.arguments, section_keys("model"), {});
  read_keys(r, k, "model", "", {c, c.train_data});
}

void read_optimizer(const value_reader& r, const syntax_statement& st, job_config& c) {
  const auto& call = head_of(r, st, "an optimizer such as sgd(...) or adam(...)");
  check_name(r, call, "optimizer", optimizer_names());
  r.set(c.optimizer.name, call.text, call);
  keyed_values k(r, call.text, call.arguments, section_keys("optimizer", call.text), {"lr"});
  read_keys(r, k, "optimizer", call.text, {c, c.train_data});
  resolve_optimizer_defaults(c);
}

void read_schedule(const value_reader& r, const syntax_statement& st, job_config& c) {
  const auto& call = head_of(
    r, st, "multi_step(...), step(...), cosine(...), poly(...), one_cycle(...) or constant");
  check_name(r, call, "schedule", schedules);
  r.set(c.schedule.policy, call.text, call);
  keyed_values k(r, call.text, call.arguments, section_keys("schedule", call.text), {});
  read_keys(r, k, "schedule", call.text, {c, c.train_data});
}

void read_run(const value_reader& r, const syntax_statement& st, job_config& c) {
  require_block_only(r, st);
  keyed_values k(r, "train", st.assignments, section_keys("train"));
  read_keys(r, k, "train", "", {c, c.train_data});
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
    v.class_subset = t.class_subset; // the validation of a subset of classes is of those classes
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
  if (const auto overlap = warmup_overlap(c); !overlap.empty())
    r.fail(c.schedule.warmup.span, overlap);
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
    read_cluster(r, st, c);
  else if (st.section == "data") {
    auto& d = st.binding == "train" ? c.train_data : c.validation_data;
    read_data(r, st, c, d);
    if (!d.enabled && st.binding == "train")
      r.fail(st.head->span, "training data cannot be none");
  } else if (st.section == "model")
    read_model(r, st, c);
  else if (st.section == "optimizer")
    read_optimizer(r, st, c);
  else if (st.section == "schedule")
    read_schedule(r, st, c);
  else if (st.section == "train")
    read_run(r, st, c);
  else
    topology = &st;
}

} // namespace

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
  if (overrides.topology)
    resolve_topology(c, *overrides.topology);
  else
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
