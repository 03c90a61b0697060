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
  std::vector<stalled_phase> stalled; // phases whose compute was lost, waiting for its new home
  static inline const char* name = "compute_relay";
};

using relay_pointer = compute_relay_actor::stateful_pointer<relay_state>;

void ask_target(relay_pointer self, stalled_phase phase) {
  auto to = self->state.target;
  auto handle = [=](auto atom) {
    self->request(to, phase.due.left_with_grace(), atom, phase.epoch, phase.due)
      .then([=](phase_report& r) mutable { phase.promise.deliver(std::move(r)); },
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

compute_relay_actor::behavior_type compute_relay(relay_pointer self, compute_actor target) {
  self->state.target = std::move(target);
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

// A spare takes lost worker `lost`'s place: its node in an assignment (adopt: its computes
// recompute the step in flight), and what the lost one had adopted in adopt frames after it.
std::string hand_to_spare(scheduler_actor self, member_entry& lost, member_entry& spare,
                          const std::vector<int>& nodes, const std::string& what) {
  auto& st = self->state;
  spare.node = lost.node;
  spare.rank = lost.rank;
  spare.adopting = nodes;
  st.begin_move(lost.leaving ? "it left" : "the loss was seen");
  log_node_line(*st.options, "scheduler: " + what + "; " + spare.name() + " adopts "
                               + compute_names(st.plan, nodes) + " of " + node_names(st.plan, nodes)
                               + " (a spare, idle until now; on_worker_loss = adopt)");
  record_member_event(st, "spare", spare,
                      {{{"lost_node", lost.node}}, {{"lost", node_names(st.plan, nodes)}}});
  auto a = assignment_for(st, spare, server_endpoints(st));
  a.adopt = true;
  caf::anon_send(spare.to, assignment_atom::value, std::move(a));
  for (std::size_t i = 1; i < nodes.size(); ++i)
    caf::anon_send(spare.to, adopt_atom::value,
                   adopt_message{static_cast<std::uint32_t>(nodes[i])});
  end_gathering_if_complete(self);
  return "";
}

} // namespace

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
  std::vector<int> nodes{m.node};
  nodes.insert(nodes.end(), m.adopted_nodes.begin(), m.adopted_nodes.end());
  nodes.insert(nodes.end(), m.adopting.begin(), m.adopting.end());
  return nodes;
}

std::string unadoptable(const placement_plan& plan, const std::vector<int>& nodes) {
  for (auto node : nodes)
    if (auto why = unadoptable_node(plan, node); !why.empty())
      return why;
  return "";
}

compute_relay_actor spawn_compute_relay(caf::actor_system& system, compute_actor target) {
  return system.spawn(compute_relay, std::move(target));
}

std::size_t computes_run_by(const scheduler_state& st, const member_entry& m) {
  auto n = computes_on(st.plan, m.node);
  for (auto node : m.adopted_nodes)
    n += computes_on(st.plan, node);
  for (auto node : m.adopting)
    n += computes_on(st.plan, node);
  return n;
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
  auto nodes = nodes_run_by(m);
  // A node a joiner is ready to take from it moves there now (nothing of it is in flight here
  // any more but what the loss makes fail, which its relays hold).
  m.ceding = -1;
  if (hand_to_joiners(self, nodes) && nodes.empty())
    return "";
  for (const auto& other : st.members)
    if (&other != &m && !other.adopting.empty())
      return "it was lost while " + other.name() + " was adopting "
             + node_names(st.plan, other.adopting)
             + " (lost before it); a second loss during an adoption stops the run";
  if (auto why = unadoptable(st.plan, nodes); !why.empty())
    return why;
  if (auto spare = std::find_if(
        st.members.begin(), st.members.end(),
        [](const member_entry& e) { return e.spare && e.node < 0 && !e.gone && !e.leaving; });
      spare != st.members.end())
    return hand_to_spare(self, m, *spare, nodes, what);
  auto* chosen = const_cast<member_entry*>(choose_adopter(st));
  if (!chosen)
    return "no worker is left to adopt its computes";
  const auto load = computes_run_by(st, *chosen);
  chosen->adopting.insert(chosen->adopting.end(), nodes.begin(), nodes.end());
  st.begin_move(m.leaving ? "it left" : "the loss was seen");
  log_node_line(*st.options, "scheduler: " + what + "; " + chosen->name() + " adopts "
                               + compute_names(st.plan, nodes) + " of " + node_names(st.plan, nodes)
                               + " (the worker running the fewest computes, " + std::to_string(load)
                               + ", lowest rank among equals; on_worker_loss = adopt)");
  record_member_event(st, "adoption", *chosen, {{}, {{"lost", node_names(st.plan, nodes)}}});
  for (auto node : nodes)
    caf::anon_send(chosen->to, adopt_atom::value, adopt_message{static_cast<std::uint32_t>(node)});
  end_gathering_if_complete(self); // the lost one may have been the last to answer
  return "";
}

void repoint_computes(scheduler_actor self, const member_entry& m, int node) {
  auto& st = self->state;
  for (auto a : st.plan.actors_on(node)) {
    if (st.plan.actors[a].role != plan_role::compute)
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
  if (node != m.node) // (a spare's first is its own node now)
    m.adopted_nodes.push_back(node);
  else
    m.ready = true;
  const auto& name = st.plan.nodes.at(static_cast<std::size_t>(node)).name;
  const auto seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - st.move_began).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.3f", seconds);
  if (ceding_member(st, node)) {
    // Taken from a live worker (a join): its computes run there until this epoch's training
    // ends, when no phase is in flight (complete_joins).
    log_node_line(*st.options, "scheduler: " + m.name() + " is ready to serve the computes of "
                                 + name + " (" + took + " s after " + st.move_cause
                                 + "); they move at the end of this epoch's training");
    st.joins_at_gate.push_back(node);
    return true;
  }
  repoint_computes(self, m, node);
  log_node_line(*st.options, "scheduler: " + m.name() + " serves the computes of " + name + " ("
                               + took + " s after " + st.move_cause
                               + "); they recompute the step in flight and training goes on");
  record_member_event(st, "adopted", m,
                      {{{"lost_node", node}, {"seconds", seconds}}, {{"lost", name}}});
  return true;
}

} // namespace troupe
