// A server or worker node's side of shards with a backup (shard_backups = 1; member_state.hpp).
//
// The server nodes form a ring in plan order: each holds the backups of the previous one's
// shards (that node's push side, its shards and the aggregators in front of them, spawned
// again here) and connects to the next one, which holds its own backups. A primary shard passes
// every applied push to its backup over that channel before it answers (param_shard_actor.hpp),
// so a backup holds every step a worker has seen answered.
//
// When a server is lost, the scheduler sends promote{lost node, server holding its backups}:
// that server seeds each backup aggregator with the steps its shard has applied (a pusher
// whose answer was lost with the primary asks for that step again and gets the weights after
// it), serves the backups where the lost server's shards were served, and says ready naming
// the lost node. Then the scheduler sends the same promote to every worker, whose computes
// reach each remote shard through a relay (push_relay.hpp): the relays of the lost node's
// shards are re-pointed at the promoting server, and the pushes they held since the loss are
// asked there again.
//
// A server whose backup holder is lost goes on with its shards alone (they drop their backup
// when a replication fails with peer_down) and says so; a worker that loses a server channel
// waits for the scheduler's word, which is a promote or the end of the run.
#include <algorithm>
#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/backup_mirror.hpp>
#include <troupe/actors/spawned_actor.hpp>
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/backup_ring.hpp"
#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

namespace {

// What a shard replicates to when its backup's server could not be reached: every replication
// fails as a lost channel's would (errc::peer_down), so the shard holds its answers.
shard_backup_actor unreachable_backup(caf::actor_system& system, std::string why) {
  return system.spawn([why](shard_backup_actor::pointer) -> shard_backup_actor::behavior_type {
    return {[=](replicate_atom, gradient_push&) -> caf::result<std::int64_t> {
      return make_error(errc::peer_down, "cannot reach " + why);
    }};
  });
}

// The receiving end of the backups of shard actor `shard` whose answers are compressed (the hop
// into the aggregator in front of it, or into it): what a promoted backup answers through, so
// what mirrors the primary's (backup_mirror.hpp). Null where no hop of its chain compresses
// answers.
compressing_receiver_actor answering_end(const placement_plan& plan, const push_side& side,
                                         std::size_t shard) {
  const auto& s = plan.actors.at(shard);
  for (const auto& r : plan.routes)
    if (is_push(r.carries) && r.compression.answers != value_encoding::none
        && plan.actors[r.to].node == s.node && plan.actors[r.to].shard == s.shard
        && side.receivers.at(r.to))
      return side.receivers.at(r.to);
  return {};
}

const std::string& node_name(const placement_plan& plan, int node) {
  return plan.nodes.at(static_cast<std::size_t>(node)).name;
}

// The promoted backups of `node` serve its shards here: where workers push (the aggregator in
// front of a shard, or the shard) and where the scheduler pulls.
void serve_promoted(member_actor self, int node) {
  auto& st = self->state;
  auto& r = st.backup;
  for (auto i : st.plan.actors_on(node))
    if (st.plan.actors[i].role == plan_role::shard)
      st.serving->set<remote_interface::push_target>(
        static_cast<std::uint32_t>(st.plan.actors[i].shard), r.backups.targets.at(i));
  for (const auto& [shard, actor] : entry_points(st.plan, node))
    st.serving->set<remote_interface::push_target>(shard, r.backups.targets.at(actor));
  r.promoted.push_back(node);
  log_node_line(*st.options, st.label + ": promoted the backups of " + node_name(st.plan, node)
                               + " at " + clock_time_now() + ": " + shard_names(st.plan, node)
                               + " served here from now on, without a backup of their own");
  record_event(st.options->events, "promoted",
               {{{"lost_node", node}}, {{"lost", node_name(st.plan, node)}}});
  caf::anon_send(
    st.to_scheduler, ready_atom::value,
    ready_message{static_cast<std::uint32_t>(node), 0, static_cast<std::uint32_t>(st.threads)});
}

void promote_backups(member_actor self, int node) {
  auto& st = self->state;
  auto& r = st.backup;
  std::vector<std::size_t> shards;
  for (auto i : st.plan.actors_on(node))
    if (st.plan.actors[i].role == plan_role::shard)
      shards.push_back(i);
  if (shards.empty())
    return serve_promoted(self, node);
  auto left = std::make_shared<std::size_t>(shards.size());
  for (auto i : shards) {
    // Each aggregator in front of the shard starts from the steps the shard applied.
    self->request(r.backups.shards.at(i), st.options->timeouts.phase, applied_atom::value)
      .then(
        [=](std::vector<applied_group>& applied) {
          auto& s = self->state;
          for (auto a : s.plan.actors_on(node))
            if (s.plan.actors[a].role == plan_role::aggregator
                && s.plan.actors[a].shard == s.plan.actors[i].shard)
              self->send(s.backup.backups.aggregators.at(a), seed_atom::value, applied);
          if (--*left == 0)
            serve_promoted(self, node);
        },
        [=](caf::error& err) {
          fail(self, troupe_code(err),
               "cannot promote the backup of " + self->state.plan.actors[i].name + ": "
                 + error_text(err));
        });
  }
}

} // namespace

void spawn_backups(member_actor self, const training_job& job, const std::vector<tensor>& initial) {
  auto& st = self->state;
  auto& r = st.backup;
  r.backed_node = previous_server(st.plan, st.part_node);
  r.backup_node = next_server(st.plan, st.part_node);
  if (r.backed_node < 0 || r.backup_node < 0)
    throw std::invalid_argument(
      "shard_backups = 1 needs at least 2 server processes, and the plan has "
      + std::to_string(std::count_if(st.plan.nodes.begin(), st.plan.nodes.end(),
                                     [](const auto& n) { return n.kind == node_kind::server; })));
  const auto& plan = st.plan;
  auto remote = [&](std::size_t actor) -> push_target_actor {
    throw std::invalid_argument("the backups of " + node_name(plan, r.backed_node)
                                + " would push to " + plan.actors.at(actor).name
                                + " on another node; shard_backups = 1 keeps the "
                                  "shards and the aggregators in front of them only");
  };
  r.backups = spawn_push_side_of_node(
    self->system(), plan, r.backed_node, remote, initial, job.optimizer,
    [&](const push_target_actor& a, const planned_actor& entry, const push_target_actor&) {
      r.backup_actors.emplace_back(as_spawned(a), entry.name + " (backup)");
      self->monitor(a);
    },
    push_side_options{job.epochs * plan.steps_per_epoch, job.nodes.adopt_on_worker_loss,
                      st.options->timeline, " (backup)"});
  for (auto i : plan.actors_on(r.backed_node)) {
    if (plan.actors[i].role != plan_role::shard)
      continue;
    shard_backup_actor backup = r.backups.shards.at(i);
    if (auto end = answering_end(plan, r.backups, i)) {
      backup = spawn_backup_mirror(self->system(), r.backups.shards.at(i), end);
      r.backup_actors.emplace_back(caf::actor_cast<caf::actor>(backup),
                                   plan.actors[i].name + "'s answer mirror (backup)");
      self->monitor(backup);
    }
    st.serving->set<remote_interface::shard_backup>(
      static_cast<std::uint32_t>(plan.actors[i].shard), backup);
  }
  log_node_line(*st.options, st.label + ": holds the backups of " + node_name(plan, r.backed_node)
                               + " (" + shard_names(plan, r.backed_node) + "; shard_backups = 1)");
}

void connect_backups(member_actor self, const assignment_message& a,
                     const channel_options& channel) {
  auto& st = self->state;
  auto& r = st.backup;
  const auto to = std::find_if(a.servers.begin(), a.servers.end(), [&](const endpoint& e) {
    return static_cast<int>(e.node) == r.backup_node;
  });
  const auto& name = node_name(st.plan, r.backup_node);
  if (to == a.servers.end() || to->port == 0)
    throw std::invalid_argument("the assignment says not where " + name
                                + " listens, which holds the backups of "
                                  "this server's shards (shard_backups = 1)");
  auto connected = connect_channel(self->system(), to->host, to->port, channel);
  if (!connected) {
    // As when that server is lost later: the shards here hold their answers until the
    // scheduler, which sees every loss, says it is gone (or ends the run: its port is closed
    // when its run ends, which a refused connection here may only be the first to see).
    const auto why = name + " (which holds the backups of " + shard_names(st.plan, st.part_node)
                     + "): " + error_text(connected.error());
    log_node_line(*st.options, st.label + ": cannot reach " + why
                                 + "; their answers wait for the scheduler's word");
    for (auto i : st.plan.actors_on(st.part_node))
      if (st.plan.actors[i].role == plan_role::shard)
        self->send(st.part.own_shards.at(i), backup_atom::value,
                   unreachable_backup(self->system(), why));
    return;
  }
  self->monitor(*connected);
  r.backup_channel = *connected;
  for (auto i : st.plan.actors_on(st.part_node))
    if (st.plan.actors[i].role == plan_role::shard)
      self->send(st.part.own_shards.at(i), backup_atom::value,
                 spawn_shard_backup_proxy(self->system(), r.backup_channel,
                                          static_cast<std::uint32_t>(st.plan.actors[i].shard)));
}

push_target_actor
remote_shard(caf::actor_system& system,
             const std::shared_ptr<std::map<std::size_t, push_relay_actor>>& relays, bool relayed,
             const placement_plan& plan, std::size_t actor, const channel_actor& channel) {
  const auto shard = static_cast<std::uint32_t>(plan.actors.at(actor).shard);
  if (!relayed)
    return spawn_push_target_proxy(system, channel, shard);
  auto known = relays->find(actor);
  if (known == relays->end())
    known =
      relays
        ->emplace(actor, spawn_push_relay(system, spawn_push_target_proxy(system, channel, shard),
                                          plan.actors.at(actor).name))
        .first;
  return known->second;
}

bool on_backup_channel_lost(member_actor self, const caf::actor_addr& channel,
                            const caf::error& why) {
  auto& st = self->state;
  auto& r = st.backup;
  if (r.shard_backups == 0 || !st.phase.is<member_phases::running>())
    return false;
  if (r.backup_channel && channel == r.backup_channel.address()) {
    // Only the channel is known to be gone: the shards hold their answers until the scheduler
    // says the server is (on_promote), so the backups never fall behind a step a worker saw.
    r.backup_channel = channel_actor{};
    if (st.fenced_nodes.count(r.backup_node))
      return true; // fenced: the scheduler's promote says what the shards here do
    log_node_line(*st.options, st.label + ": lost " + node_name(st.plan, r.backup_node) + " at "
                                 + clock_time_now() + ", which holds the backups of "
                                 + shard_names(st.plan, st.part_node) + ": "
                                 + reason_text(self->system(), why)
                                 + "; their answers wait for the scheduler's word");
    return true;
  }
  for (std::size_t n = 0; n < st.server_channels.size(); ++n)
    if (st.server_channels[n] && channel == st.server_channels[n].address()) {
      st.server_channels[n] = channel_actor{};
      if (st.fenced_nodes.count(static_cast<int>(n)))
        return true; // fenced: its channel said so, and its shards are served elsewhere
      log_node_line(*st.options, st.label + ": lost " + st.plan.nodes[n].name + " at "
                                   + clock_time_now() + ": " + reason_text(self->system(), why)
                                   + "; its pushes wait for the scheduler to "
                                     "promote the backups of "
                                   + shard_names(st.plan, static_cast<int>(n))
                                   + " (shard_backups = 1)");
      return true;
    }
  return false;
}

void on_promote(member_actor self, const promote_message& p) {
  auto& st = self->state;
  auto& r = st.backup;
  const auto lost = static_cast<int>(p.node), server = static_cast<int>(p.server);
  auto is_server = [&](int n) {
    return n >= 0 && static_cast<std::size_t>(n) < st.plan.nodes.size()
           && st.plan.nodes[n].kind == node_kind::server;
  };
  if (r.shard_backups == 0 || !st.phase.is<member_phases::running>() || !is_server(lost)
      || !is_server(server))
    return fail(self, errc::bad_request,
                "the scheduler asked for a promotion this node cannot take (shard_backups "
                  + std::to_string(r.shard_backups) + ", nodes " + std::to_string(p.node) + " and "
                  + std::to_string(p.server) + ")");
  if (st.options->role == node_kind::server) {
    if (lost == r.backup_node && r.backup_node != st.part_node && !r.backup_gone) {
      r.backup_gone = true;
      // The scheduler saw the server holding this one's backups lost: the shards here go on alone.
      for (auto i : st.plan.actors_on(st.part_node))
        if (st.plan.actors[i].role == plan_role::shard)
          self->send(st.part.own_shards.at(i), backup_atom::value, shard_backup_actor{});
      log_node_line(*st.options,
                    st.label + ": " + node_name(st.plan, lost) + " is lost, the scheduler says: "
                      + shard_names(st.plan, st.part_node) + " go on without a backup");
    }
    if (server != st.part_node)
      return; // another server promotes
    if (lost != r.backed_node
        || std::find(r.promoted.begin(), r.promoted.end(), lost) != r.promoted.end())
      return fail(self, errc::bad_request,
                  "the scheduler asked it to promote the backups of " + node_name(st.plan, lost)
                    + "; this server holds those of " + node_name(st.plan, r.backed_node)
                    + (r.promoted.empty() ? "" : ", promoted already"));
    return promote_backups(self, lost);
  }
  const auto& to = st.server_channels.at(static_cast<std::size_t>(server));
  if (!to)
    return fail(self, errc::peer_down,
                "the scheduler moved the shards of " + node_name(st.plan, lost) + " to "
                  + node_name(st.plan, server) + ", which this worker has no channel to");
  std::size_t moved = 0;
  for (auto& [actor, relay] : *r.relays)
    if (st.plan.actors[actor].node == lost) {
      self->send(relay, repoint_atom::value,
                 spawn_push_target_proxy(self->system(), to,
                                         static_cast<std::uint32_t>(st.plan.actors[actor].shard)));
      ++moved;
    }
  log_node_line(*st.options, st.label + ": pushes for " + shard_names(st.plan, lost) + " go to "
                               + node_name(st.plan, server) + " now (their backups, promoted; "
                               + std::to_string(moved) + " route" + (moved == 1 ? "" : "s")
                               + " re-pointed)");
}

std::string backup_actor_name(const member_state& st, const caf::actor_addr& source) {
  for (const auto& [actor, name] : st.backup.backup_actors)
    if (actor.address() == source)
      return name;
  return "";
}

} // namespace troupe
