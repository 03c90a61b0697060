// cluster { balance = auto }: at the gate after an epoch's training, the scheduler weighs each
// worker process's time per compute rank (the seconds of training its ranks' relays saw that
// epoch) and, where another placement would end a bsp step sooner (balance_plan.hpp), moves
// ranks from the process furthest above its balanced count to the one furthest below, as a
// joiner takes them: the taker is told to adopt those ranks (they recompute from the step in
// flight once asked), and once it is ready they move at the next gate, the giver ceding them.
// One move at a time; none while another move or an adoption is under way, and none that could
// not end before the run does.
#include <algorithm>
#include <cstdio>
#include <map>

#include <caf/all.hpp>

#include "cluster/member/member_placement.hpp"
#include "cluster/scheduler/balance_plan.hpp"
#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

// The ranks of the node `giver` runs most of that can run apart, the last `count` of them.
std::pair<int, std::vector<int>> ranks_to_give(const scheduler_state& st, const member_entry& giver,
                                               std::size_t count) {
  std::map<int, std::vector<int>> by_node;
  for (auto r : ranks_run_by(st, giver))
    for (auto node : nodes_run_by(giver)) {
      const auto on = ranks_on(st.plan, node);
      if (std::find(on.begin(), on.end(), r) != on.end()
          && split_refusal(st.plan, node, on).empty())
        by_node[node].push_back(r);
    }
  int best = -1;
  for (const auto& [node, ranks] : by_node)
    if (best < 0 || ranks.size() > by_node.at(best).size())
      best = node;
  if (best < 0)
    return {-1, {}};
  auto ranks = by_node.at(best);
  count = std::min(count, ranks.size());
  return {best, {ranks.end() - static_cast<std::ptrdiff_t>(count), ranks.end()}};
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", s);
  return text;
}

} // namespace

void balance_at_gate(scheduler_actor self, std::int64_t epoch) {
  auto& st = self->state;
  const bool asked = st.balance_asked; // by troupe ctl: said either way
  st.balance_asked = false;
  if ((!st.options->balance && !asked) || !st.job.nodes.adopt_on_worker_loss
      || !st.phase.is<scheduler_phases::training>())
    return;
  auto no_move = [&](const std::string& why) {
    if (asked)
      log_node_line(*st.options, "scheduler: balance asked by troupe ctl, after epoch "
                                   + std::to_string(epoch) + "'s training: no move (" + why + ")");
  };
  // A move begun now completes at the next gate and serves from the epoch after it.
  if (epoch + 2 >= st.job.epochs)
    return no_move("it would end after the run's last epoch");
  if (st.moved_at_gate == epoch)
    return no_move("a move ended here: this epoch's times are of the placement before it");
  for (const auto& m : st.members)
    if (!m.gone && (!m.adopting.empty() || m.ceding >= 0 || m.taking))
      return no_move("another move or an adoption is under way"); // one at a time
  std::vector<member_entry*> workers;
  std::vector<balanced_process> processes;
  for (auto& m : st.members) {
    if (m.role != node_kind::worker || m.gone || m.leaving || !m.ready)
      continue;
    balanced_process p;
    p.ranks = ranks_run_by(st, m);
    if (p.ranks.empty())
      continue;
    double sum = 0;
    for (auto r : p.ranks) {
      const auto seconds = st.times->of(r, epoch);
      if (!seconds) // (one moved or was adopted in it)
        return no_move("compute_" + std::to_string(r) + "'s time in this epoch is not known");
      sum += *seconds;
    }
    p.seconds_per_rank = sum / static_cast<double>(p.ranks.size());
    workers.push_back(&m);
    processes.push_back(std::move(p));
  }
  const auto move = next_balance_move(processes, 0.05);
  if (!move)
    return no_move("no placement would shorten an epoch's training by 5 % or more");
  auto& giver = *workers[move->from];
  auto& taker = *workers[move->to];
  const auto [node, ranks] = ranks_to_give(st, giver, move->count);
  if (ranks.empty())
    return no_move(giver.name() + " runs no ranks that can run apart");
  taker.begin_taking();
  note_taking(st.plan, taker, node, ranks);
  giver.ceding = node;
  giver.ceding_ranks = ranks;
  st.begin_move("balance asked");
  std::string weighed;
  for (std::size_t p = 0; p < workers.size(); ++p)
    weighed += (weighed.empty() ? "" : ", ") + workers[p]->name() + " "
               + seconds_text(processes[p].seconds_per_rank) + " per rank ("
               + std::to_string(processes[p].ranks.size()) + " ranks)";
  log_node_line(*st.options,
                std::string("scheduler: balance") + (asked ? " (asked by troupe ctl)" : "")
                  + " after epoch " + std::to_string(epoch) + "'s training, which took " + weighed
                  + "; " + taker.name() + " takes " + rank_names(ranks) + " of "
                  + node_names(st.plan, {node}) + " from " + giver.name() + " (an epoch's "
                  + seconds_text(move->step_before) + " of training becomes "
                  + seconds_text(move->step_after) + ", as estimated)");
  record_member_event(st, "balance", taker,
                      {{{"moved_node", node},
                        {"computes", static_cast<double>(ranks.size())},
                        {"step_before_s", move->step_before},
                        {"step_after_s", move->step_after}},
                       {{"from", giver.name()}, {"moved", rank_names(ranks)}}});
  caf::anon_send(taker.to, adopt_atom::value,
                 adopt_message{static_cast<std::uint32_t>(node), {ranks.begin(), ranks.end()}});
}

} // namespace troupe
