// How the scheduler reads each epoch's traffic at the epoch's true end: the coordinator
// waits for its metrics sink (settle_epochs) after each epoch's training, and the sink is the
// scheduler, which holds that report (and whatever follows it, in order) until every member
// has answered a traffic query or the request timeout has passed. Then the epoch's bytes per
// node, kind and peer go to the metrics actor ahead of the held reports.
#include <algorithm>

#include "scheduler_state.hpp"

namespace troupe {

void pass_on(scheduler_actor self, std::function<void()> forward) {
  auto& st = self->state;
  if (st.holding)
    st.held.push_back(std::move(forward));
  else
    forward();
}

void release_traffic(scheduler_actor self) {
  auto& st = self->state;
  if (!st.holding)
    return;
  st.holding = false;
  for (const auto& [node, peers] : st.traffic_answers)
    st.traffic_table.add(st.plan.nodes.at(static_cast<std::size_t>(node)).name, peers);
  std::vector<peer_traffic> mine;
  for (auto& entry : st.traffic->snapshot()) {
    if (auto* m = member_of(st, entry.link))
      entry.traffic.peer = st.plan.nodes.at(static_cast<std::size_t>(m->node)).name;
    mine.push_back(std::move(entry.traffic));
  }
  st.traffic_table.add("scheduler", mine);
  auto figures = st.traffic_table.take(st.holding_epoch);
  self->send(st.metrics, annotate_atom::value, st.holding_epoch, std::string("traffic"), figures.json, figures.line);
  auto held = std::move(st.held);
  st.held.clear();
  for (auto& forward : held)
    forward();
}

void on_phase_report(scheduler_actor self, const phase_report& r) {
  auto& st = self->state;
  st.after_training_report = !r.validation;
  auto forward = [=] { self->send(self->state.metrics, r); };
  if (st.holding || r.validation || st.at != scheduler_phase::training || live_members(st) == 0)
    return pass_on(self, forward);
  st.holding = true;
  st.holding_epoch = r.epoch;
  st.held.push_back(forward);
  st.traffic_answers.clear();
  for (auto& m : st.members)
    if (!m.gone)
      caf::anon_send(m.link, send_atom::value, wire_message{traffic_query_message{r.epoch}});
  self->delayed_send(self, st.options->request_timeout, traffic_due_atom::value, r.epoch);
}

void on_traffic(scheduler_actor self, const channel_actor& link, const traffic_message& t) {
  auto& st = self->state;
  auto* m = member_of(st, link.address());
  if (!m || !st.holding || t.epoch != st.holding_epoch)
    return;  // late (after its deadline): that epoch's figures went without it
  st.traffic_answers[m->node] = t.peers;
  if (static_cast<int>(st.traffic_answers.size()) >= live_members(st))
    release_traffic(self);
}

} // namespace troupe
