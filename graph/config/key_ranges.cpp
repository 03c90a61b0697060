// The table of shared ranges (key_ranges.hpp). A range that depends on the machine (threads)
// is computed when the table is built, once per process.
#include <troupe/graph/config/key_ranges.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include <troupe/graph/config/key_assignment.hpp>

namespace troupe {

namespace {

constexpr double big = 1'000'000'000;

std::vector<key_range> build_table() {
  const double ceiling = static_cast<double>(key_plan_options::max_bytes);
  const double threads = max_compute_threads();
  auto whole = [](const char* key, const char* flag, double min, double max, const char* why = "") {
    return key_range{key, flag, min, max, true, false, false, why};
  };
  auto real = [](const char* key, const char* flag, double min, double max, bool min_open = false,
                 bool max_open = false) {
    return key_range{key, flag, min, max, false, min_open, max_open, ""};
  };
  return {
    whole("train.epochs", "num-epochs", 1, big),
    whole("train.eval_every", "eval-every", 0, big, "0: no validation"),
    whole("train.seed", "seed", 0, 9007199254740992.0), // 2^53: every seed a double holds
    whole("train.threads", "threads", 1, threads, "4 per hardware thread, at least 64"),
    whole("train.prefetch", "prefetch", 1, 1024),
    whole("train.display", "disp-batches", 0, big, "0: never"),
    whole("train.top_k", "top-k", 0, 100000, "0: off"),
    whole("train.save_period", "save-period", 1, big),
    whole("train.load_epoch", "load-epoch", 0, big),
    whole("data.batch", "batch-size", 1, big),
    whole("data.val_batch", "val-batch-size", 1, big),
    whole("data.crop_pad", "", 0, 64),
    whole("data.classes", "num-classes", 2, 100000),
    whole("data.examples", "num-examples", 6, big, "the test split is a sixth of it"),
    whole("data.shape", "image-shape", 1, 4096),
    real("data.rgb_mean", "rgb-mean", 0, 255), // recordio, per channel, pixel units
    real("data.rgb_std", "rgb-std", 0, 255, true),
    whole("model.layers", "", 1, 1000),
    whole("cluster.servers", "", 1, 1024),
    whole("cluster.workers", "workers", 1, 1024),
    whole("cluster.shards", "shards", 1, 1024),
    whole("cluster.slice_bytes", "slice-bytes", 4, ceiling, "a slice holds at least one float"),
    whole("cluster.group_bytes", "group-bytes", 0, ceiling, "0 = never bundle"),
    whole("cluster.server_nodes", "server-nodes", 0, 1024),
    whole("cluster.worker_nodes", "worker-nodes", 0, 1024),
    whole("cluster.replicas", "replicas", 1, 2),
    real("cluster.join_timeout", "join-timeout", 1, 86400),
    real("cluster.heartbeat", "heartbeat", 0.05, 600),
    real("cluster.peer_timeout", "peer-timeout", 0.2, 3600),
    real("cluster.request_timeout", "request-timeout", 0.1, 86400),
    whole("cluster.link_mbit", "link-mbit", 0, 10000000, "0: not stated"),
    real("cluster.backward_ms", "backward-ms", -1, 3600e3),
    real("optimizer.lr", "lr", 0, 100, true),
    real("optimizer.momentum", "mom", 0, 1, false, true),
    real("optimizer.wd", "wd", 0, 1),
    real("schedule.factor", "lr-factor", 0, 1, true),
    real("schedule.warmup", "warmup-epochs", 0, 1e6),
    real("schedule.final_lr", "", 0, 100),
  };
}

const std::vector<key_range>& table() {
  static const std::vector<key_range> ranges = build_table();
  return ranges;
}

} // namespace

int max_compute_threads() {
  return static_cast<int>(
    std::min<unsigned>(4096, std::max(64u, 4 * std::thread::hardware_concurrency())));
}

const key_range& range_of_key(const std::string& key) {
  for (const auto& r : table())
    if (key == r.key)
      return r;
  throw std::out_of_range("no range for config key " + key);
}

const key_range* range_of_flag(const std::string& flag) {
  for (const auto& r : table())
    if (*r.flag != '\0' && flag == r.flag)
      return &r;
  return nullptr;
}

std::string shortest_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18)
    return std::to_string(static_cast<long long>(v));
  char text[64];
  auto end = std::to_chars(text, text + sizeof text, v).ptr;
  return std::string(text, end);
}

std::string range_text(const key_range& r) {
  std::string text;
  if (!r.min_open && !r.max_open)
    text = "between " + shortest_number(r.min) + " and " + shortest_number(r.max);
  else
    text = std::string(r.min_open ? "above " : "at least ") + shortest_number(r.min)
           + (r.max_open ? " and below " : " and at most ") + shortest_number(r.max);
  if (*r.why != '\0')
    text += std::string(" (") + r.why + ")";
  return text;
}

} // namespace troupe
