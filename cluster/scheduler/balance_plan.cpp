// balance_plan.hpp: the balanced rank counts and the move toward them.
#include "cluster/scheduler/balance_plan.hpp"

#include <algorithm>

namespace troupe {

std::vector<std::size_t> balanced_counts(const std::vector<balanced_process>& processes) {
  std::size_t ranks = 0;
  for (const auto& p : processes) {
    if (!(p.seconds_per_rank > 0))
      return {};
    ranks += p.ranks.size();
  }
  if (processes.empty() || ranks < processes.size())
    return {};
  std::vector<std::size_t> counts(processes.size(), 1);
  // Each next rank goes where the process's step would end soonest with it.
  for (auto left = ranks - processes.size(); left > 0; --left) {
    std::size_t best = 0;
    for (std::size_t p = 1; p < processes.size(); ++p) {
      const auto with = static_cast<double>(counts[p] + 1) * processes[p].seconds_per_rank;
      const auto with_best =
        static_cast<double>(counts[best] + 1) * processes[best].seconds_per_rank;
      if (with < with_best)
        best = p;
    }
    ++counts[best];
  }
  return counts;
}

double step_seconds(const std::vector<balanced_process>& processes,
                    const std::vector<std::size_t>& counts) {
  double slowest = 0;
  for (std::size_t p = 0; p < processes.size() && p < counts.size(); ++p)
    slowest = std::max(slowest, static_cast<double>(counts[p]) * processes[p].seconds_per_rank);
  return slowest;
}

std::optional<balance_move> next_balance_move(const std::vector<balanced_process>& processes,
                                              double gain) {
  const auto target = balanced_counts(processes);
  if (target.empty())
    return std::nullopt;
  std::vector<std::size_t> now;
  for (const auto& p : processes)
    now.push_back(p.ranks.size());
  balance_move move;
  move.step_before = step_seconds(processes, now);
  move.step_after = step_seconds(processes, target);
  if (!(move.step_after < move.step_before * (1 - gain)))
    return std::nullopt;
  std::size_t surplus = 0, deficit = 0;
  for (std::size_t p = 0; p < processes.size(); ++p) {
    if (now[p] > target[p] && now[p] - target[p] > surplus) {
      surplus = now[p] - target[p];
      move.from = p;
    }
    if (target[p] > now[p] && target[p] - now[p] > deficit) {
      deficit = target[p] - now[p];
      move.to = p;
    }
  }
  move.count = std::min(surplus, deficit);
  if (move.count == 0)
    return std::nullopt;
  auto after = now;
  after[move.from] -= move.count;
  after[move.to] += move.count;
  move.step_after = step_seconds(processes, after); // what this one move gets
  return move;
}

} // namespace troupe
