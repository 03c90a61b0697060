// Workers that leave a run on purpose (drain): what the scheduler does with a worker's leave.
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
// The move starts once the worker has gone, not before: its computes are in the middle of an
// epoch's phase, which the coordinator asked of them through relays; that phase stalls when the
// worker's channel ends and is asked again of the adopted computes.
#include <caf/all.hpp>

#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

// Why worker `m` may not leave now ("" if it may).
std::string drain_refusal(const scheduler_state& st, const member_entry& m) {
  if (m.role != node_kind::worker)
    return "only a worker leaves a run (a server's shards have no other home but a backup)";
  if (!st.phase.is<scheduler_phases::training>())
    return "the run is not training (a worker leaves during training only)";
  if (m.leaving)
    return "it is leaving already";
  if (m.spare && m.node < 0)
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
        && (other.ready || (other.spare && other.node < 0)))
      return "";
  return "no other worker is left to take its computes";
}

} // namespace

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
  const auto computes = m.node < 0 ? std::string() : compute_names(st.plan, nodes_run_by(m));
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

} // namespace troupe
