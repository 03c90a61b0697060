// Shards with a backup (shard_backups = 1): what the scheduler does when a server process is lost
// during training.
//
// The server nodes form a ring in plan order, each holding the backups of the previous one's
// shards (member_backups.cpp). When server node L is lost, the next live one in the ring, B,
// holds L's backups: the scheduler sends B promote{L, B} and waits for B's ready naming L (B
// has seeded the backup aggregators and serves the backups where L's shards were served).
// Only then does it send promote{L, B} to every worker, whose relays re-point L's shards at B
// and ask there again whatever the loss held, and re-point the session's own relays (its pulls
// of the final weights): a worker told earlier could push to B before B serves the backups.
//
// What stops the run instead, named in the log: no shard backups; a loss outside training; the
// lost server's backups lost too (B gone), or shards it had promoted itself (their only copy);
// a second server lost while a promotion is under way.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <caf/all.hpp>

#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/backup_ring.hpp"
#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

std::string promote_lost_server(scheduler_actor self, member_entry& m, const std::string& what) {
  auto& st = self->state;
  if (m.role != node_kind::server || st.job.nodes.shard_backups == 0
      || !st.phase.is<scheduler_phases::training>())
    return "stop";
  const auto& plan = st.plan;
  if (!m.promoted_nodes.empty() || m.promoting >= 0)
    return "it served the promoted backups of "
           + plan.nodes
               .at(static_cast<std::size_t>(m.promoted_nodes.empty() ? m.promoting
                                                                     : m.promoted_nodes.front()))
               .name
           + ", their only copy left";
  for (const auto& other : st.members)
    if (&other != &m && other.promoting >= 0)
      return "it was lost while " + other.name() + " was promoting the backups of "
             + plan.nodes.at(static_cast<std::size_t>(other.promoting)).name
             + "; a second loss during a promotion stops the run";
  const int holder = next_server(plan, m.node);
  auto backup = std::find_if(st.members.begin(), st.members.end(), [&](const member_entry& e) {
    return e.node == holder && e.role == node_kind::server;
  });
  if (backup == st.members.end() || backup->gone)
    return "the backups of its shards were on "
           + (holder >= 0 ? plan.nodes.at(static_cast<std::size_t>(holder)).name
                          : std::string("no server"))
           + ", which is lost too";
  backup->promoting = m.node;
  st.server_lost_at = std::chrono::steady_clock::now();
  log_node_line(*st.options, "scheduler: " + what + "; " + backup->name()
                               + " holds the backups of its shards (" + shard_names(plan, m.node)
                               + "): promoting them (shard_backups = 1)");
  record_member_event(
    st, "promotion", *backup,
    {{{"lost_node", m.node}}, {{"lost", plan.nodes.at(static_cast<std::size_t>(m.node)).name}}});
  caf::anon_send(
    backup->to, promote_atom::value,
    promote_message{static_cast<std::uint32_t>(m.node), static_cast<std::uint32_t>(holder)});
  end_gathering_if_complete(self); // the lost one may have been the last to answer
  return "";
}

bool on_promoted(scheduler_actor self, member_entry& m, const ready_message& ready) {
  auto& st = self->state;
  const auto node = static_cast<int>(ready.node);
  if (!st.phase.is<scheduler_phases::training>() || m.role != node_kind::server
      || m.promoting != node)
    return false;
  m.promoting = -1;
  m.promoted_nodes.push_back(node);
  // The workers send the lost node's pushes to `m` now; the other servers hear it too (the one
  // whose backups the lost node held lets its shards go on alone: they held their answers).
  const promote_message moved{static_cast<std::uint32_t>(node), static_cast<std::uint32_t>(m.node)};
  for (auto& w : st.members)
    if (&w != &m && !w.gone)
      caf::anon_send(w.to, promote_atom::value, moved);
  for (auto& [actor, relay] : st.shard_relays)
    if (st.plan.actors.at(actor).node == node)
      self->send(relay, repoint_atom::value,
                 spawn_push_target_proxy(self->system(), m.channel,
                                         static_cast<std::uint32_t>(st.plan.actors[actor].shard)));
  const auto seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - st.server_lost_at).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.3f", seconds);
  log_node_line(*st.options, "scheduler: " + m.name() + " serves the shards of "
                               + st.plan.nodes.at(static_cast<std::size_t>(node)).name + " ("
                               + shard_names(st.plan, node) + ", promoted " + took
                               + " s after the loss was seen); every worker pushes there now "
                                 "and training goes on");
  record_member_event(st, "promoted", m,
                      {{{"lost_node", node}, {"seconds", seconds}},
                       {{"lost", st.plan.nodes.at(static_cast<std::size_t>(node)).name}}});
  return true;
}

} // namespace troupe
