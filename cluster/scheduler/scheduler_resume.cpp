// A scheduler restarted in training (scheduler_options::resume; `troupe node --role
// scheduler --resume`, which `troupe launch` runs when its scheduler is killed). It plans the
// job as the lost one did and listens at the same address; the servers and workers, which
// trained on without a scheduler (member_rejoin.cpp), rejoin with where they stand. No
// assignment goes out: each member keeps its part, and is ready as it rejoins. Once every
// plan node is back (in its own member, or in the one that adopted its computes or promoted
// its shards), the session starts at the latest epoch any compute was asked to train: it asks
// each phase again, which the computes answer with the phase in flight or finished, and
// restores no checkpoint. The shards' last applied step is logged beside it.
//
// A plan node lost for good earlier (on_worker_loss = continue) never rejoins: the restarted
// scheduler waits for it until its join timeout and names it.
//
// A scheduler lost before training leaves members with no place yet: they join the restarted
// one as they joined the lost one, and when such a first join comes before any rejoin, the
// restarted scheduler runs the job afresh, as the lost one would have (fresh_run).
#include <algorithm>
#include <string>

#include <caf/all.hpp>

#include <troupe/cluster/job_difference.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/cluster/remote_proxies.hpp>
#include <troupe/graph/value_hash.hpp>

#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

// The member that holds plan node `n`: its own, or the one that adopted or promoted it.
const member_entry* holder_of(const scheduler_state& st, int n) {
  for (const auto& m : st.members) {
    if (m.gone)
      continue;
    if (m.node == n || std::count(m.adopted_nodes.begin(), m.adopted_nodes.end(), n) > 0
        || std::count(m.promoted_nodes.begin(), m.promoted_nodes.end(), n) > 0)
      return &m;
  }
  return nullptr;
}

// The plan nodes a member holds: scheduler node 0 is none of them.
bool member_node(const placement_plan& plan, std::size_t n) {
  return plan.nodes[n].kind != node_kind::scheduler;
}

std::string node_name(const scheduler_state& st, std::uint32_t n) {
  return n < st.plan.nodes.size() ? st.plan.nodes[n].name : "plan node " + std::to_string(n);
}

// Why plan node `n` cannot be held by a rejoining `role` ("" if it can): not a node of that
// role, or back already.
std::string refusal_of_node(const scheduler_state& st, node_kind role, std::uint32_t n) {
  if (n >= st.plan.nodes.size() || st.plan.nodes[n].kind != role)
    return node_name(st, n) + " is no " + to_string(role) + " node of the plan";
  if (const auto* holder = holder_of(st, static_cast<int>(n)))
    return node_name(st, n) + " is back already, in " + holder->name();
  return "";
}

} // namespace

std::string rejoin_progress(const scheduler_state& st) {
  std::size_t want = 0, back = 0;
  std::string waiting;
  for (std::size_t n = 0; n < st.plan.nodes.size(); ++n) {
    if (!member_node(st.plan, n))
      continue;
    ++want;
    if (holder_of(st, static_cast<int>(n)))
      ++back;
    else if (waiting.empty())
      waiting = st.plan.nodes[n].name;
  }
  return std::to_string(back) + " of " + std::to_string(want) + " plan nodes back"
         + (waiting.empty() ? "" : "; waiting for " + waiting);
}

std::string refusal_of_rejoin(scheduler_state& st, const channel_actor& channel,
                              const join_message& join) {
  if (!join.rejoin) {
    if (join.spare || !st.resumed_run)
      return ""; // a spare joins as any other; a first join before any rejoin starts the run afresh
    return "this scheduler was started with --resume and takes over the run its members kept "
           "training, and this "
           "node joins as a new one (a node that lost its scheduler before training; start it "
           "again with the "
           "whole job, or as a --spare)";
  }
  if (!st.options->resume)
    return "it rejoins a run in training, and this scheduler runs a run of its own (a restarted "
           "scheduler "
           "takes rejoins with --resume)";
  if (st.fresh_run)
    return "this restarted scheduler starts the run afresh: a node that had not begun training "
           "joined it first";
  if (!st.phase.is<scheduler_phases::joining>())
    return "the run went on already (every plan node was back)";
  if (member_of(st, channel.address()))
    return "it joined twice";
  if (join.job_hash != job_hash_without_counts(st.job))
    return "it trains another job (hash " + hash_text(join.job_hash) + ", this scheduler's "
           + hash_text(job_hash_without_counts(st.job))
           + "): restart the scheduler with the run's config and flags";
  const auto& r = *join.rejoin;
  if (join.role != node_kind::server && join.role != node_kind::worker)
    return "a " + std::string(to_string(join.role)) + " holds no plan node";
  if (auto why = refusal_of_node(st, join.role, r.node); !why.empty())
    return why;
  for (auto n : r.adopted)
    if (auto why = refusal_of_node(st, node_kind::worker, n); !why.empty() || n == r.node)
      return "it says it adopted " + node_name(st, n) + ": " + (why.empty() ? "its own node" : why);
  for (auto n : r.promoted)
    if (auto why = refusal_of_node(st, node_kind::server, n); !why.empty() || n == r.node)
      return "it says it promoted " + node_name(st, n) + ": "
             + (why.empty() ? "its own node" : why);
  if (join.role == node_kind::server && join.port == 0)
    return "a server that says no port workers reach it at";
  return "";
}

void on_rejoin(scheduler_actor self, const channel_actor& channel, const join_message& join) {
  auto& st = self->state;
  const auto& r = *join.rejoin;
  st.resumed_run = true;
  auto& m = add_member(self, channel, join);
  m.node = static_cast<int>(r.node);
  m.rank = st.plan.nodes[r.node].rank;
  m.threads = static_cast<int>(r.threads);
  m.spare = join.spare;
  m.ready = true;
  for (auto n : r.adopted)
    m.adopted_nodes.push_back(static_cast<int>(n));
  for (auto n : r.promoted)
    m.promoted_nodes.push_back(static_cast<int>(n));
  // Where its traffic stood at the previous epoch's end: the epoch the run goes on in is
  // counted from there, not from the node's start.
  if (r.counted) {
    st.traffic_table.add(st.plan.nodes[r.node].name, r.counted->peers);
    st.traffic_table.add_waits(r.counted->waits);
  }
  st.resume_epoch = std::max(st.resume_epoch, r.epoch);
  st.resume_applied_step = std::max(st.resume_applied_step, r.applied_step);
  std::string holds;
  for (auto n : r.adopted)
    holds += (holds.empty() ? "" : ", ") + node_name(st, n) + " (adopted)";
  for (auto n : r.promoted)
    holds += (holds.empty() ? "" : ", ") + node_name(st, n) + " (promoted)";
  log_node_line(*st.options,
                "scheduler: " + m.name() + " rejoined as " + node_name(st, r.node)
                  + (holds.empty() ? "" : ", holding " + holds)
                  + (m.role == node_kind::worker
                       ? "; its computes were last asked to train epoch " + std::to_string(r.epoch)
                       : "; its shards applied step " + std::to_string(r.applied_step) + " last")
                  + "; " + rejoin_progress(st));
  record_member_event(st, "rejoined", m,
                      {{{"epoch", r.epoch}, {"applied_step", r.applied_step}}, {}});
  for (std::size_t n = 0; n < st.plan.nodes.size(); ++n)
    if (member_node(st.plan, n) && !holder_of(st, static_cast<int>(n)))
      return;
  // Nothing was asked yet (lost before the first epoch began): the run starts as its job says.
  const auto first = st.resume_epoch;
  log_node_line(*st.options,
                "scheduler: every plan node is back; "
                  + (first >= 0 ? "the run goes on at epoch " + std::to_string(first)
                                    + ", which the workers' computes were last asked to train"
                                : std::string("no epoch had begun: the run starts as its job says"))
                  + " (the shards applied step " + std::to_string(st.resume_applied_step)
                  + " last)");
  st.traffic_table.take(-1); // the baseline: what the members had moved by the previous epoch's end
  start_training(self);
}

} // namespace troupe
