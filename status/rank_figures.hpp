// What /status and /metrics both derive from a rank's figures: the node its compute is placed
// on and its mean step and wait. Private to status/.
#pragma once

#include <string>

#include <troupe/actors/run_status.hpp>

namespace troupe::status_parts {

/// The plan's node of compute `rank`; empty in one process (or for a rank the plan lacks).
inline std::string node_of_rank(const status_snapshot& s, int rank) {
  const auto name = "compute_" + std::to_string(rank);
  for (const auto& a : s.plan.actors)
    if (a.name == name && a.node >= 0 && a.node < static_cast<int>(s.plan.nodes.size()))
      return s.plan.nodes[static_cast<std::size_t>(a.node)].first;
  return {};
}

/// `sum` over the rank's steps this epoch; 0 before its first.
inline double per_step(double sum, const rank_figures& r) {
  return r.steps > 0 ? sum / static_cast<double>(r.steps) : 0.0;
}

} // namespace troupe::status_parts
