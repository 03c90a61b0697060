// member_placement.hpp: the arithmetic a member does on its assignment, apart from the actor.
#include "cluster/member/member_placement.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace troupe {

std::uint64_t link_share(const member_options& options, const placement_plan& plan) {
  if (options.link_mbit <= 0)
    return 0;
  std::uint64_t peers = 0;
  const auto other = options.role == node_kind::worker ? node_kind::server : node_kind::worker;
  for (const auto& node : plan.nodes)
    peers += node.kind == other ? 1 : 0;
  return static_cast<std::uint64_t>(static_cast<double>(options.link_mbit) * 1e6 / 8)
         / std::max<std::uint64_t>(peers, 1);
}

double backward_seconds(const member_options& options) {
  if (options.backward.count() >= 0)
    return std::chrono::duration<double>(options.backward).count();
  return options.stand_in.active()
           ? std::chrono::duration<double>(options.stand_in.step).count() * 2 / 3
           : 0;
}

std::size_t computes_on(const placement_plan& plan, std::uint32_t node) {
  std::size_t n = 0;
  for (auto actor : plan.actors_on(static_cast<int>(node)))
    n += plan.actors[actor].role == plan_role::compute ? 1 : 0;
  return n;
}

std::string unadoptable_node(const placement_plan& plan, int node) {
  for (auto a : plan.actors_on(node)) {
    const auto role = plan.actors[a].role;
    if (role != plan_role::loader && role != plan_role::validation_loader
        && role != plan_role::compute && role != plan_role::machine_aggregator)
      return plan.nodes.at(static_cast<std::size_t>(node)).name + " holds " + plan.actors[a].name
             + ", which no worker adopts (only loaders, computes and machine aggregators)";
  }
  return "";
}

std::vector<int> ranks_on(const placement_plan& plan, int node) {
  std::vector<int> ranks;
  for (auto actor : plan.actors_on(node))
    if (plan.actors[actor].role == plan_role::compute)
      ranks.push_back(plan.actors[actor].rank);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::string split_refusal(const placement_plan& plan, int node, const std::vector<int>& ranks) {
  if (ranks.empty())
    return "";
  if (node < 0 || static_cast<std::size_t>(node) >= plan.nodes.size()
      || plan.nodes[static_cast<std::size_t>(node)].kind != node_kind::worker)
    return "plan node " + std::to_string(node) + " is no worker node";
  const auto& name = plan.nodes[static_cast<std::size_t>(node)].name;
  const auto own = ranks_on(plan, node);
  for (auto r : ranks)
    if (std::find(own.begin(), own.end(), r) == own.end())
      return "compute_" + std::to_string(r) + " is not one of " + name + "'s computes ("
             + rank_names(own) + ")";
  for (auto a : plan.actors_on(node))
    if (plan.actors[a].role == plan_role::machine_aggregator)
      return name + " holds its machine's aggregators (" + plan.actors[a].name
             + "), which sum its computes in process: they move only together";
  return "";
}

std::string rank_names(const std::vector<int>& ranks) {
  std::string text;
  for (auto r : ranks)
    text += (text.empty() ? "compute_" : ", compute_") + std::to_string(r);
  return text;
}

std::vector<std::vector<int>> slot_cpus(int slot, int threads, std::size_t computes,
                                        unsigned host_cpus) {
  std::vector<std::vector<int>> cpus;
  const auto per_compute = static_cast<std::size_t>(std::max(threads, 1));
  const auto first = static_cast<std::size_t>(std::max(slot, 0)) * computes * per_compute;
  if (slot < 0 || computes == 0 || first + computes * per_compute > host_cpus)
    return cpus;
  for (std::size_t c = 0; c < computes; ++c) {
    cpus.emplace_back();
    for (std::size_t t = 0; t < per_compute; ++t)
      cpus.back().push_back(static_cast<int>(first + c * per_compute + t));
  }
  return cpus;
}

std::string cpus_text(int first, int last) {
  return first == last ? "CPU " + std::to_string(first)
                       : "CPUs " + std::to_string(first) + "-" + std::to_string(last);
}

int compute_threads(const member_options& options, std::uint32_t scheduler_threads) {
  const int theirs = static_cast<int>(scheduler_threads);
  if (theirs > 0 && options.threads > 0 && theirs != options.threads)
    throw std::invalid_argument("this node was given " + std::to_string(options.threads)
                                + " compute threads (--threads or train.threads), the scheduler "
                                + std::to_string(theirs)
                                + ": give the count to the scheduler alone, or the same to "
                                  "every node");
  return theirs > 0 ? theirs : options.threads > 0 ? options.threads : options.default_threads;
}

std::int64_t backward_bytes(const channel_options& channel, double backward_s) {
  return static_cast<std::int64_t>(static_cast<double>(channel.pacing_bytes_per_second)
                                   * backward_s);
}

std::int64_t held_bytes(const channel_options& channel, double backward_s) {
  return backward_s > 0 ? backward_bytes(channel, backward_s) / 2
                        : std::numeric_limits<std::int64_t>::max();
}

channel_push_order push_order_of(const placement_plan& plan, const channel_options& channel,
                                 double backward_s, std::uint32_t server) {
  channel_push_order out;
  // A paced channel's pushes go in a fixed order where several workers push: first the last
  // layers its share carries while backward runs. Their first layers come at backward's end:
  // a wait that long is no lost push.
  if (!channel.priority || channel.pacing_bytes_per_second == 0 || !needs_fixed_push_order(plan))
    return out;
  const auto pushes = pushes_to_node(plan, channel.order, static_cast<int>(server));
  const auto held = held_bytes(channel, backward_s);
  out.sequence = fixed_push_order(pushes, backward_bytes(channel, backward_s), held);
  out.patience = std::max(channel.sequence_patience,
                          std::chrono::milliseconds(static_cast<std::int64_t>(2000 * backward_s)));
  if (!pushes.empty()) // the backward part: the sequence's pushes before its lowest rank
    out.late = static_cast<std::size_t>(
      std::find(out.sequence.begin(), out.sequence.end(), pushes.front().rank)
      - out.sequence.begin());
  out.held = held_pushes(pushes, held);
  out.sequenced = pushes.size();
  return out;
}

} // namespace troupe
