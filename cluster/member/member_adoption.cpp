// A worker told to adopt a lost worker node (on_worker_loss = adopt; member_state.hpp) spawns
// that node's loaders and computes beside its own part, with the same proxies for the servers
// and the scheduler's metrics, its computes adopted (compute_wiring::adopted: they recompute
// from the step in flight), serves them on its scheduler channel and says ready naming that node.
#include <algorithm>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/node_part.hpp>

#include "cluster/member/member_placement.hpp"
#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

std::vector<int> ranks_here(const member_state& st, int node) {
  std::vector<int> ranks;
  auto add = [&](const node_part& part) {
    for (const auto& [rank, compute] : part.computes)
      ranks.push_back(rank);
  };
  if (node == st.part_node)
    add(st.part);
  auto part = st.adopted.begin();
  for (auto n : st.adopted_nodes) {
    if (n == node)
      add(*part);
    ++part;
  }
  return ranks;
}

namespace {

// Why this worker cannot adopt `ranks` of plan node `node` (empty: all of them; "" if it can):
// a worker node of the plan, none of those ranks running here already, holding loaders,
// computes and its machine's aggregators (hierarchical, local_sync) only, split only where no
// machine's aggregators sum its ranks.
std::string adoption_refused(const member_state& st, std::uint32_t node,
                             const std::vector<int>& ranks) {
  if (st.options->role != node_kind::worker || !st.phase.is<member_phases::running>() || !st.job)
    return "this node is no running worker";
  if (node >= st.plan.nodes.size() || st.plan.nodes[node].kind != node_kind::worker)
    return "plan node " + std::to_string(node) + " is no worker node";
  if (auto why = split_refusal(st.plan, static_cast<int>(node), ranks); !why.empty())
    return why;
  const auto here = ranks_here(st, static_cast<int>(node));
  for (auto r : ranks.empty() ? ranks_on(st.plan, static_cast<int>(node)) : ranks)
    if (std::find(here.begin(), here.end(), r) != here.end())
      return (ranks.empty() ? st.plan.nodes[node].name : "compute_" + std::to_string(r))
             + " runs here already";
  return unadoptable_node(st.plan, static_cast<int>(node));
}

} // namespace

// The scheduler's adopt: spawns the lost node's loaders and computes here, serves the computes
// on the scheduler channel, and says ready naming that node.
void on_adopt(member_actor self, const adopt_message& a) {
  auto& st = self->state;
  const std::vector<int> ranks(a.ranks.begin(), a.ranks.end());
  if (auto why = adoption_refused(st, a.node, ranks); !why.empty())
    return fail(self, errc::bad_request, "cannot adopt as the scheduler asked: " + why);
  const auto lost = static_cast<int>(a.node);
  auto options = st.part_options;
  options.node = lost;
  options.ranks = ranks;
  options.adopted = true;
  options.compute_cpus.clear(); // its computes share this node's CPUs
  options.on_wired = nullptr;
  options.on_rewound = rewound_logger(*st.options, st.label, st.plan.steps_per_epoch);
  auto& part = st.adopted.emplace_back();
  try {
    spawn_node_part(self->system(), *st.job, st.plan, st.spec, {}, st.data, options, part);
  } catch (const std::exception& e) {
    return fail(self, classify_exception(e),
                "cannot adopt " + st.plan.nodes[a.node].name + ": " + e.what());
  }
  st.adopted_nodes.push_back(lost);
  for (auto& [actor, name] : part.spawned)
    self->monitor(actor);
  std::string computes;
  for (const auto& [rank, compute] : part.computes) {
    st.serving->set<remote_interface::compute_driver>(static_cast<std::uint32_t>(rank), compute);
    computes += (computes.empty() ? "compute_" : ", compute_") + std::to_string(rank);
  }
  bool summed_here = false; // a machine's aggregators (hierarchical, local_sync) came along
  for (auto i : st.plan.actors_on(lost))
    summed_here = summed_here || st.plan.actors[i].role == plan_role::machine_aggregator;
  const auto& name = st.plan.nodes[a.node].name;
  log_node_line(
    *st.options,
    st.label + ": adopted "
      + (ranks.empty() ? name + " (" + computes + ", " : computes + " of " + name + " (")
      + "with their loaders"
      + (summed_here && ranks.empty() ? " and their machine's aggregators" : "") + ") at "
      + clock_time_now() + "; they recompute from the step in flight");
  record_event(st.options->events, "adopted",
               {{{"lost_node", a.node}}, {{"lost", st.plan.nodes[a.node].name}}});
  caf::anon_send(st.to_scheduler, ready_atom::value,
                 ready_message{a.node, 0, static_cast<std::uint32_t>(st.threads)});
}

} // namespace troupe
