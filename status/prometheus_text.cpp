// Families are written whole, one after another, each opened by its HELP and TYPE lines, as
// the format requires. Counters are what only grows over the run (samples, bytes, losses,
// warnings); gauges are the rest. A rank's and a node's series carry the node's name as the
// "node" label ("process" in one process), so a dashboard groups them.
#include <troupe/status/prometheus_text.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "status/rank_figures.hpp"

namespace troupe {

namespace {

// The format's numbers: Go's float syntax; NaN and infinities by name.
std::string number(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

using labels = std::vector<std::pair<std::string, std::string>>;

class exposition {
public:
  void family(const std::string& name, const char* type, const std::string& help) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
    name_ = name;
  }
  void sample(double value, const labels& with = {}) {
    out_ << name_;
    if (!with.empty()) {
      out_ << '{';
      for (std::size_t i = 0; i < with.size(); ++i)
        out_ << (i ? "," : "") << with[i].first << "=\"" << prometheus_label_value(with[i].second)
             << '"';
      out_ << '}';
    }
    out_ << ' ' << number(value) << '\n';
  }
  std::string text() const { return out_.str(); }

private:
  std::ostringstream out_;
  std::string name_;
};

// A rank's node label: "process" in one process, which has no nodes.
std::string node_label(const status_snapshot& s, int rank) {
  const auto node = status_parts::node_of_rank(s, rank);
  return node.empty() ? "process" : node;
}

void run_families(exposition& e, const status_snapshot& s) {
  labels info;
  for (const auto& [key, value] : s.run)
    info.emplace_back(key, value);
  info.emplace_back("topology", s.plan.topology);
  e.family("troupe_run_info", "gauge", "The run: its network, dataset, config and topology.");
  e.sample(1, info);
  e.family("troupe_run_state", "gauge", "1 for the run's state now, 0 for the others.");
  for (const char* state : {"starting", "training", "validating", "finished", "failed", "stopped"})
    e.sample(s.state == state ? 1 : 0, {{"state", state}});
  e.family("troupe_epoch", "gauge", "The epoch training or last trained, from 0.");
  e.sample(static_cast<double>(s.epoch));
  e.family("troupe_epochs", "gauge", "The epochs the run trains.");
  e.sample(static_cast<double>(s.epochs));
  e.family("troupe_step", "gauge", "Training steps done, over all epochs.");
  e.sample(static_cast<double>(s.step));
  e.family("troupe_train_loss", "gauge", "Mean cross-entropy of this epoch's batches so far.");
  e.sample(s.loss);
  e.family("troupe_train_accuracy", "gauge", "Accuracy of this epoch's batches so far.");
  e.sample(s.accuracy);
  e.family("troupe_learning_rate", "gauge", "The learning rate of the last step.");
  e.sample(s.learning_rate);
  e.family("troupe_samples_per_second", "gauge",
           "Training samples a second, this epoch, all ranks.");
  e.sample(s.samples_per_s);
  for (auto it = s.history.rbegin(); it != s.history.rend(); ++it)
    if (it->validated) {
      e.family("troupe_validation_epoch", "gauge", "The epoch of the last validation.");
      e.sample(static_cast<double>(it->epoch));
      e.family("troupe_validation_loss", "gauge", "Mean cross-entropy of the last validation.");
      e.sample(it->val_loss);
      e.family("troupe_validation_accuracy", "gauge", "Accuracy of the last validation.");
      e.sample(it->val_accuracy);
      break;
    }
}

void rank_families(exposition& e, const status_snapshot& s) {
  if (s.ranks.empty())
    return;
  auto each = [&](const char* name, const char* type, const char* help, auto value) {
    e.family(name, type, help);
    for (const auto& r : s.ranks)
      e.sample(value(r), {{"rank", std::to_string(r.rank)}, {"node", node_label(s, r.rank)}});
  };
  each("troupe_rank_samples_per_second", "gauge", "A rank's training samples a second, this epoch.",
       [](const rank_figures& r) { return r.samples_per_s; });
  each("troupe_rank_samples_total", "counter", "A rank's training samples since the run began.",
       [](const rank_figures& r) { return static_cast<double>(r.samples_total); });
  each("troupe_rank_step_seconds", "gauge",
       "A rank's mean step time (forward and backward), this epoch.",
       [](const rank_figures& r) { return status_parts::per_step(r.step_seconds, r); });
  each("troupe_rank_wait_seconds", "gauge",
       "A rank's mean wait between steps (weights and batch), this epoch.",
       [](const rank_figures& r) { return status_parts::per_step(r.wait_seconds, r); });
}

void node_families(exposition& e, const status_snapshot& s) {
  if (s.nodes.empty())
    return;
  e.family("troupe_node_up", "gauge", "1 while a node is in the run, 0 once lost or stopped.");
  for (const auto& n : s.nodes)
    e.sample(n.state == "joined" || n.state == "ready" ? 1 : 0,
             {{"node", n.name}, {"role", n.role}});
  e.family("troupe_node_bytes_total", "counter",
           "Bytes a node moved since the run began, by message kind and direction (epoch ends).");
  for (const auto& n : s.nodes)
    for (const auto& [kind, both] : n.bytes)
      for (const auto& [direction, bytes] : both)
        e.sample(static_cast<double>(bytes),
                 {{"node", n.name}, {"kind", kind}, {"direction", direction}});
  e.family("troupe_node_waited_for_seconds_total", "counter",
           "Seconds the barriers waited for a node (the straggler's), summed over epochs.");
  for (const auto& n : s.nodes)
    e.sample(n.waited_for_s, {{"node", n.name}});
}

} // namespace

std::string prometheus_label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string prometheus_text(const status_snapshot& s) {
  exposition e;
  run_families(e, s);
  rank_families(e, s);
  node_families(e, s);
  e.family("troupe_nodes_lost_total", "counter", "Nodes lost that the run went on without.");
  e.sample(static_cast<double>(s.nodes_lost));
  e.family("troupe_warnings_total", "counter", "The run's own warnings (no learning), by kind.");
  for (const char* kind : {"near_chance", "diverging", "rising"}) {
    const auto it = s.warning_counts.find(kind);
    e.sample(it == s.warning_counts.end() ? 0 : static_cast<double>(it->second), {{"kind", kind}});
  }
  return e.text();
}

} // namespace troupe
