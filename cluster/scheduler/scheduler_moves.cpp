// Workers that leave or join a run on purpose: what the scheduler does with a worker's leave
// (drain) and with a worker joining in training.
//
// A worker asked to end (its host got SIGTERM: a preempted machine, a node taken out of a
// Slurm or Kubernetes pool) asks the scheduler to let it go. Its computes then move to the
// other workers the way a lost worker's do (scheduler_adoption.cpp): the adopter spawns them,
// each recomputes the step in flight from the weights before it, and the aggregators take a
// rank's contribution to a step once. So the leave is granted exactly when the loss of this
// worker would be adopted (on_worker_loss = adopt, training, only loaders and computes on its
// nodes, no adoption under way, another worker or a spare to take them); then the worker ends,
// exit 0, and its end is adopted without counting as a fault. Otherwise the leave is refused
// with why and the worker trains on: a drain never ends the run.
//
// A leave's move starts once the worker has gone, not before: its computes are in the middle of an
// epoch's phase, which the coordinator asked of them through relays; that phase stalls when the
// worker's channel ends and is asked again of the adopted computes.
//
// A worker that joins a run in training is listed as a spare; where another worker runs a node
// it adopted (after a loss or a leave), the joiner takes that node back from the one running the
// most computes: it is assigned the node as a spare taking a lost worker's place is, and once it
// is ready to serve it the node moves at the next gate between epochs, where no phase is in
// flight: its relays point at the joiner and the other worker is told to cede it.
#include <algorithm>
#include <chrono>

#include <caf/all.hpp>

#include "cluster/member/member_placement.hpp"
#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

std::string drain_refusal(const scheduler_state& st, const member_entry& m) {
  if (m.role != node_kind::worker)
    return "only a worker leaves a run (a server's shards have no other home but a backup)";
  if (!st.phase.is<scheduler_phases::training>())
    return "the run is not training (a worker leaves during training only)";
  if (m.leaving)
    return "it is leaving already";
  if (m.idle())
    return ""; // it holds nothing
  if (!st.job.nodes.adopt_on_worker_loss)
    return std::string("its computes move to other workers only under on_worker_loss = adopt, ")
           + "and this run's is " + (st.job.nodes.continue_on_worker_loss ? "continue" : "stop");
  for (const auto& other : st.members)
    if (!other.adopting.empty())
      return other.name() + " is adopting " + node_names(st.plan, other.adopting)
             + "; one move at a time";
  if (auto why = unadoptable(st.plan, nodes_run_by(m)); !why.empty())
    return why;
  for (const auto& other : st.members)
    if (&other != &m && other.role == node_kind::worker && !other.gone && !other.leaving
        && (other.ready || other.idle()))
      return "";
  return "no other worker is left to take its computes";
}

namespace {

// The member running `node` as its own, ready (a joiner once it can serve it); null if none.
member_entry* ready_holder(scheduler_state& st, int node) {
  for (auto& m : st.members)
    if (m.node == node && !m.gone && m.ready)
      return &m;
  return nullptr;
}

// The joiner of the move under way (one at a time), if any.
member_entry* taker_of_move(scheduler_state& st) {
  for (auto& m : st.members)
    if (m.taking && !m.gone)
      return &m;
  return nullptr;
}

// The ranks a joiner takes from `busiest` (running `load` computes): half its load, from the
// last of its own node's, where that node's ranks run apart (no machine's aggregators sum them)
// and it keeps one at least; none otherwise.
std::vector<int> ranks_to_take(const scheduler_state& st, const member_entry& busiest,
                               std::size_t load) {
  if (busiest.node < 0)
    return {};
  auto own = ranks_on(st.plan, busiest.node);
  if (!split_refusal(st.plan, busiest.node, own).empty())
    return {};
  remove_ranks(own, busiest.given_ranks);
  const auto count = std::min(load / 2, own.size() > 0 ? own.size() - 1 : 0);
  return {own.end() - static_cast<std::ptrdiff_t>(count), own.end()};
}

// A joiner takes ranks of the busiest worker's own node (no node is an adopted one to take
// back): assigned those ranks of that node, its computes recompute the step in flight, and
// once it serves them they move at the next gate between epochs.
void take_ranks_for_joiner(scheduler_actor self, member_entry& joiner) {
  auto& st = self->state;
  member_entry* busiest = nullptr;
  for (auto& other : st.members)
    if (other.role == node_kind::worker && !other.gone && other.ready && !other.leaving
        && other.node >= 0
        && (!busiest || computes_run_by(st, other) > computes_run_by(st, *busiest)))
      busiest = &other;
  if (!busiest)
    return;
  const auto load = computes_run_by(st, *busiest);
  const auto ranks = ranks_to_take(st, *busiest, load);
  if (ranks.empty()) {
    log_node_line(*st.options, "scheduler: " + joiner.name() + " stays a spare: " + busiest->name()
                                 + ", the worker running the most computes (" + std::to_string(load)
                                 + "), has none to give");
    return;
  }
  const int node = busiest->node;
  joiner.begin_taking();
  note_taking(st.plan, joiner, node, ranks);
  busiest->ceding = node;
  busiest->ceding_ranks = ranks;
  st.begin_move("it joined");
  log_node_line(*st.options, "scheduler: " + joiner.name() + " takes " + rank_names(ranks) + " of "
                               + node_names(st.plan, {node}) + " from " + busiest->name()
                               + " (the worker running the most computes, " + std::to_string(load)
                               + "); they recompute the step in flight there");
  record_member_event(st, "move", joiner,
                      {{{"moved_node", node}, {"computes", static_cast<double>(ranks.size())}},
                       {{"from", busiest->name()}, {"moved", rank_names(ranks)}}});
  auto a = assignment_for(st, joiner, server_endpoints(st));
  a.node = static_cast<std::uint32_t>(node);
  a.rank = static_cast<std::uint32_t>(busiest->rank);
  a.adopt = true;
  a.ranks.assign(ranks.begin(), ranks.end());
  caf::anon_send(joiner.to, assignment_atom::value, std::move(a));
}

// At the gate: the ranks `giver` cedes move to the joiner ready to serve them.
void complete_rank_move(scheduler_actor self, member_entry& giver, std::int64_t epoch) {
  auto& st = self->state;
  const auto node = giver.ceding;
  const auto ranks = giver.ceding_ranks;
  giver.ceding = -1;
  giver.ceding_ranks.clear();
  auto* taker = taker_of_move(st);
  if (!taker || !taker->ready)
    return; // the joiner was lost meanwhile: the ranks stay where they run
  taker->taking = false;
  add_ranks(giver.given_ranks, ranks);
  repoint_computes(self, *taker, node, ranks);
  st.moved_at_gate = epoch;
  log_node_line(*st.options, "scheduler: " + rank_names(ranks) + " of "
                               + node_names(st.plan, {node}) + " moved from " + giver.name()
                               + " to " + taker->name() + " at the end of epoch "
                               + std::to_string(epoch) + "'s training");
  record_member_event(st, "moved", *taker,
                      {{{"moved_node", node}, {"epoch", static_cast<double>(epoch)}},
                       {{"from", giver.name()}, {"moved", rank_names(ranks)}}});
  if (!giver.gone)
    caf::anon_send(giver.to, cede_atom::value,
                   cede_message{static_cast<std::uint32_t>(node), {ranks.begin(), ranks.end()}});
}

} // namespace

member_entry* ceding_member(scheduler_state& st, int node) {
  for (auto& m : st.members)
    if (m.ceding == node)
      return &m;
  return nullptr;
}

void on_leave(scheduler_actor self, member_entry& m, const leave_message& leave) {
  auto& st = self->state;
  const auto asked = "scheduler: " + m.name() + " asks to leave (" + leave.reason + ")";
  if (auto why = drain_refusal(st, m); !why.empty()) {
    log_node_line(*st.options, asked + "; refused: " + why + "; it trains on");
    record_member_event(st, "leave refused", m, {{}, {{"reason", why}}});
    caf::anon_send(m.to, release_atom::value, release_message{false, why});
    return;
  }
  m.leaving = true;
  m.leave_reason = leave.reason;
  const auto computes = rank_names(ranks_run_by(st, m));
  log_node_line(*st.options,
                asked + "; granted: "
                  + (computes.empty() ? std::string("it holds nothing")
                                      : computes + " move to another worker once it has gone"));
  record_member_event(st, "leave granted", m, {{}, {{"reason", leave.reason}}});
  caf::anon_send(m.to, release_atom::value, release_message{true, ""});
}

std::string left_text(const member_entry& m) {
  return m.name() + " left at " + clock_time_now() + " (drained: " + m.leave_reason + ")";
}

void take_for_joiner(scheduler_actor self, member_entry& joiner) {
  auto& st = self->state;
  if (!st.job.nodes.adopt_on_worker_loss)
    return;
  for (const auto& other : st.members)
    if (!other.adopting.empty() || other.ceding >= 0)
      return; // one move at a time: it stays a spare
  member_entry* busiest = nullptr;
  for (auto& other : st.members)
    if (other.role == node_kind::worker && !other.gone && other.ready && !other.leaving
        && !other.adopted_nodes.empty()
        && (!busiest || computes_run_by(st, other) > computes_run_by(st, *busiest)))
      busiest = &other;
  if (!busiest)
    return take_ranks_for_joiner(self, joiner); // every worker node has a process of its own
  const int node = busiest->adopted_nodes.back();
  const auto load = computes_run_by(st, *busiest);
  joiner.begin_taking();
  joiner.node = node;
  joiner.rank = st.plan.nodes.at(static_cast<std::size_t>(node)).rank;
  joiner.adopting = {node};
  busiest->ceding = node;
  st.begin_move("it joined");
  log_node_line(*st.options, "scheduler: " + joiner.name() + " takes "
                               + compute_names(st.plan, {node}) + " of "
                               + node_names(st.plan, {node}) + " from " + busiest->name()
                               + " (the worker running the most computes, " + std::to_string(load)
                               + "); they recompute the step in flight there");
  record_member_event(
    st, "move", joiner,
    {{{"moved_node", node}}, {{"from", busiest->name()}, {"moved", node_names(st.plan, {node})}}});
  auto a = assignment_for(st, joiner, server_endpoints(st));
  a.adopt = true;
  caf::anon_send(joiner.to, assignment_atom::value, std::move(a));
}

void complete_joins(scheduler_actor self, std::int64_t epoch) {
  auto& st = self->state;
  auto nodes = std::move(st.joins_at_gate);
  st.joins_at_gate.clear();
  for (auto node : nodes) {
    auto* taker = ready_holder(st, node);
    auto* giver = ceding_member(st, node);
    if (!giver)
      continue; // lost meanwhile: its loss moved the node already
    if (!giver->ceding_ranks.empty()) {
      complete_rank_move(self, *giver, epoch);
      continue;
    }
    giver->ceding = -1;
    if (taker)
      taker->taking = false;
    if (!taker)
      continue; // the joiner was lost meanwhile: the node stays where it runs
    giver->adopted_nodes.erase(
      std::remove(giver->adopted_nodes.begin(), giver->adopted_nodes.end(), node),
      giver->adopted_nodes.end());
    repoint_computes(self, *taker, node);
    log_node_line(*st.options, "scheduler: " + compute_names(st.plan, {node}) + " of "
                                 + node_names(st.plan, {node}) + " moved from " + giver->name()
                                 + " to " + taker->name() + " at the end of epoch "
                                 + std::to_string(epoch) + "'s training");
    record_member_event(st, "moved", *taker,
                        {{{"moved_node", node}, {"epoch", static_cast<double>(epoch)}},
                         {{"from", giver->name()}, {"moved", node_names(st.plan, {node})}}});
    if (!giver->gone)
      caf::anon_send(giver->to, cede_atom::value,
                     cede_message{static_cast<std::uint32_t>(node), {}});
  }
}

bool hand_to_joiners(scheduler_actor self, std::vector<int>& nodes) {
  auto& st = self->state;
  bool any = false;
  for (auto n = nodes.begin(); n != nodes.end();) {
    const auto waiting = std::find(st.joins_at_gate.begin(), st.joins_at_gate.end(), *n);
    auto* taker = ready_holder(st, *n);
    if (waiting == st.joins_at_gate.end() || !taker) {
      ++n;
      continue;
    }
    st.joins_at_gate.erase(waiting);
    repoint_computes(self, *taker, *n);
    log_node_line(*st.options, "scheduler: " + compute_names(st.plan, {*n}) + " of "
                                 + node_names(st.plan, {*n}) + " moved to " + taker->name()
                                 + ", which joined to take them, at once");
    n = nodes.erase(n);
    any = true;
  }
  return any;
}

void forget_join(scheduler_state& st, member_entry& joiner) {
  if (!joiner.taking)
    return;
  member_entry* giver = nullptr; // one move at a time: the one ceding
  for (auto& m : st.members)
    if (&m != &joiner && m.ceding >= 0)
      giver = &m;
  if (!giver)
    return; // its giver was lost first: what it took is its own now, and its loss adopts it
  const auto node = giver->ceding;
  const auto ranks = giver->ceding_ranks;
  giver->ceding = -1;
  giver->ceding_ranks.clear();
  st.joins_at_gate.erase(std::remove(st.joins_at_gate.begin(), st.joins_at_gate.end(), node),
                         st.joins_at_gate.end());
  joiner.undo_taking(); // it runs what it ran before (a joiner: nothing)
  log_node_line(*st.options,
                "scheduler: " + joiner.name() + " was lost before "
                  + (ranks.empty() ? node_names(st.plan, {node})
                                   : rank_names(ranks) + " of " + node_names(st.plan, {node}))
                  + " moved to it; " + giver->name() + " keeps running "
                  + (ranks.size() > 1 ? "them" : "it"));
}

void hand_ranks_to_joiner(scheduler_actor self, member_entry& giver) {
  auto& st = self->state;
  if (giver.ceding_ranks.empty())
    return;
  const auto node = giver.ceding;
  const auto ranks = giver.ceding_ranks;
  giver.ceding = -1;
  giver.ceding_ranks.clear();
  add_ranks(giver.given_ranks, ranks); // its loss leaves them to the joiner
  auto* taker = taker_of_move(st);
  if (!taker)
    return;
  const auto waiting = std::find(st.joins_at_gate.begin(), st.joins_at_gate.end(), node);
  if (waiting == st.joins_at_gate.end() || !taker->ready)
    return; // it serves them once it is ready (on_adopted: no one cedes them now)
  st.joins_at_gate.erase(waiting);
  taker->taking = false;
  repoint_computes(self, *taker, node, ranks);
  log_node_line(*st.options, "scheduler: " + rank_names(ranks) + " of "
                               + node_names(st.plan, {node}) + " moved to " + taker->name()
                               + ", which joined to take them, at once");
}

} // namespace troupe
