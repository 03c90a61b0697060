// troupe ctl's verbs, as the scheduler runs them (run_control_actor, node_control.hpp). ctl is
// admitted with the job's secret like a node; each verb is answered, or refused with why
// (errc::bad_request): nothing that is asked for is done only in part.
//
//   status        the status server's /status document (scheduler_options::status_document)
//   drain NODE    worker NODE ("worker_1", or "worker 1" as the log names it) is asked to
//                 leave as its host's SIGTERM would ask it (scheduler_moves.cpp); refused
//                 at once, saying why, where its leave would be
//   checkpoint    the epoch in training is saved after its training and validation (where the
//                 run saves checkpoints), although no save is due; the run goes on
//   set KEY=VALUE a shard setting (run_changes.hpp: optimizer.lr, .momentum, .wd, checked
//                 against the key table; topology.staleness) changes from the first step after the
//                 epoch in training, in every server's shards (scheduler_changes.cpp); asked twice
//                 before that, the later value counts
//   stop          the epoch in training is the run's last: the gate after its training says
//                 so (answer_gate), and the run ends as a finished one (its validation,
//                 the last epoch's checkpoint where the run saves them, the final weights,
//                 every process exit 0)
#include <algorithm>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

caf::error refused(const std::string& why) {
  return make_error(errc::bad_request, why); // the channel names the scheduler
}

// The plan node's name of member `m` ("worker_1"); "" for a spare that holds none.
std::string node_name_of(const scheduler_state& st, const member_entry& m) {
  if (m.node < 0 || static_cast<std::size_t>(m.node) >= st.plan.nodes.size())
    return "";
  return st.plan.nodes[static_cast<std::size_t>(m.node)].name;
}

// The worker still in the run that `name` names: its plan node ("worker_1") or its role and
// rank ("worker 1"); null if none.
member_entry* worker_named(scheduler_state& st, const std::string& name) {
  for (auto& m : st.members)
    if (m.role == node_kind::worker && !m.gone
        && (name == node_name_of(st, m)
            || (m.rank >= 0 && name == "worker " + std::to_string(m.rank))))
      return &m;
  return nullptr;
}

// "worker_0, worker_1": the workers a drain can name.
std::string worker_names(const scheduler_state& st) {
  std::vector<std::string> names;
  for (const auto& m : st.members)
    if (m.role == node_kind::worker && !m.gone && !node_name_of(st, m).empty())
      names.push_back(node_name_of(st, m));
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? std::string("none") : text;
}

caf::result<command_result_message> status_of(scheduler_actor self, const command_message& c) {
  if (!c.args.empty())
    return refused("status takes no arguments (it was given " + std::to_string(c.args.size())
                   + ")");
  const auto& document = self->state.options->status_document;
  if (!document)
    return refused("this scheduler keeps no status");
  return command_result_message{0, "", document()};
}

caf::result<command_result_message> drain(scheduler_actor self, const command_message& c) {
  auto& st = self->state;
  if (c.args.size() != 1)
    return refused("drain takes one worker, as NODE (it was given " + std::to_string(c.args.size())
                   + ")");
  const auto& name = c.args.front();
  auto* m = worker_named(st, name);
  if (!m)
    return refused("drain " + name
                   + ": no worker of this run is named so (its workers: " + worker_names(st) + ")");
  if (auto why = drain_refusal(st, *m); !why.empty()) {
    log_node_line(*st.options, "scheduler: troupe ctl asked " + m->name()
                                 + " to leave; refused: " + why + "; it trains on");
    record_member_event(st, "drain refused", *m, {{}, {{"reason", why}}});
    return refused("drain " + name + " refused: " + why);
  }
  log_node_line(*st.options, "scheduler: troupe ctl asks " + m->name() + " to leave");
  record_member_event(st, "drain asked", *m, {{}, {{"reason", "troupe ctl drain"}}});
  caf::anon_send(m->to, drain_atom::value, drain_message{"troupe ctl drain"});
  return command_result_message{
    0,
    "asked " + m->name()
      + " to leave: it asks the scheduler as on SIGTERM, its computes move to another worker and "
        "it exits 0 (the scheduler's log says when)",
    ""};
}

// Where the run is now, for the log and the change's record ("epoch 1 at batch 151 of 469").
std::string position_of(const scheduler_state& st) {
  return st.output.position ? st.output.position->text() : std::string();
}

// The training whose gate makes a change asked now: this epoch's, or, once that gate has passed
// (its training report is in: validation, a save, the next epoch's start), the next one's.
std::string next_gate(const scheduler_state& st) {
  const auto& at = st.output.position;
  return at && at->validating ? "the next epoch's training" : "this epoch's training";
}

// A verb that takes effect at the gate after the epoch in training: its arguments (none), and
// the phase it may be asked in.
caf::error gate_verb_refusal(const scheduler_state& st, const command_message& c) {
  if (!c.args.empty())
    return refused(c.verb + " takes no arguments (it was given " + std::to_string(c.args.size())
                   + ")");
  if (!st.phase.is<scheduler_phases::training>())
    return refused("the run is not training (" + c.verb
                   + " takes effect after an epoch's training)");
  return {};
}

caf::result<command_result_message> set(scheduler_actor self, const command_message& c) {
  auto& st = self->state;
  if (c.args.size() != 1)
    return refused("set takes one KEY=VALUE (it was given " + std::to_string(c.args.size()) + ")");
  if (!st.phase.is<scheduler_phases::training>())
    return refused("the run is not training (set takes effect after an epoch's training)");
  if (st.stop_asked)
    return refused("stop was asked already: no epoch follows this one's training");
  auto change = parse_setting(c.args.front(), st.job, 0);
  if (!change)
    return change.error();
  auto& asked = st.settings_asked;
  asked.erase(std::remove_if(asked.begin(), asked.end(),
                             [&](const auto& a) { return a.change.setting == change->setting; }),
              asked.end()); // the later value of a key asked twice before the gate
  asked.push_back({*change, position_of(st), "troupe ctl"});
  const auto what = setting_text(*change).substr(4);
  const auto at =
    asked.back().asked_at.empty() ? std::string() : " (now " + asked.back().asked_at + ")";
  log_node_line(*st.options,
                "scheduler: troupe ctl asks for " + what + " after " + next_gate(st) + at);
  record_event(st.options->events, "set asked", {{}, {{"by", "troupe ctl"}, {"change", what}}});
  return command_result_message{
    0,
    what + " from the first step after " + next_gate(st) + at
      + ": every server's shards take it then, and the epoch's metrics line records it",
    ""};
}

caf::result<command_result_message> stop(scheduler_actor self, const command_message& c) {
  auto& st = self->state;
  if (auto why = gate_verb_refusal(st, c))
    return why;
  if (st.stop_asked)
    return refused("stop was asked already; the run stops after " + next_gate(st));
  st.stop_asked = true;
  st.stop_asked_at = position_of(st);
  const auto at = st.stop_asked_at.empty() ? std::string() : " (now " + st.stop_asked_at + ")";
  log_node_line(*st.options,
                "scheduler: troupe ctl asks the run to stop after " + next_gate(st) + at);
  record_event(st.options->events, "stop asked", {{}, {{"by", "troupe ctl"}}});
  return command_result_message{
    0,
    "the run stops after " + next_gate(st) + at
      + ": that epoch is validated and, where the run saves checkpoints, saved as the last; then "
        "every process exits 0",
    ""};
}

caf::result<command_result_message> checkpoint(scheduler_actor self, const command_message& c) {
  auto& st = self->state;
  if (auto why = gate_verb_refusal(st, c))
    return why;
  if (st.output.checkpoint.prefix.empty())
    return refused("this run saves no checkpoints (start it with --model-prefix PREFIX)");
  if (st.save_asked || st.stop_asked)
    return refused(std::string(st.stop_asked ? "stop" : "checkpoint")
                   + " was asked already; the epoch is saved after " + next_gate(st));
  st.save_asked = true;
  st.save_asked_at = position_of(st);
  const auto at = st.save_asked_at.empty() ? std::string() : " (now " + st.save_asked_at + ")";
  log_node_line(*st.options,
                "scheduler: troupe ctl asks for a checkpoint after " + next_gate(st) + at);
  record_event(st.options->events, "checkpoint asked", {{}, {{"by", "troupe ctl"}}});
  return command_result_message{0,
                                (next_gate(st) == "this epoch's training" ? "this" : "the next")
                                  + std::string(" epoch is saved after its training and validation")
                                  + at + ", under " + st.output.checkpoint.prefix
                                  + "; the run goes on",
                                ""};
}

caf::result<command_result_message> balance(scheduler_actor self, const command_message& c) {
  auto& st = self->state;
  if (auto why = gate_verb_refusal(st, c))
    return why;
  if (!st.job.nodes.adopt_on_worker_loss)
    return refused("balance moves compute ranks between worker processes as an adoption does: it "
                   "needs on_worker_loss = adopt, and this run's is "
                   + std::string(worker_loss_policy(st.job.nodes)));
  for (const auto& level : st.job.topology.levels)
    if (level.scope == aggregation_scope::machine)
      return refused("topology " + st.job.topology.name
                     + "'s aggregate(machine) sums each machine's ranks in its process: they do "
                       "not move one by one");
  if (st.balance_asked)
    return refused("balance was asked already; the ranks are weighed after " + next_gate(st));
  st.balance_asked = true;
  log_node_line(*st.options, "scheduler: troupe ctl asks for a balance after " + next_gate(st));
  record_event(st.options->events, "balance asked", {{}, {{"by", "troupe ctl"}}});
  return command_result_message{0,
                                "the ranks are weighed after " + next_gate(st)
                                  + "; where a faster worker process should run more of them, "
                                    "one move begins there and ends at the gate after it",
                                ""};
}

} // namespace

caf::result<command_result_message> on_command(scheduler_actor self, const command_message& c) {
  if (self->state.phase.is<scheduler_phases::ending>())
    return refused("the run is ending");
  if (c.verb == "status")
    return status_of(self, c);
  if (c.verb == "drain")
    return drain(self, c);
  if (c.verb == "stop")
    return stop(self, c);
  if (c.verb == "checkpoint")
    return checkpoint(self, c);
  if (c.verb == "set")
    return set(self, c);
  if (c.verb == "balance")
    return balance(self, c);
  return refused("no verb " + c.verb
                 + " (troupe ctl runs status, drain, set, balance, checkpoint, stop)");
}

} // namespace troupe
