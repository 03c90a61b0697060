// A worker that leaves the run on purpose (drain), or cedes a node it adopted to a worker that
// joined (scheduler_moves.cpp has the scheduler's side). Its host asks it to leave (SIGTERM:
// worker_leave, cluster_node.hpp); it asks the scheduler, which lets it go when its computes can
// move to other workers, and refuses otherwise (it trains on, and its host may still end it the
// hard way).
//
// Let go, it closes its channel to the scheduler first, while its computes still run: the
// phases the scheduler's coordinator asked of them then fail as a lost channel's do, which the
// coordinator's relays hold until the adopted computes are served, and ask there again. Only
// once that channel has ended does it shut its part down (an actor shut down earlier would
// leave those phases unanswered) and close its channels to the servers.
//
// A worker that adopted a node may be told to cede it (a worker that joined in training takes
// it back): at the gate between epochs, with no phase in flight there, it stops serving that
// node's computes and shuts its loaders and computes down.
#include <algorithm>
#include <iterator>

#include <caf/all.hpp>

#include "cluster/member/member_placement.hpp"
#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

bool worker_leave::ask(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!worker_)
    return false;
  caf::anon_send(worker_, leave_asked_atom::value, why);
  return true;
}

void worker_leave::arm(leavable_actor worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  worker_ = std::move(worker);
}

void worker_leave::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  worker_ = leavable_actor{};
}

void on_leave_asked(member_actor self, const std::string& why) {
  auto& st = self->state;
  if (st.ended() || st.leaving || st.released)
    return;
  if (st.options->role != node_kind::worker || !st.phase.is<member_phases::running>()
      || !st.to_scheduler)
    return fail(self, errc::peer_down,
                "asked to leave (" + why + ") while " + st.phase.name()
                  + (st.options->role == node_kind::worker ? ": only a worker in training drains"
                                                           : ": only a worker drains"));
  st.leaving = true;
  st.leave_reason = why;
  log_node_line(*st.options, st.label + ": asked to leave (" + why + ") at " + clock_time_now()
                               + ": asking the scheduler to move its computes to other workers");
  caf::anon_send(st.to_scheduler, leave_atom::value, leave_message{why});
}

void on_drain(member_actor self, const drain_message& d) {
  auto& st = self->state;
  if (st.leaving || st.released)
    return;
  if (st.options->role != node_kind::worker || !st.phase.is<member_phases::running>()) {
    log_node_line(*st.options, st.label + ": ignored a drain (" + d.reason + ") while "
                                 + st.phase.name() + ": only a worker in training drains");
    return;
  }
  on_leave_asked(self, d.reason);
}

void on_release(member_actor self, const release_message& r) {
  auto& st = self->state;
  if (!st.leaving) {
    log_node_line(*st.options, st.label + ": ignored a release it did not ask for");
    return;
  }
  st.leaving = false;
  if (!r.granted) {
    log_node_line(*st.options, st.label + ": not drained: " + r.reason + "; it trains on (another "
                                 + st.leave_reason + " ends it at once)");
    record_event(st.options->events, "leave refused", {{}, {{"reason", r.reason}}});
    return;
  }
  st.released = true;
  log_node_line(*st.options, st.label + ": drained at " + clock_time_now()
                               + ": its computes move to another worker; leaving the run");
  record_event(st.options->events, "drained", {{}, {{"reason", st.leave_reason}}});
  caf::anon_send_exit(st.scheduler, caf::exit_reason::user_shutdown);
}

void leave_run(member_actor self) {
  auto& st = self->state;
  st.scheduler = channel_actor{};
  st.to_scheduler = scheduler_control_actor{};
  const auto servers = st.server_channels;
  finish(self, caf::error{});
  // The servers go on: waiting for them to close these would wait out the goodbye grace.
  for (const auto& channel : servers)
    if (channel)
      caf::anon_send_exit(channel, caf::exit_reason::user_shutdown);
}

namespace {

// The plan names of rank `rank`'s compute and loader.
std::vector<std::string> names_of_rank(const placement_plan& plan, int rank) {
  std::vector<std::string> names;
  for (const auto& a : plan.actors)
    if ((a.role == plan_role::compute || a.role == plan_role::loader) && a.rank == rank)
      names.push_back(a.name);
  return names;
}

// Stops `part` running those of `ranks` it runs and serving their computes; true if it runs
// no compute then.
bool cede_from(member_state& st, node_part& part, const std::vector<int>& ranks) {
  std::vector<std::string> names;
  for (const auto& [rank, compute] : part.computes)
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) {
      st.serving->erase<remote_interface::compute_driver>(static_cast<std::uint32_t>(rank));
      auto more = names_of_rank(st.plan, rank);
      names.insert(names.end(), more.begin(), more.end());
    }
  part.shut_down_named(names); // their downs then match no part: nothing of this node fails
  return part.computes.empty();
}

} // namespace

void on_cede(member_actor self, const cede_message& c) {
  auto& st = self->state;
  const auto node = static_cast<int>(c.node);
  const auto here = ranks_here(st, node);
  const bool adopted =
    std::find(st.adopted_nodes.begin(), st.adopted_nodes.end(), node) != st.adopted_nodes.end();
  std::vector<int> ranks(c.ranks.begin(), c.ranks.end());
  if (ranks.empty() && !adopted) {
    log_node_line(*st.options, st.label + ": ignored a cede of plan node " + std::to_string(c.node)
                                 + ", which it did not adopt");
    return;
  }
  for (auto r : ranks)
    if (std::find(here.begin(), here.end(), r) == here.end()) {
      log_node_line(*st.options, st.label + ": ignored a cede of compute_" + std::to_string(r)
                                   + ", which it does not run");
      return;
    }
  if (ranks.empty())
    ranks = here;
  // The scheduler cedes at the gate between epochs, with its relays pointing at the taker
  // already: no phase of these computes is in flight here, and none is asked here again.
  if (node == st.part_node)
    cede_from(st, st.part, ranks); // its own part stays, with what it still runs
  auto part = st.adopted.begin();
  for (auto n = st.adopted_nodes.begin(); n != st.adopted_nodes.end();) {
    if (*n == node && cede_from(st, *part, ranks)) {
      part->shut_down(); // what is left of it (its validation loader) serves nothing
      part = st.adopted.erase(part);
      n = st.adopted_nodes.erase(n);
      continue;
    }
    ++part;
    ++n;
  }
  const auto& name = st.plan.nodes[c.node].name;
  log_node_line(*st.options, st.label + ": ceded " + rank_names(ranks) + " of " + name + " at "
                               + clock_time_now() + ": another worker serves them now");
  record_event(
    st.options->events, "ceded",
    {{{"node", c.node}, {"computes", static_cast<double>(ranks.size())}}, {{"ceded", name}}});
}

} // namespace troupe
