// How the scheduler reads each epoch's traffic at the epoch's true end. It is its session's
// gate between epochs (coordinator_options::between_epochs): after an epoch's training the
// coordinator asks it (epoch_done_atom, e, due) and waits, so no step runs while the members
// answer a traffic query each. Once every member still there has answered, or at the
// earlier of the coordinator's deadline and the request timeout, the epoch's bytes per node,
// kind and peer go to the metrics actor (annotate_atom) and the coordinator gets its answer;
// only then does it record epoch e's training report, so e's metrics line carries e's
// traffic. Reports never pass through the scheduler: the metrics actor gets them directly.
// One question is open at a time: a new one first answers the open one with what came, and
// each has its own deadline. Only answers to the open question count; any other (late, for
// another epoch, from a node not asked) is dropped and logged. A run that ends answers the
// open question with its failure and lets no later one pass, so the coordinator starts no
// phase on a run that is ending.
#include <algorithm>

#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

// (A member not asked, a spare without a node, is no answer missing.)
bool answered(const traffic_gathering& g, const member_entry& m) {
  return m.node < 0 || g.asked.count(m.node) == 0 || g.answers.count(m.node) > 0;
}

// Why no epoch passes once the run is ending: the failure it ends with, when there is one.
caf::error run_is_ending(scheduler_actor self) {
  auto& st = self->state;
  const caf::error* why = nullptr;
  if (const auto* ending = st.phase.as<scheduler_phases::ending>(); ending && !ending->outcome)
    why = &ending->outcome.error();
  if (const auto* failing = st.phase.as<scheduler_phases::failing>())
    why = &failing->unexplained;
  if (!why)
    return make_error(errc::bad_request, "scheduler: the run is ending: it finished");
  return make_error(troupe_code(*why),
                    "scheduler: the run is ending: " + reason_text(self->system(), *why));
}

} // namespace

caf::result<after_gate> on_epoch_done(scheduler_actor self, std::int64_t epoch, deadline due) {
  auto& st = self->state;
  end_gathering(self); // a question the coordinator gave up on: answered with what came
  if (st.phase.is<scheduler_phases::ending>() || st.phase.is<scheduler_phases::failing>())
    return run_is_ending(self);
  if (!st.phase.is<scheduler_phases::training>() || live_members(st) == 0) {
    auto promise = self->make_response_promise<after_gate>();
    answer_gate(self, epoch, promise); // nobody to ask for traffic
    return promise;
  }
  complete_joins(self, epoch); // no phase is in flight here
  balance_at_gate(self, epoch);
  auto promise = self->make_response_promise<after_gate>();
  st.gathering = traffic_gathering{epoch, ++st.gatherings, {}, {}, promise, {}};
  for (auto& m : st.members)
    if (!m.gone && m.node >= 0) { // (a spare has no node, and moved nothing)
      st.gathering->asked.insert(m.node);
      caf::anon_send(m.to, traffic_query_atom::value, traffic_query_message{epoch});
    }
  // The members' answers are the scheduler's own requests: they get a step's limit
  // (request_timeout), within what the coordinator gives the whole question.
  const auto until = deadline::earlier(due, deadline::after(st.options->timeouts.step));
  self->delayed_send(self, until.left(), traffic_due_atom::value, st.gatherings);
  return promise;
}

void on_traffic(scheduler_actor self, const channel_actor& channel, const traffic_message& t) {
  auto& st = self->state;
  auto* m = member_of(st, channel.address());
  const auto epoch = std::to_string(t.epoch);
  if (!m)
    return log_node_line(*st.options, "scheduler: dropped a traffic answer for epoch " + epoch
                                        + " from a node that did not join");
  // An answer nobody waits for any more: that epoch's figures went without it (the member's
  // next answer carries its totals, so nothing it moved is lost, only counted later).
  auto drop = [&](const std::string& why) {
    log_node_line(*st.options, "scheduler: dropped " + m->name() + "'s traffic answer for epoch "
                                 + epoch + ": " + why);
  };
  if (!st.gathering)
    return drop("no epoch's traffic is gathered"
                + std::string(st.phase.is<scheduler_phases::training>()
                                ? " (it came after its deadline)"
                                : ""));
  if (t.epoch != st.gathering->epoch)
    return drop("epoch " + std::to_string(st.gathering->epoch) + "'s is gathered");
  if (st.gathering->asked.count(m->node) == 0)
    return drop("it was not asked");
  st.gathering->answers[m->node] = t.peers;
  st.gathering->waits[m->node] = t.waits;
  end_gathering_if_complete(self);
}

void on_traffic_due(scheduler_actor self, std::int64_t serial) {
  auto& st = self->state;
  if (st.gathering && st.gathering->serial == serial)
    end_gathering(self);
}

void end_gathering_if_complete(scheduler_actor self) {
  auto& st = self->state;
  if (!st.gathering)
    return;
  const auto& g = *st.gathering;
  if (std::all_of(st.members.begin(), st.members.end(),
                  [&](const member_entry& m) { return m.gone || answered(g, m); }))
    end_gathering(self);
}

void end_gathering(scheduler_actor self, caf::error run_ends) {
  auto& st = self->state;
  if (!st.gathering)
    return;
  auto g = std::move(*st.gathering);
  st.gathering.reset();
  std::string missing;
  for (const auto& m : st.members)
    if (!m.gone && !answered(g, m))
      missing += (missing.empty() ? "" : ", ") + m.name();
  if (!missing.empty())
    log_node_line(*st.options, "scheduler: epoch " + std::to_string(g.epoch)
                                 + "'s traffic goes without " + missing
                                 + ": no answer by its deadline");
  for (const auto& [node, peers] : g.answers)
    st.traffic_table.add(st.plan.nodes.at(static_cast<std::size_t>(node)).name, peers);
  for (const auto& [node, waits] : g.waits)
    st.traffic_table.add_waits(waits);
  std::vector<peer_traffic> mine;
  for (auto& entry : st.traffic->snapshot()) {
    if (auto* m = member_of(st, entry.channel)) // (a spare without a node by its pid)
      entry.traffic.peer = m->node >= 0 ? st.plan.nodes.at(static_cast<std::size_t>(m->node)).name
                                        : "spare_pid_" + std::to_string(m->pid);
    mine.push_back(std::move(entry.traffic));
  }
  st.traffic_table.add("scheduler", mine);
  auto figures = st.traffic_table.take(g.epoch);
  // Sent before the answer: the coordinator records the epoch's report only after it, so the
  // metrics actor has the epoch's traffic when it writes the epoch's line.
  self->send(st.metrics, annotate_atom::value, g.epoch, std::string("traffic"), figures.json,
             figures.line);
  // And who made the barriers wait (the stragglers, by name), when anyone did.
  if (!figures.waits_line.empty())
    self->send(st.metrics, annotate_atom::value, g.epoch, std::string("waited_for"),
               figures.waits_json, figures.waits_line);
  if (run_ends)
    g.promise.deliver(std::move(run_ends));
  else
    answer_gate(self, g.epoch, g.promise);
}

} // namespace troupe
