#include "backup_ring.hpp"

#include <algorithm>
#include <vector>

namespace troupe {

namespace {

// The server `step` places from `node` around the ring (step +1 or -1).
int server_beside(const placement_plan& plan, int node, int step) {
  std::vector<int> ring;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == node_kind::server)
      ring.push_back(static_cast<int>(n));
  const auto at = std::find(ring.begin(), ring.end(), node);
  if (ring.size() < 2 || at == ring.end())
    return -1;
  const auto size = static_cast<int>(ring.size());
  return ring[static_cast<std::size_t>((static_cast<int>(at - ring.begin()) + step + size) % size)];
}

} // namespace

int next_server(const placement_plan& plan, int node) {
  return server_beside(plan, node, 1);
}

int previous_server(const placement_plan& plan, int node) {
  return server_beside(plan, node, -1);
}

std::string shard_names(const placement_plan& plan, int node) {
  std::string text;
  for (auto i : plan.actors_on(node))
    if (plan.actors[i].role == plan_role::shard)
      text += (text.empty() ? "" : ", ") + plan.actors[i].name;
  return text.empty() ? "no shard" : text;
}

} // namespace troupe
