#include "actors/running_figures.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace troupe {

namespace {

double per_step(double sum, std::int64_t steps) {
  return sum / static_cast<double>(std::max<std::int64_t>(steps, 1));
}

std::string times_text(const std::string& name, double step, double wait) {
  char text[64];
  std::snprintf(text, sizeof text, "{\"step_s\":%.6g,\"wait_s\":%.6g", step, wait);
  return "\"" + name + "\":" + text;
}

} // namespace

void running_figures::add(const batch_report& r) {
  samples += r.samples;
  correct += r.correct;
  loss_sum += r.loss_sum;
  auto& t = ranks[r.rank];
  t.step += r.step_seconds;
  t.wait += r.wait_seconds;
  ++t.steps;
}

std::string rank_times_json(const running_figures& w) {
  std::string json;
  for (const auto& [rank, t] : w.ranks)
    json += (json.empty() ? "" : ",")
            + times_text(std::to_string(rank), per_step(t.step, t.steps), per_step(t.wait, t.steps))
            + "}";
  return "{" + json + "}";
}

std::string node_times_json(const running_figures& w,
                            const std::map<int, std::string>& rank_nodes) {
  struct node_sum {
    running_figures::times sum;
    std::vector<int> ranks;
  };
  std::map<std::string, node_sum> nodes;
  for (const auto& [rank, t] : w.ranks) {
    const auto at = rank_nodes.find(rank);
    if (at == rank_nodes.end())
      continue;
    auto& n = nodes[at->second];
    n.sum.step += t.step;
    n.sum.wait += t.wait;
    n.sum.steps += t.steps;
    n.ranks.push_back(rank);
  }
  std::string json;
  for (const auto& [name, n] : nodes) {
    std::string ranks;
    for (auto r : n.ranks)
      ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    json += (json.empty() ? "" : ",")
            + times_text(name, per_step(n.sum.step, n.sum.steps), per_step(n.sum.wait, n.sum.steps))
            + ",\"ranks\":[" + ranks + "]}";
  }
  return "{" + json + "}";
}

std::string bar_figures(const running_figures& w, double seconds, std::int64_t index,
                        std::int64_t batches) {
  if (index == 0 || seconds <= 0 || w.samples == 0)
    return "";
  const auto left = static_cast<std::int64_t>(seconds / static_cast<double>(index)
                                              * static_cast<double>(batches - index - 1));
  char text[96];
  std::snprintf(text, sizeof text, " %.0f/s ETA %lld:%02lld loss %.4f",
                static_cast<double>(w.samples) / seconds, static_cast<long long>(left / 60),
                static_cast<long long>(left % 60), w.loss_sum / static_cast<double>(w.samples));
  return text;
}

} // namespace troupe
