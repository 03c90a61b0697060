// See job_difference.hpp. Each compared field is named by the config key that sets it
// (docs/dsl.md); a field no key sets alone is named by its section. Values are compared
// through value_hash, which covers exactly what job_hash covers, so any two jobs whose
// hashes differ (counts aside) have at least one line here; the last entry catches a field
// added to training_job later and not named here yet.
#include <troupe/cluster/job_difference.hpp>

#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>
#include <type_traits>

#include <troupe/graph/value_hash.hpp>

namespace troupe {

namespace {

template <class T> std::string value_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<long long>(v));
  } else if constexpr (std::is_arithmetic_v<T>) {
    std::ostringstream out;
    out.precision(std::numeric_limits<T>::digits10 + 1); // 0.02f reads 0.02
    out << v;
    return out.str();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "'" + v + "'";
  } else {
    std::string text = "[";
    for (const auto& x : v)
      text += (text.size() > 1 ? ", " : "") + value_text(x);
    return text + "]";
  }
}

template <class T>
constexpr bool readable_v =
  std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string>;
template <class T> struct readable_vector : std::false_type {};
template <class T, class A>
struct readable_vector<std::vector<T, A>> : std::bool_constant<std::is_arithmetic_v<T>> {};

struct differ {
  const std::string& ours_name;
  std::vector<std::string> lines;

  // Compares one field; a plain value is shown both ways, a structure only named.
  template <class T> void field(const std::string& key, const T& theirs, const T& ours) {
    if (value_hash(theirs) == value_hash(ours))
      return;
    if constexpr (readable_v<T> || readable_vector<T>::value)
      lines.push_back(key + " " + value_text(theirs) + " (" + ours_name + " " + value_text(ours)
                      + ")");
    else
      lines.push_back(key);
  }
  // A group of fields named together, compared by their hashes.
  void named(const std::string& key, std::uint64_t theirs, std::uint64_t ours) {
    if (theirs != ours)
      lines.push_back(key);
  }
};

template <class... Ts> std::uint64_t hash_of(const Ts&... xs) {
  value_hasher h;
  h(xs...);
  return h.value();
}

} // namespace

std::string hash_text(std::uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::vector<std::string> job_differences(const training_job& theirs_in, const training_job& ours_in,
                                         const std::string& ours_name) {
  auto theirs = theirs_in, ours = ours_in;
  theirs.nodes.servers = ours.nodes.servers = 0;
  theirs.nodes.workers = ours.nodes.workers = 0;
  differ d{ours_name, {}};
  const auto &a = theirs, &b = ours;
  d.field("model", a.model.network, b.model.network);
  d.field("model layers", a.model.num_layers, b.model.num_layers);
  d.field("model classes", a.model.classes, b.model.classes);
  d.field("data shape", a.model.sample_shape, b.model.sample_shape);
  d.field("train seed", a.model.seed, b.model.seed);
  d.field("data train", a.train_data, b.train_data);
  d.field("data val", a.validation_data, b.validation_data);
  d.field("data train batch", a.train_batches.batch_size, b.train_batches.batch_size);
  d.field("data val batch", a.validation_batches.batch_size, b.validation_batches.batch_size);
  {
    auto at = a.train_batches, bt = b.train_batches, av = a.validation_batches,
         bv = b.validation_batches;
    at.batch_size = bt.batch_size = av.batch_size = bv.batch_size = 0;
    d.named("data (shuffle, seed, augmentation)", hash_of(at, av), hash_of(bt, bv));
  }
  d.field("optimizer", std::string(optimizer_name(a.optimizer.kind)),
          std::string(optimizer_name(b.optimizer.kind)));
  d.field("optimizer momentum", a.optimizer.sgd.momentum, b.optimizer.sgd.momentum);
  d.field("optimizer wd", a.optimizer.sgd.weight_decay, b.optimizer.sgd.weight_decay);
  d.field("optimizer nesterov", a.optimizer.sgd.nesterov, b.optimizer.sgd.nesterov);
  d.field("optimizer beta1", a.optimizer.beta1, b.optimizer.beta1);
  d.field("optimizer beta2", a.optimizer.beta2, b.optimizer.beta2);
  d.field("optimizer eps", a.optimizer.eps, b.optimizer.eps);
  d.field("optimizer alpha", a.optimizer.alpha, b.optimizer.alpha);
  d.field("optimizer trust", a.optimizer.trust, b.optimizer.trust);
  const auto &as = a.optimizer.schedule, &bs = b.optimizer.schedule;
  d.field("optimizer lr", as.base_lr, bs.base_lr);
  d.field("schedule (policy)", as.policy, bs.policy);
  d.field("schedule steps", as.step_epochs, bs.step_epochs);
  d.field("schedule factor", as.factor, bs.factor);
  d.field("schedule final_lr", as.final_lr, bs.final_lr);
  d.field("schedule warmup", as.warmup_epochs, bs.warmup_epochs);
  d.field("train prefetch", a.prefetch_depth, b.prefetch_depth);
  d.field("train epochs", a.epochs, b.epochs);
  d.field("data val (validation on)", a.validate, b.validate);
  d.field("train eval_every", a.validate_every, b.validate_every);
  d.field("cluster shards", a.shards, b.shards);
  const auto &at = a.topology, &bt = b.topology;
  d.field("topology", at.name, bt.name);
  d.field("cluster workers", at.workers, bt.workers);
  d.named("topology routes (aggregation levels)", value_hash(at.levels), value_hash(bt.levels));
  d.field("topology staleness", at.staleness, bt.staleness);
  d.field("topology machines", at.machines, bt.machines);
  d.field("topology deterministic", at.deterministic, bt.deterministic);
  d.field("cluster overlap", at.overlap, bt.overlap);
  d.field("cluster priority", at.priority, bt.priority);
  if (value_hash(at.compression) != value_hash(bt.compression)) {
    auto text = [](const std::vector<compression_spec>& hops) {
      std::string out;
      for (const auto& h : hops)
        out += (out.empty() ? "" : ", ") + to_string(h);
      return "[" + out + "]";
    };
    d.lines.push_back("compression by hop (--compression, compress) " + text(at.compression) + " ("
                      + d.ours_name + " " + text(bt.compression) + ")");
  }
  d.field("cluster slice_bytes", at.keys.slice_bytes, bt.keys.slice_bytes);
  d.field("cluster group_bytes", at.keys.group_bytes, bt.keys.group_bytes);
  d.field("cluster on_worker_loss", std::string(worker_loss_policy(a.nodes)),
          std::string(worker_loss_policy(b.nodes)));
  d.field("train top_k", a.top_k, b.top_k);
  d.field("train init_from (--init-from)", a.init_from, b.init_from);
  d.field("train reset_layers (--reset-layers)", a.reset_layers, b.reset_layers);
  if (d.lines.empty() && job_hash(theirs) != job_hash(ours))
    d.lines.push_back("a field this build does not name (job hash " + hash_text(job_hash(theirs))
                      + ", " + ours_name + " " + hash_text(job_hash(ours)) + ")");
  return d.lines;
}

std::string difference_text(const std::vector<std::string>& differences, std::size_t limit) {
  std::string text;
  const auto shown = std::min(limit, differences.size());
  for (std::size_t i = 0; i < shown; ++i)
    text += (i == 0                                          ? ""
             : i + 1 == shown && shown == differences.size() ? " and "
                                                             : ", ")
            + differences[i];
  if (shown < differences.size())
    text += " and " + std::to_string(differences.size() - shown) + " more";
  return text;
}

} // namespace troupe
