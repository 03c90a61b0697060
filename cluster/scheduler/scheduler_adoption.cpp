// Adopted workers (on_worker_loss = adopt): what the scheduler does when a worker process is
// lost during training of a bsp job.
//
// The coordinator drives each remote compute through a relay (compute_relay below) rather than
// the compute's proxy itself. A relay passes train, validate and end-epoch on to the proxy it
// points at; a phase that fails there with errc::peer_down (the worker's channel ended) is held,
// not answered, until the scheduler re-points the relay at the compute's new home, which is
// then asked the same phase with the same deadline. The coordinator never sees the loss.
//
// The scheduler picks the adopter among the workers still there: the one running the fewest
// computes (its own and those it adopted before), the lowest rank among equals, so the extra
// work lands where there is least. It sends that worker one adopt per plan node it takes over
// (the lost node, and whatever that node had adopted itself); the worker spawns the node's
// loaders and computes beside its own and says ready naming the node, and only then does the
// scheduler re-point the relays of that node's computes (at new proxies over the adopter's
// channel): a control frame sent earlier could reach the adopter before its computes are served.
//
// A second worker lost while an adoption is under way stops the run, naming both: the state
// of the first adoption (which computes the adopter spawned) is not known to the scheduler
// until the adopter's ready. A loss after the adoption completed is adopted in turn.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/member/member_placement.hpp"
#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

struct stalled_phase {
  bool validation = false;
  std::int64_t epoch = 0;
  deadline due;
  caf::typed_response_promise<phase_report> promise;
};

struct relay_state {
  compute_actor target;
  int rank = -1;
  std::shared_ptr<rank_times> times;  // null: not recorded
  std::vector<stalled_phase> stalled; // phases whose compute was lost, waiting for its new home
  static inline const char* name = "compute_relay";
};

using relay_pointer = compute_relay_actor::stateful_pointer<relay_state>;

void ask_target(relay_pointer self, stalled_phase phase) {
  auto to = self->state.target;
  auto handle = [=](auto atom) {
    self->request(to, phase.due.left_with_grace(), atom, phase.epoch, phase.due)
      .then(
        [=](phase_report& r) mutable {
          if (!phase.validation && self->state.times)
            self->state.times->record(self->state.rank, phase.epoch, r.step_seconds);
          phase.promise.deliver(std::move(r));
        },
        [=](caf::error& err) mutable {
          if (troupe_code(err) != errc::peer_down && err != caf::sec::request_receiver_down) {
            phase.promise.deliver(std::move(err));
            return;
          }
          if (self->state.target != to) { // re-pointed meanwhile: ask the new home now
            ask_target(self, phase);
            return;
          }
          self->state.stalled.push_back(phase);
        });
  };
  if (phase.validation)
    handle(validate_atom::value);
  else
    handle(train_atom::value);
}

compute_relay_actor::behavior_type compute_relay(relay_pointer self, compute_actor target, int rank,
                                                 std::shared_ptr<rank_times> times) {
  self->state.target = std::move(target);
  self->state.rank = rank;
  self->state.times = std::move(times);
  auto start = [=](bool validation, std::int64_t epoch, deadline due) {
    auto promise = self->make_response_promise<phase_report>();
    ask_target(self, stalled_phase{validation, epoch, due, promise});
    return promise;
  };
  return {
    [=](train_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      return start(false, epoch, due);
    },
    [=](validate_atom, std::int64_t epoch, deadline due) -> caf::result<phase_report> {
      return start(true, epoch, due);
    },
    [=](end_epoch_atom, std::int64_t epoch) {
      self->send(self->state.target, end_epoch_atom::value, epoch);
    },
    [=](repoint_atom, compute_actor& to) {
      auto& st = self->state;
      st.target = std::move(to);
      auto stalled = std::move(st.stalled);
      st.stalled.clear();
      for (auto& phase : stalled)
        ask_target(self, std::move(phase));
    },
  };
}

// The ranks of `node` that `m` runs (all of them when it gave none away): what an adopter of
// `m`'s node takes, and, where that is not all of them, the ranks an adopt names.
std::vector<int> ranks_of_node_run_by(const placement_plan& plan, const member_entry& m, int node) {
  std::vector<int> ranks;
  for (auto r : ranks_on(plan, node))
    if (std::find(m.given_ranks.begin(), m.given_ranks.end(), r) == m.given_ranks.end())
      ranks.push_back(r);
  return ranks;
}

std::vector<std::uint32_t> wire_ranks(const placement_plan& plan, int node,
                                      const std::vector<int>& ranks) {
  if (ranks == ranks_on(plan, node))
    return {}; // the whole node
  return {ranks.begin(), ranks.end()};
}

// What lost worker `lost` ran, node by node, each with the ranks of it that it ran; nodes it
// ran none of (all given away) left out.
std::vector<std::pair<int, std::vector<int>>>
pieces_of(const scheduler_state& st, const member_entry& lost, const std::vector<int>& nodes) {
  std::vector<std::pair<int, std::vector<int>>> pieces;
  for (auto node : nodes) {
    auto ranks = ranks_of_node_run_by(st.plan, lost, node);
    if (!ranks.empty())
      pieces.emplace_back(node, std::move(ranks));
  }
  return pieces;
}

// "compute_2, compute_3 of worker_1; compute_5 of worker_2".
std::string pieces_text(const std::vector<std::pair<int, std::vector<int>>>& pieces,
                        const placement_plan& plan) {
  std::string text;
  for (const auto& [node, ranks] : pieces)
    text += (text.empty() ? "" : "; ") + rank_names(ranks) + " of "
            + plan.nodes.at(static_cast<std::size_t>(node)).name;
  return text;
}

// A spare takes lost worker `lost`'s place: its node in an assignment (adopt: its computes
// recompute the step in flight), and what the lost one had adopted in adopt frames after it;
// the ranks that ran elsewhere still do.
std::string hand_to_spare(scheduler_actor self, member_entry& lost, member_entry& spare,
                          const std::vector<std::pair<int, std::vector<int>>>& pieces,
                          const std::string& what) {
  auto& st = self->state;
  std::vector<int> nodes;
  for (const auto& [node, ranks] : pieces)
    nodes.push_back(node);
  for (const auto& [node, ranks] : pieces)
    note_taking(st.plan, spare, node, ranks);
  spare.node = pieces.front().first;
  spare.rank = st.plan.nodes.at(static_cast<std::size_t>(spare.node)).rank;
  st.begin_move(lost.leaving ? "it left" : "the loss was seen");
  log_node_line(*st.options, "scheduler: " + what + "; " + spare.name() + " adopts "
                               + pieces_text(pieces, st.plan)
                               + " (a spare, idle until now; on_worker_loss = adopt)");
  record_member_event(st, "spare", spare,
                      {{{"lost_node", lost.node}}, {{"lost", node_names(st.plan, nodes)}}});
  auto a = assignment_for(st, spare, server_endpoints(st));
  a.adopt = true;
  a.ranks = wire_ranks(st.plan, pieces.front().first, pieces.front().second);
  caf::anon_send(spare.to, assignment_atom::value, std::move(a));
  for (std::size_t i = 1; i < pieces.size(); ++i)
    caf::anon_send(spare.to, adopt_atom::value,
                   adopt_message{static_cast<std::uint32_t>(pieces[i].first),
                                 wire_ranks(st.plan, pieces[i].first, pieces[i].second)});
  end_gathering_if_complete(self);
  return "";
}

} // namespace

bool runs_node(const member_entry& m, int node) {
  const auto nodes = nodes_run_by(m);
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

void add_ranks(std::vector<int>& to, const std::vector<int>& ranks) {
  for (auto r : ranks)
    if (std::find(to.begin(), to.end(), r) == to.end())
      to.push_back(r);
  std::sort(to.begin(), to.end());
}

void remove_ranks(std::vector<int>& from, const std::vector<int>& ranks) {
  from.erase(
    std::remove_if(from.begin(), from.end(),
                   [&](int r) { return std::find(ranks.begin(), ranks.end(), r) != ranks.end(); }),
    from.end());
}

// Worker `to` takes `ranks` of `node` in a move: it waits for its ready naming the node, and
// runs the node less what others run of it.
void note_taking(const placement_plan& plan, member_entry& to, int node,
                 const std::vector<int>& ranks) {
  if (runs_node(to, node)) { // it runs the rest of that node: it takes its own back
    remove_ranks(to.given_ranks, ranks);
  } else {
    auto others = ranks_on(plan, node);
    remove_ranks(others, ranks);
    add_ranks(to.given_ranks, others);
  }
  to.adopting.push_back(node);
  if (ranks != ranks_on(plan, node))
    to.adopting_ranks[node] = ranks;
}

std::string compute_names(const placement_plan& plan, const std::vector<int>& nodes) {
  std::string text;
  for (auto node : nodes)
    for (auto a : plan.actors_on(node))
      if (plan.actors[a].role == plan_role::compute)
        text += (text.empty() ? "" : ", ") + plan.actors[a].name;
  return text;
}

std::string node_names(const placement_plan& plan, const std::vector<int>& nodes) {
  std::string text;
  for (auto node : nodes)
    text += (text.empty() ? "" : ", ") + plan.nodes.at(static_cast<std::size_t>(node)).name;
  return text;
}

std::vector<int> nodes_run_by(const member_entry& m) {
  std::vector<int> nodes;
  auto add = [&](int node) {
    if (node >= 0 && std::find(nodes.begin(), nodes.end(), node) == nodes.end())
      nodes.push_back(node);
  };
  add(m.node);
  for (auto node : m.adopted_nodes)
    add(node);
  for (auto node : m.adopting)
    add(node);
  return nodes;
}

std::vector<int> ranks_run_by(const scheduler_state& st, const member_entry& m) {
  std::vector<int> ranks;
  for (auto node : nodes_run_by(m))
    add_ranks(ranks, ranks_of_node_run_by(st.plan, m, node));
  return ranks;
}

std::string unadoptable(const placement_plan& plan, const std::vector<int>& nodes) {
  for (auto node : nodes)
    if (auto why = unadoptable_node(plan, node); !why.empty())
      return why;
  return "";
}

compute_relay_actor spawn_compute_relay(caf::actor_system& system, compute_actor target, int rank,
                                        std::shared_ptr<rank_times> times) {
  return system.spawn(compute_relay, std::move(target), rank, std::move(times));
}

std::size_t computes_run_by(const scheduler_state& st, const member_entry& m) {
  return ranks_run_by(st, m).size();
}

const member_entry* choose_adopter(const scheduler_state& st) {
  const member_entry* best = nullptr;
  for (const auto& m : st.members) {
    if (m.role != node_kind::worker || m.gone || !m.ready || m.leaving)
      continue;
    if (!best || computes_run_by(st, m) < computes_run_by(st, *best)
        || (computes_run_by(st, m) == computes_run_by(st, *best) && m.rank < best->rank))
      best = &m;
  }
  return best;
}

std::string adopt_lost_worker(scheduler_actor self, member_entry& m, const std::string& what) {
  auto& st = self->state;
  if (m.role != node_kind::worker || !st.job.nodes.adopt_on_worker_loss
      || !st.phase.is<scheduler_phases::training>())
    return "stop";
  // Computes it was ceding to a joiner move there now, or when that joiner is ready (nothing of
  // them is in flight here any more but what the loss makes fail, which their relays hold).
  hand_ranks_to_joiner(self, m);
  auto nodes = nodes_run_by(m);
  m.ceding = -1;
  if (hand_to_joiners(self, nodes) && nodes.empty())
    return "";
  for (const auto& other : st.members)
    if (&other != &m && !other.adopting.empty() && !other.taking)
      return "it was lost while " + other.name() + " was adopting "
             + node_names(st.plan, other.adopting)
             + " (lost before it); a second loss during an adoption stops the run";
  if (auto why = unadoptable(st.plan, nodes); !why.empty())
    return why;
  const auto pieces = pieces_of(st, m, nodes);
  if (pieces.empty())
    return ""; // everything it ran runs elsewhere now
  if (auto spare =
        std::find_if(st.members.begin(), st.members.end(),
                     [](const member_entry& e) { return e.idle() && !e.gone && !e.leaving; });
      spare != st.members.end())
    return hand_to_spare(self, m, *spare, pieces, what);
  auto* chosen = const_cast<member_entry*>(choose_adopter(st));
  if (!chosen)
    return "no worker is left to adopt its computes";
  const auto load = computes_run_by(st, *chosen);
  for (const auto& [node, ranks] : pieces)
    note_taking(st.plan, *chosen, node, ranks);
  st.begin_move(m.leaving ? "it left" : "the loss was seen");
  log_node_line(*st.options, "scheduler: " + what + "; " + chosen->name() + " adopts "
                               + pieces_text(pieces, st.plan)
                               + " (the worker running the fewest computes, " + std::to_string(load)
                               + ", lowest rank among equals; on_worker_loss = adopt)");
  record_member_event(st, "adoption", *chosen, {{}, {{"lost", node_names(st.plan, nodes)}}});
  for (const auto& [node, ranks] : pieces)
    caf::anon_send(
      chosen->to, adopt_atom::value,
      adopt_message{static_cast<std::uint32_t>(node), wire_ranks(st.plan, node, ranks)});
  end_gathering_if_complete(self); // the lost one may have been the last to answer
  return "";
}

void repoint_computes(scheduler_actor self, const member_entry& m, int node,
                      const std::vector<int>& ranks) {
  auto& st = self->state;
  for (auto a : st.plan.actors_on(node)) {
    if (st.plan.actors[a].role != plan_role::compute)
      continue;
    if (!ranks.empty()
        && std::find(ranks.begin(), ranks.end(), st.plan.actors[a].rank) == ranks.end())
      continue;
    const auto relay = st.relays.find(a);
    if (relay == st.relays.end())
      continue;
    self->send(relay->second, repoint_atom::value,
               spawn_compute_proxy(self->system(), m.channel,
                                   static_cast<std::uint32_t>(st.plan.actors[a].rank)));
  }
}

bool on_adopted(scheduler_actor self, member_entry& m, const ready_message& ready) {
  auto& st = self->state;
  const auto node = static_cast<int>(ready.node);
  const auto at = std::find(m.adopting.begin(), m.adopting.end(), node);
  if (!st.phase.is<scheduler_phases::training>() || at == m.adopting.end())
    return false;
  m.adopting.erase(at);
  std::vector<int> ranks; // empty: the whole node
  if (auto partial = m.adopting_ranks.find(node); partial != m.adopting_ranks.end()) {
    ranks = partial->second;
    m.adopting_ranks.erase(partial);
  }
  if (node == m.node || m.node < 0) // (a spare's first is its own node now)
    m.ready = true;
  if (node != m.node
      && std::find(m.adopted_nodes.begin(), m.adopted_nodes.end(), node) == m.adopted_nodes.end())
    m.adopted_nodes.push_back(node);
  const auto& name = st.plan.nodes.at(static_cast<std::size_t>(node)).name;
  const auto seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - st.move_began).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.3f", seconds);
  if (ceding_member(st, node)) {
    // Taken from a live worker (a join): its computes run there until this epoch's training
    // ends, when no phase is in flight (complete_joins).
    log_node_line(
      *st.options,
      "scheduler: " + m.name() + " is ready to serve "
        + (ranks.empty() ? "the computes of " + name : rank_names(ranks) + " of " + name) + " ("
        + took + " s after " + st.move_cause + "); they move at the end of this epoch's training");
    st.joins_at_gate.push_back(node);
    return true;
  }
  repoint_computes(self, m, node, ranks);
  m.taking = false; // (a joiner whose giver was lost: its computes are adopted now)
  log_node_line(*st.options,
                "scheduler: " + m.name() + " serves "
                  + (ranks.empty() ? "the computes of " + name : rank_names(ranks) + " of " + name)
                  + " (" + took + " s after " + st.move_cause
                  + "); they recompute the step in flight and training goes on");
  record_member_event(st, "adopted", m,
                      {{{"lost_node", node}, {"seconds", seconds}}, {{"lost", name}}});
  return true;
}

} // namespace troupe
