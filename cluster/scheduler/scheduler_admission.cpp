// How the scheduler admits its members (scheduler_state.hpp): it listens, takes each join
// (refusing a second join on one channel, another job, a rank taken), settles where workers reach
// each server, assigns the servers their places and, once they are ready, the workers; the
// last ready starts training. A spare waits unassigned for a lost worker's place.
#include <troupe/cluster/cluster_node.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/frame_codec.hpp>
#include <troupe/cluster/job_difference.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/cluster/remote_proxies.hpp>
#include <troupe/graph/value_hash.hpp>

#include "cluster/node_common.hpp"
#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

int plan_node_of(const placement_plan& plan, node_kind role, int rank) {
  const auto kind = role == node_kind::server ? node_kind::server : node_kind::worker;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == kind && plan.nodes[n].rank == rank)
      return static_cast<int>(n);
  throw std::logic_error("scheduler: the plan has no " + std::string(to_string(role)) + " "
                         + std::to_string(rank));
}

void assign(scheduler_actor self, node_kind role) {
  auto& st = self->state;
  if (role == node_kind::server)
    st.phase.enter(scheduler_phases::servers_assigned{});
  else
    st.phase.enter(scheduler_phases::workers_assigned{});
  // Workers learn where every server listens; with shard_backups = 1 the servers too, from their
  // joins, since each channels to the next (member_backups.cpp).
  std::vector<endpoint> servers;
  if (role == node_kind::worker || st.job.nodes.shard_backups > 0) {
    for (auto& m : st.members)
      if (m.role == node_kind::server && m.port == 0)
        return fail(self, errc::bad_request,
                    "scheduler: " + m.name()
                      + " said no port when it joined, and with "
                        "shard_backups = 1 the other servers connect to it before it is ready");
    servers = server_endpoints(st);
  }
  for (auto& m : st.members)
    if (m.role == role && !m.spare)
      caf::anon_send(m.to, assignment_atom::value, assignment_for(st, m, servers));
}

} // namespace

std::vector<endpoint> server_endpoints(const scheduler_state& st) {
  std::vector<endpoint> servers;
  for (const auto& m : st.members)
    if (m.role == node_kind::server)
      servers.push_back({static_cast<std::uint32_t>(m.node), m.host, m.port});
  return servers;
}

assignment_message assignment_for(const scheduler_state& st, const member_entry& m,
                                  std::vector<endpoint> servers) {
  assignment_message a;
  a.rank = static_cast<std::uint32_t>(m.rank);
  a.node = static_cast<std::uint32_t>(m.node);
  a.job = st.job_bytes;
  a.job_hash = st.job_hash;
  a.plan_hash = st.plan.hash;
  a.facts = st.facts;
  a.servers = std::move(servers);
  a.threads = static_cast<std::uint32_t>(std::max(0, st.options->threads));
  a.term = m.term;
  if (m.join_sent > 0) // the member's clock offset is reckoned from this round trip
    a.clock = {m.join_sent, m.join_received, timeline_clock_micros(st.options->timeline.get())};
  return a;
}

namespace {

// Why a node's own config is not the scheduler's job: the keys that differ when its join
// carried the job, the hashes as `troupe check` prints them.
std::string other_job_text(const training_job& ours, const join_message& join) {
  std::string text = "its config resolves to another job (hash " + hash_text(join.job_hash)
                     + ", the scheduler's " + hash_text(job_hash_without_counts(ours)) + ")";
  if (!join.job.empty()) {
    try {
      text += ": "
              + difference_text(job_differences(joined_job_from_bytes(join.job, join.job_hash),
                                                ours, "the scheduler's"));
    } catch (const std::exception& e) {
      text += std::string(" (its job does not read: ") + e.what() + ")";
    }
  }
  return text + "; start every node with the same config and flags";
}

// Whether two members run on one host, as far as the addresses their connections came from
// tell: the same address, or both this host's loopback.
bool same_host(const member_entry& a, const member_entry& b) {
  const auto x = host_of_address(a.seen_from), y = host_of_address(b.seen_from);
  return x == y || (is_loopback_host(x) && is_loopback_host(y));
}

// Where workers reach `server`: the address it advertised. A wildcard one (--listen 0.0.0.0
// without --advertise) becomes the address its connection came from when that is no loopback.
// Returns why a worker cannot reach it (an address of another host's loopback, or a wildcard
// seen only through loopback), or "".
std::string settle_server_host(const scheduler_options& options,
                               const std::vector<member_entry>& members, member_entry& server) {
  const auto seen = host_of_address(server.seen_from);
  if (is_wildcard_host(server.host) && !seen.empty() && !is_loopback_host(seen)) {
    log_node_line(options, "scheduler: " + server.name() + " listens on "
                             + (server.host.empty() ? "any address" : server.host)
                             + "; workers will reach it at " + seen + ", the address it came from");
    server.host = seen;
    return "";
  }
  if (!is_wildcard_host(server.host) && !is_loopback_host(server.host))
    return "";
  for (const auto& worker : members)
    if (worker.role == node_kind::worker && !same_host(worker, server))
      return server.name() + " said it listens on "
             + (server.host.empty() ? "no address" : server.host) + ", which " + worker.name()
             + ", on another host, cannot reach: start the server with --listen ADDRESS "
               "(an address of its host the workers reach, or 0.0.0.0 for all of them) or "
               "--advertise ADDRESS";
  return "";
}

} // namespace

// Why a join on `channel` is refused whatever the role and phase ("" if it is not): a second join
// on one channel, or another job than the scheduler's.
std::string refusal_of_join(scheduler_state& st, const channel_actor& channel,
                            const join_message& join) {
  if (member_of(st, channel.address()))
    return "it joined twice";
  if (join.job_hash != 0 && join.job_hash != job_hash_without_counts(st.job))
    return other_job_text(st.job, join);
  return "";
}

// A member for a join on `channel` (no rank nor node yet), watched and listed.
member_entry& add_member(scheduler_actor self, const channel_actor& channel,
                         const join_message& join) {
  auto& st = self->state;
  member_entry m;
  m.channel = channel;
  m.to = spawn_member_control_proxy(self->system(), channel);
  m.role = join.role;
  m.host = join.host;
  m.port = join.port; // a server's port bound before it joined (0: it listens once assigned)
  m.seen_from = join.seen_from;
  m.pid = join.pid;
  m.join_sent = join.sent_micros;
  m.join_received = timeline_clock_micros(st.options->timeline.get());
  // A member rejoining a restarted scheduler keeps the term its first assignment gave it.
  const auto kept = join.rejoin ? join.rejoin->term : 0;
  m.term = kept != 0 ? kept : ++st.last_term;
  st.last_term = std::max(st.last_term, m.term);
  self->monitor(channel);
  st.members.push_back(m);
  return st.members.back();
}

namespace {

// A spare worker (launch --spares, node --spare, or any worker joining a run in training): kept
// unassigned until a worker is lost, when it takes the lost node (scheduler_adoption.cpp).
template <class Refuse>
void join_spare(scheduler_actor self, const channel_actor& channel, const join_message& join,
                Refuse refuse) {
  auto& st = self->state;
  if (!st.phase.is<scheduler_phases::joining>()
      && !st.phase.is<scheduler_phases::servers_assigned>()
      && !st.phase.is<scheduler_phases::workers_assigned>()
      && !st.phase.is<scheduler_phases::training>())
    return refuse("the run is ending");
  if (auto why = refusal_of_join(st, channel, join); !why.empty())
    return refuse(why);
  auto& m = add_member(self, channel, join);
  m.spare = true;
  record_member_event(st, "admitted", m);
  log_node_line(
    *st.options,
    "scheduler: " + m.name() + " joined as a spare; "
      + (st.job.nodes.adopt_on_worker_loss
           ? "it takes the place of the first worker lost in training (on_worker_loss = adopt)"
           : std::string("it stays idle: on_worker_loss is ") + worker_loss_policy(st.job.nodes)
               + ", not adopt"));
  if (st.phase.is<scheduler_phases::training>())
    take_for_joiner(self, m);
}

} // namespace

void on_join(scheduler_actor self, const channel_actor& channel, const join_message& join) {
  auto& st = self->state;
  auto refuse = [&](const std::string& why) {
    log_node_line(*st.options, "scheduler: refused a " + std::string(to_string(join.role))
                                 + " (pid " + std::to_string(join.pid) + " on " + join.host
                                 + "): " + why);
    record_event(st.options->events, "refused",
                 {{{"member_pid", static_cast<double>(join.pid)}},
                  {{"member_role", to_string(join.role)}, {"host", join.host}, {"reason", why}}});
    caf::anon_send(spawn_member_control_proxy(self->system(), channel), goodbye_atom::value,
                   shutdown_message{"refused by the scheduler: " + why, false});
  };
  if (join.role == node_kind::scheduler)
    return refuse("a scheduler cannot join another scheduler");
  if (join.rejoin || st.options->resume) {
    if (auto why = refusal_of_rejoin(st, channel, join); !why.empty())
      return refuse(why);
    if (join.rejoin)
      return on_rejoin(self, channel, join);
  }
  if (join.role == node_kind::worker && (join.spare || st.phase.is<scheduler_phases::training>()))
    return join_spare(self, channel, join, refuse);
  if (!st.phase.is<scheduler_phases::joining>())
    return refuse("the run has started");
  if (auto why = refusal_of_join(st, channel, join); !why.empty())
    return refuse(why);
  const int have = counted_members(st, join.role), want = expected_members(st, join.role);
  if (have >= want)
    return refuse("the run has its " + std::to_string(want) + " " + to_string(join.role)
                  + "s already");
  auto taken_by = [&](int rank) -> const member_entry* {
    for (auto& m : st.members)
      if (m.role == join.role && m.rank == rank)
        return &m;
    return nullptr;
  };
  int rank = join.rank;
  if (rank >= want)
    return refuse(std::string(to_string(join.role)) + " rank " + std::to_string(rank)
                  + " is not in 0.." + std::to_string(want - 1));
  if (rank >= 0 && taken_by(rank))
    return refuse(std::string(to_string(join.role)) + " rank " + std::to_string(rank)
                  + " is taken by " + taken_by(rank)->name());
  // Without a rank of its own a node takes the lowest free one (join order).
  for (rank = std::max(rank, 0); join.rank < 0 && taken_by(rank); ++rank) {
  }
  if (st.options->resume && !st.fresh_run) {
    st.fresh_run = true;
    log_node_line(
      *st.options,
      "scheduler: a node that had not begun training joined before any member of a run in "
      "training rejoined: the run starts afresh (its scheduler was lost before training)");
  }
  auto& m = add_member(self, channel, join);
  m.rank = rank;
  m.node = plan_node_of(st.plan, join.role, rank);
  log_node_line(
    *st.options,
    "scheduler: " + m.name() + " joined"
      + (m.role == node_kind::server ? " (to listen for workers on " + m.host + ")" : "") + "; "
      + progress_text(st));
  record_member_event(st, "admitted", m);
  if (counted_members(st, node_kind::server) == st.job.nodes.servers
      && counted_members(st, node_kind::worker) == st.job.nodes.workers) {
    for (auto& server : st.members)
      if (server.role == node_kind::server) {
        const auto why = settle_server_host(*st.options, st.members, server);
        if (!why.empty())
          return fail(self, errc::bad_request, "scheduler: " + why);
      }
    assign(self, node_kind::server);
  }
}

void on_ready(scheduler_actor self, const channel_actor& channel, const ready_message& ready) {
  auto& st = self->state;
  auto* m = member_of(st, channel.address());
  if (m && !m->gone && (on_adopted(self, *m, ready) || on_promoted(self, *m, ready)))
    return;
  const bool in_turn = m && m->role == node_kind::server
                         ? st.phase.is<scheduler_phases::servers_assigned>()
                         : st.phase.is<scheduler_phases::workers_assigned>();
  if (!m || m->ready || !in_turn || ready.node != static_cast<std::uint32_t>(m->node))
    return fail(self, errc::bad_request,
                "scheduler: " + (m ? m->name() : std::string("a node that did not join"))
                  + " reported ready out of turn (as node " + std::to_string(ready.node) + ")");
  if (m->role == node_kind::server && ready.port == 0)
    return fail(self, errc::bad_request,
                "scheduler: " + m->name() + " is ready but listens on no port");
  m->ready = true;
  m->port = ready.port;
  m->threads = static_cast<int>(ready.threads);
  log_node_line(*st.options,
                "scheduler: " + m->name() + " is ready"
                  + (ready.port
                       ? " (listening on " + m->host + ":" + std::to_string(ready.port) + ")"
                       : " (computes on " + std::to_string(ready.threads) + " thread"
                           + (ready.threads == 1 ? "" : "s") + ")")
                  + "; " + progress_text(st));
  record_member_event(st, "ready", *m, {{{"port", ready.port}, {"threads", ready.threads}}, {}});
  if (counted_members(st, m->role, true) < expected_members(st, m->role))
    return;
  if (m->role == node_kind::server)
    assign(self, node_kind::worker);
  else
    start_training(self);
}

namespace {

// Writes the port to `path` through a temporary file and a rename, so a reader never sees half.
void write_port_file(const std::string& path, std::uint16_t port) {
  const auto temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << port << '\n';
    if (!out)
      throw std::runtime_error("cannot write the port file " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + temporary + " to " + path);
}

} // namespace

// Listens (its channels check what arrives against the plan's keys and pass node-level messages
// here), then waits for the members until the join deadline.
void start_listening(scheduler_actor self) {
  auto& st = self->state;
  const auto& options = *st.options;
  auto channel = channel_options_of(options, node_kind::scheduler, "scheduler", st.traffic);
  channel.fences = st.fences;
  channel.plan_hash = st.plan.hash;
  channel.keys = wire_keys_of(st.plan);
  channel.priority = st.job.topology.priority;
  channel.order = forward_order_of(st.plan);
  channel.serving->set<remote_interface::metrics_sink>(
    0, metrics_sink_actor{st.metrics}); // workers' reports
  channel.serving->set<remote_interface::scheduler_control>(0, scheduler_inbox{self});
  channel.serving->set<remote_interface::run_control>(0, run_control_actor{self}); // troupe ctl
  auto listener =
    spawn_listener(self->system(), options.scheduler_host, options.scheduler_port, channel);
  if (!listener)
    return fail(self, errc::peer_down,
                "scheduler: " + reason_text(self->system(), listener.error()));
  st.listener = *listener;
  self->monitor(st.listener);
  self->delayed_send(self, options.join_timeout, join_deadline_atom::value);
  self->request(st.listener, options.clocks().port_wait(), port_atom::value)
    .then(
      [=](std::uint16_t port) {
        const auto& o = *self->state.options;
        if (o.resume)
          log_node_line(o,
                        "scheduler: restarted (--resume), listening on " + o.scheduler_host + ":"
                          + std::to_string(port)
                          + "; waiting for the run's servers and workers to rejoin (join timeout "
                          + std::to_string(o.join_timeout.count() / 1000) + " s)");
        else
          log_node_line(o, "scheduler: listening on " + o.scheduler_host + ":"
                             + std::to_string(port) + "; waiting for "
                             + std::to_string(self->state.job.nodes.servers) + " server(s) and "
                             + std::to_string(self->state.job.nodes.workers)
                             + " worker(s) (join timeout "
                             + std::to_string(o.join_timeout.count() / 1000) + " s)");
        record_event(
          o.events, "listening",
          {{{"port", port}}, {{"host", o.scheduler_host}, {"resumed", o.resume ? "yes" : "no"}}});
        try {
          if (!o.port_file.empty())
            write_port_file(o.port_file, port);
        } catch (const std::exception& e) {
          fail(self, errc::internal, std::string("scheduler: ") + e.what());
        }
      },
      [=](caf::error& err) {
        fail(self, errc::peer_down,
             "scheduler: cannot listen on " + self->state.options->scheduler_host + ":"
               + std::to_string(self->state.options->scheduler_port) + ": "
               + reason_text(self->system(), err));
      });
}

} // namespace troupe
