// The scheduler node (cluster_node.hpp). One actor keeps the run's bookkeeping: who joined,
// which plan node each member got, who is ready; once everyone is, a training session spawns
// the scheduler's part of the plan (coordinator, metrics) with proxies for the computes
// and shards on the members. Servers are assigned first and say where they listen in their
// ready; workers are assigned only then, with those endpoints, so a worker never pushes to a
// server that is not serving yet.
//
// The actor is a state machine (scheduler_phase, troupe/cluster/node_control.hpp) driven by
// typed node-control messages from its links: joining -> servers_assigned -> workers_assigned
// -> training -> ending, with `failing` between training and ending when the session fails
// with a lost peer before the loss itself has been reported: the loss names the node and
// when, so the run ends with it; no timing orders the two (links report a loss before they
// fail anything, and a member that stops for a lost peer names it in its goodbye).
//
// Every member link is watched from its join on: a link that ends before the run has
// finished is a lost node and ends the run. Whichever way the run ends, the members are
// told (a shutdown frame, `finished` or with the reason) and the answer waits until their
// links have closed (at most the clocks' goodbye_grace), so the frames are out before the process
// exits.
#include <troupe/cluster/cluster_node.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <unistd.h>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/node_part.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/cluster/frame_codec.hpp>
#include <troupe/cluster/job_difference.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/cluster/remote_proxies.hpp>
#include <troupe/graph/value_hash.hpp>
#include <troupe/io/dataset.hpp>

#include "node_common.hpp"
#include "scheduler_state.hpp"

namespace troupe {

namespace {

int expected(const scheduler_state& st, node_kind role) {
  return role == node_kind::server ? st.job.nodes.servers : st.job.nodes.workers;
}

int count(const scheduler_state& st, node_kind role, bool ready_only = false) {
  return static_cast<int>(
    std::count_if(st.members.begin(), st.members.end(), [&](const member_entry& m) {
      return m.role == role && !m.spare && (!ready_only || m.ready);
    }));
}

// "1/2 workers joined, 1/1 servers joined; waiting for worker 1"
std::string progress_text(const scheduler_state& st) {
  std::string text;
  std::string waiting;
  for (auto role : {node_kind::server, node_kind::worker}) {
    const bool joining = st.at == scheduler_phase::joining;
    const int have = count(st, role, !joining), want = expected(st, role);
    text += (text.empty() ? "" : ", ") + std::to_string(have) + "/" + std::to_string(want) + " "
            + to_string(role) + "s " + (joining ? "joined" : "ready");
    for (int rank = 0; waiting.empty() && rank < want; ++rank) {
      const bool there =
        std::any_of(st.members.begin(), st.members.end(), [&](const member_entry& m) {
          return m.role == role && m.rank == rank && (joining || m.ready);
        });
      if (!there)
        waiting = std::string(to_string(role)) + " " + std::to_string(rank);
    }
  }
  return waiting.empty() ? text : text + "; waiting for " + waiting;
}

void answer_if_done(scheduler_actor self, bool grace_over);

// Tells every member still there how the run ends, then answers once their links have closed
// (or the grace is over).
void end_run(scheduler_actor self, caf::expected<training_result> outcome) {
  auto& st = self->state;
  if (st.at == scheduler_phase::ending)
    return;
  // The epoch's traffic so far still reaches the metrics; an open question hears that the
  // run fails, so the coordinator starts no other phase.
  end_gathering(self, outcome ? caf::error{} : outcome.error());
  st.at = scheduler_phase::ending;
  if (!outcome) {
    // Most reasons already name the scheduler ("scheduler: lost worker 1 ..."): said once.
    auto why = reason_text(self->system(), outcome.error());
    if (why.rfind("scheduler: ", 0) == 0)
      why.erase(0, 11);
    log_node_line(*st.options, "scheduler: the run failed: " + why);
  }
  shutdown_message end;
  end.finished = static_cast<bool>(outcome);
  end.reason = end.finished ? "the run finished" : reason_text(self->system(), outcome.error());
  // A finished run ends the workers first: a server that left earlier would look lost to a
  // worker that has not heard the end yet. The servers follow once the workers are gone.
  for (auto& m : st.members)
    if (!m.gone && (!end.finished || m.role == node_kind::worker))
      caf::anon_send(m.to, goodbye_atom::value, end);
  st.servers_told = !end.finished;
  if (st.session)
    self->send_exit(st.session, caf::exit_reason::user_shutdown);
  st.outcome = std::move(outcome);
  self->delayed_send(self, st.options->clocks().goodbye_grace(), grace_over_atom::value);
  answer_if_done(self, false); // at once when no member is left to hear it
}

void answer_if_done(scheduler_actor self, bool grace_over) {
  auto& st = self->state;
  if (!st.outcome)
    return;
  auto gone = [&](node_kind role) {
    return std::all_of(st.members.begin(), st.members.end(),
                       [&](auto& m) { return m.role != role || m.gone; });
  };
  if (!st.servers_told && (gone(node_kind::worker) || grace_over)) {
    st.servers_told = true;
    for (auto& m : st.members)
      if (!m.gone && m.role == node_kind::server)
        caf::anon_send(m.to, goodbye_atom::value, shutdown_message{"the run finished", true});
    if (grace_over) // the servers get a grace of their own
      return (void)self->delayed_send(self, st.options->clocks().goodbye_grace(),
                                      grace_over_atom::value);
  }
  if (!st.promise.pending())
    return;
  const bool all_gone = gone(node_kind::worker) && gone(node_kind::server);
  if (!all_gone && !grace_over)
    return;
  if (*st.outcome)
    st.promise.deliver(std::move(**st.outcome));
  else
    st.promise.deliver(st.outcome->error());
  if (st.listener)
    self->send_exit(st.listener, caf::exit_reason::user_shutdown);
  self->quit();
}

// A loss that explains the failure the scheduler is waiting on (failing) ends the run with it.

void fail(scheduler_actor self, errc code, const std::string& why) {
  end_run(self, make_error(code, why));
}

// The session failed. A peer_down there is the echo of a lost link (a remote compute's
// request failed with it); the loss itself reaches this actor too, from the scheduler's own
// link to that node or from a member that lost it (its goodbye names it), and it names the
// node and when. So unless a loss has been reported already, the scheduler waits for it
// (failing), at most the connection timeout, within which every lost link is noticed.
void on_session_failed(scheduler_actor self, caf::error err) {
  auto& st = self->state;
  if (st.at == scheduler_phase::ending || st.at == scheduler_phase::failing)
    return;
  const bool loss_known =
    std::any_of(st.members.begin(), st.members.end(), [](auto& m) { return m.gone; });
  if (troupe_code(err) != errc::peer_down || loss_known)
    return end_run(self, std::move(err));
  // The run is failing whatever the cause turns out to be: an open question hears it now.
  end_gathering(self, err);
  st.at = scheduler_phase::failing;
  st.unexplained = std::move(err);
  self->delayed_send(self, st.options->connection_timeout + st.options->heartbeat_interval,
                     cause_due_atom::value);
}

// "compute threads: worker_0 2, worker_1 2 (as the scheduler was given)": what each worker's
// computes run on, which the final weights depend on (docs/threads.md).
std::string threads_text(const scheduler_state& st) {
  std::string text;
  for (const auto& m : st.members)
    if (m.role == node_kind::worker && m.node >= 0) // (a spare has no node)
      text += (text.empty() ? "" : ", ") + st.plan.nodes.at(static_cast<std::size_t>(m.node)).name
              + " " + std::to_string(m.threads);
  return "compute threads: " + text
         + (st.options->threads > 0 ? " (--threads or train.threads given to the scheduler)"
                                    : " (each worker's own or its share of its host)");
}

// A member is lost (`what` says which and why): the run goes on without it, or ends naming it.
void on_member_lost(scheduler_actor self, member_entry& m, const std::string& what);

} // namespace

void start_training(scheduler_actor self) {
  auto& st = self->state;
  st.at = scheduler_phase::training;
  if (st.resumed_run)
    log_node_line(*st.options, "scheduler: " + threads_text(st) + "; training");
  else
    log_node_line(*st.options, "scheduler: every node is ready (" + progress_text(st) + "); "
                                 + threads_text(st) + "; training");
  // Each plan node's link: its member's, or (a scheduler restarted after losses) the member's
  // that adopted its computes or promoted its shards.
  std::vector<channel_actor> link_of_node(st.plan.nodes.size());
  for (auto& m : st.members) {
    if (m.node >= 0) // (a spare has no node)
      link_of_node.at(static_cast<std::size_t>(m.node)) = m.link;
    for (auto n : m.adopted_nodes)
      link_of_node.at(static_cast<std::size_t>(n)) = m.link;
    for (auto n : m.promoted_nodes)
      link_of_node.at(static_cast<std::size_t>(n)) = m.link;
  }
  auto& system = self->system();
  const auto plan = st.plan;
  session_sinks sinks;
  sinks.output = st.output;
  sinks.metrics = st.metrics;
  sinks.between_epochs = epoch_gate_actor{self}; // each epoch's traffic is read while no step runs
  sinks.timeouts = st.options->timeouts;
  sinks.node.node = 0;
  sinks.node.train_data = st.train_set;
  sinks.node.validation_data = st.validation_set;
  sinks.node.resume_at_epoch = st.resume_epoch;
  // With on_worker_loss = adopt the coordinator drives each remote compute through a relay
  // the scheduler can re-point (scheduler_adoption.cpp); spawned here, before the session asks.
  if (st.job.nodes.adopt_on_worker_loss)
    for (auto c : plan.actors_of(plan_role::compute)) {
      const auto& a = plan.actors.at(c);
      st.relays[c] = spawn_compute_relay(
        system, spawn_compute_proxy(system, link_of_node.at(static_cast<std::size_t>(a.node)),
                                    static_cast<std::uint32_t>(a.worker)));
    }
  sinks.node.remote.compute = [=, &system, relays = st.relays](std::size_t actor) -> compute_actor {
    const auto& a = plan.actors.at(actor);
    if (auto relay = relays.find(actor); relay != relays.end())
      return relay->second;
    return spawn_compute_proxy(system, link_of_node.at(static_cast<std::size_t>(a.node)),
                               static_cast<std::uint32_t>(a.worker));
  };
  // With replicas = 2 the session reaches each shard through a relay the scheduler can
  // re-point at the shard's promoted backup (scheduler_promotion.cpp).
  if (st.job.nodes.replicas > 1)
    for (auto s : plan.actors_of(plan_role::shard)) {
      const auto& a = plan.actors.at(s);
      st.shard_relays[s] = spawn_push_relay(
        system,
        spawn_push_target_proxy(system, link_of_node.at(static_cast<std::size_t>(a.node)),
                                static_cast<std::uint32_t>(a.shard)),
        a.name);
    }
  sinks.node.remote.push_target =
    [=, &system, relays = st.shard_relays](std::size_t actor) -> push_target_actor {
    const auto& a = plan.actors.at(actor);
    if (auto relay = relays.find(actor); relay != relays.end())
      return caf::actor_cast<push_target_actor>(relay->second);
    return spawn_push_target_proxy(system, link_of_node.at(static_cast<std::size_t>(a.node)),
                                   static_cast<std::uint32_t>(a.shard));
  };
  sinks.node.remote.checkpoint_part = [=, &system](int node) {
    return spawn_checkpoint_part_proxy(system, link_of_node.at(static_cast<std::size_t>(node)));
  };
  st.session = st.spawn_session(system, st.job, std::move(sinks));
  self->monitor(st.session);
  self->attach_functor(
    [session = st.session, relays = st.relays, shard_relays = st.shard_relays](const caf::error&) {
      caf::anon_send_exit(session, caf::exit_reason::user_shutdown);
      for (const auto& [actor, relay] : relays)
        caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
      for (const auto& [actor, relay] : shard_relays)
        caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
    });
  // Saturating: 48 h times the phases of a long run passes what a timespan holds.
  self
    ->request(st.session, phases_limit(st.options->timeouts, st.job.epochs * 2 + 2),
              run_atom::value)
    .then([=](training_result& r) { end_run(self, std::move(r)); },
          [=](caf::error& err) { on_session_failed(self, std::move(err)); });
}

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
  st.at = role == node_kind::server ? scheduler_phase::servers_assigned
                                    : scheduler_phase::workers_assigned;
  // Workers learn where every server listens; with replicas = 2 the servers too, from their
  // joins, since each links to the next (member_replicas.cpp).
  std::vector<endpoint> servers;
  if (role == node_kind::worker || st.job.nodes.replicas > 1) {
    for (auto& m : st.members)
      if (m.role == node_kind::server && m.port == 0)
        return fail(self, errc::bad_request,
                    "scheduler: " + m.name()
                      + " said no port when it joined, and with "
                        "replicas = 2 the other servers link to it before it is ready");
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
std::string settle_server_host(const cluster_node_options& options,
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

// Why a join on `link` is refused whatever the role and phase ("" if it is not): a second join
// on one link, or another job than the scheduler's.
std::string refusal_of_join(scheduler_state& st, const channel_actor& link,
                            const join_message& join) {
  if (member_of(st, link.address()))
    return "it joined twice";
  if (join.job_hash != 0 && join.job_hash != job_hash_without_counts(st.job))
    return other_job_text(st.job, join);
  return "";
}

// A member for a join on `link` (no rank nor node yet), watched and listed.
member_entry& add_member(scheduler_actor self, const channel_actor& link,
                         const join_message& join) {
  auto& st = self->state;
  member_entry m;
  m.link = link;
  m.to = spawn_member_control_proxy(self->system(), link);
  m.role = join.role;
  m.host = join.host;
  m.port = join.port; // a server's port bound before it joined (0: it listens once assigned)
  m.seen_from = join.seen_from;
  m.pid = join.pid;
  self->monitor(link);
  st.members.push_back(m);
  return st.members.back();
}

namespace {

// A spare worker (launch --spares, node --spare, or any worker joining a run in training): kept
// unassigned until a worker is lost, when it takes the lost node (scheduler_adoption.cpp).
template <class Refuse>
void join_spare(scheduler_actor self, const channel_actor& link, const join_message& join,
                Refuse refuse) {
  auto& st = self->state;
  if (st.at != scheduler_phase::joining && st.at != scheduler_phase::servers_assigned
      && st.at != scheduler_phase::workers_assigned && st.at != scheduler_phase::training)
    return refuse("the run is ending");
  if (auto why = refusal_of_join(st, link, join); !why.empty())
    return refuse(why);
  auto& m = add_member(self, link, join);
  m.spare = true;
  log_node_line(
    *st.options,
    "scheduler: " + m.name() + " joined as a spare; "
      + (st.job.nodes.adopt_on_worker_loss
           ? "it takes the place of the first worker lost in training (on_worker_loss = adopt)"
           : std::string("it stays idle: on_worker_loss is ") + worker_loss_policy(st.job.nodes)
               + ", not adopt"));
}

void on_join(scheduler_actor self, const channel_actor& link, const join_message& join) {
  auto& st = self->state;
  auto refuse = [&](const std::string& why) {
    log_node_line(*st.options, "scheduler: refused a " + std::string(to_string(join.role))
                                 + " (pid " + std::to_string(join.pid) + " on " + join.host
                                 + "): " + why);
    caf::anon_send(spawn_member_control_proxy(self->system(), link), goodbye_atom::value,
                   shutdown_message{"refused by the scheduler: " + why, false});
  };
  if (join.role == node_kind::scheduler)
    return refuse("a scheduler cannot join another scheduler");
  if (join.rejoin || st.options->resume) {
    if (auto why = refusal_of_rejoin(st, link, join); !why.empty())
      return refuse(why);
    if (join.rejoin)
      return on_rejoin(self, link, join);
  }
  if (join.role == node_kind::worker && (join.spare || st.at == scheduler_phase::training))
    return join_spare(self, link, join, refuse);
  if (st.at != scheduler_phase::joining)
    return refuse("the run has started");
  if (auto why = refusal_of_join(st, link, join); !why.empty())
    return refuse(why);
  const int have = count(st, join.role), want = expected(st, join.role);
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
  auto& m = add_member(self, link, join);
  m.rank = rank;
  m.node = plan_node_of(st.plan, join.role, rank);
  log_node_line(
    *st.options,
    "scheduler: " + m.name() + " joined"
      + (m.role == node_kind::server ? " (to listen for workers on " + m.host + ")" : "") + "; "
      + progress_text(st));
  if (count(st, node_kind::server) == st.job.nodes.servers
      && count(st, node_kind::worker) == st.job.nodes.workers) {
    for (auto& server : st.members)
      if (server.role == node_kind::server) {
        const auto why = settle_server_host(*st.options, st.members, server);
        if (!why.empty())
          return fail(self, errc::bad_request, "scheduler: " + why);
      }
    assign(self, node_kind::server);
  }
}

void on_ready(scheduler_actor self, const channel_actor& link, const ready_message& ready) {
  auto& st = self->state;
  auto* m = member_of(st, link.address());
  if (m && !m->gone && (on_adopted(self, *m, ready) || on_promoted(self, *m, ready)))
    return;
  const auto expected_phase = m && m->role == node_kind::server ? scheduler_phase::servers_assigned
                                                                : scheduler_phase::workers_assigned;
  if (!m || m->ready || st.at != expected_phase
      || ready.node != static_cast<std::uint32_t>(m->node))
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
  if (count(st, m->role, true) < expected(st, m->role))
    return;
  if (m->role == node_kind::server)
    assign(self, node_kind::worker);
  else
    start_training(self);
}

// Whether the run goes on without member `m` (a worker lost during training of a job that
// says so, with another worker left); logs it if so. The coordinator drops its computes when
// their requests fail.
bool goes_on_without(scheduler_actor self, const member_entry& m, const std::string& what) {
  auto& st = self->state;
  if (m.role != node_kind::worker || !st.job.nodes.continue_on_worker_loss
      || st.at != scheduler_phase::training)
    return false;
  const bool others = std::any_of(st.members.begin(), st.members.end(),
                                  [](auto& o) { return o.role == node_kind::worker && !o.gone; });
  if (!others)
    return false;
  log_node_line(*st.options, "scheduler: " + m.name() + ": " + what
                               + "; the run goes on without it (on_worker_loss = continue)");
  end_gathering_if_complete(self); // it may have been the last one to answer
  return true;
}

// The member on `link` stops and says why. A member that stopped because it lost a peer
// names that peer's plan node: the run ends naming the lost node, whichever report came first.
void on_goodbye(scheduler_actor self, const channel_actor& link, const shutdown_message& end) {
  auto& st = self->state;
  auto* m = member_of(st, link.address());
  if (!m || m->gone)
    return; // a node that never joined: nothing of the run is lost
  if (st.at == scheduler_phase::ending) {
    m->gone = true;
    return answer_if_done(self, false);
  }
  m->gone = true;
  if (m->spare && m->node < 0) {
    log_node_line(*st.options, "scheduler: " + m->name() + " stopped: " + end.reason
                                 + "; a spare, it held nothing: the run goes on");
    return;
  }
  if (goes_on_without(self, *m, "stopped: " + end.reason))
    return;
  for (auto& lost : st.members)
    if (end.lost_node >= 0 && lost.node == end.lost_node && &lost != m)
      return fail(self, errc::peer_down,
                  "scheduler: lost " + lost.name() + " at " + clock_time_now() + " (" + m->name()
                    + " lost it: " + end.reason + ")");
  fail(self, errc::peer_down, "scheduler: " + m->name() + " stopped: " + end.reason);
}

void on_member_lost(scheduler_actor self, member_entry& m, const std::string& what) {
  m.gone = true;
  if (m.spare && m.node < 0) { // it held nothing
    log_node_line(*self->state.options,
                  "scheduler: " + what + "; a spare, it held nothing: the run goes on");
    return;
  }
  if (goes_on_without(self, m, what))
    return;
  const auto not_adopted = m.role == node_kind::server ? promote_lost_server(self, m, what)
                                                       : adopt_lost_worker(self, m, what);
  if (not_adopted.empty())
    return;
  fail(
    self, errc::peer_down,
    "scheduler: " + what
      + (not_adopted == "stop"
           ? ""
           : (m.role == node_kind::server ? "; not promoted: " : "; not adopted: ") + not_adopted));
}

// The link of a member ended (`why`; empty: normally), reported by the link itself before it
// failed anything, or seen as the link actor's down.
void on_link_lost(scheduler_actor self, const caf::actor_addr& link, const caf::error& why) {
  auto& st = self->state;
  auto* m = member_of(st, link);
  if (!m)
    return; // a node that never joined: nothing of the run is lost
  if (st.at == scheduler_phase::ending) {
    m->gone = true;
    return answer_if_done(self, false);
  }
  if (m->gone)
    return;
  on_member_lost(self, *m,
                 "lost " + m->name() + " at " + clock_time_now() + ": "
                   + reason_text(self->system(), why));
}

void on_down(scheduler_actor self, const caf::down_msg& down) {
  auto& st = self->state;
  if (st.session && down.source == st.session.address())
    return fail(self, errc::internal,
                "scheduler: the training session terminated: "
                  + reason_text(self->system(), down.reason));
  on_link_lost(self, down.source, down.reason);
}

void write_port_file(const std::string& path, std::uint16_t port);

// Listens (its links check what arrives against the plan's keys and pass node-level messages
// here), then waits for the members until the join deadline.
void start_listening(scheduler_actor self) {
  auto& st = self->state;
  const auto& options = *st.options;
  auto link = channel_options_of(options, "scheduler", st.traffic);
  link.role = node_kind::scheduler;
  link.plan_hash = st.plan.hash;
  link.keys = wire_keys_of(st.plan);
  link.priority = st.job.topology.priority;
  link.order = forward_order_of(st.plan);
  link.serving->set<remote_interface::metrics_sink>(
    0, metrics_sink_actor{st.metrics}); // workers' reports
  link.serving->set<remote_interface::scheduler_control>(0, scheduler_inbox{self});
  auto listener =
    spawn_listener(self->system(), options.scheduler_host, options.scheduler_port, link);
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

scheduler_node_actor::behavior_type scheduler(scheduler_actor self, scheduler_setup setup) {
  auto& st = self->state;
  st.options.emplace(std::move(setup.options));
  st.job = std::move(setup.job);
  st.output = std::move(setup.output);
  st.plan = std::move(setup.plan);
  st.facts = setup.facts;
  st.metrics = std::move(setup.metrics);
  st.train_set = std::move(setup.train_set);
  st.validation_set = std::move(setup.validation_set);
  st.spawn_session = std::move(setup.spawn_session);
  st.job_bytes = job_bytes(st.job);
  st.job_hash = job_hash(st.job);
  self->set_down_handler([=](caf::down_msg& down) { on_down(self, down); });
  // A message outside the protocol (a bug, or a peer of another version): named, then dropped.
  self->set_default_handler(
    [=](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
      log_node_line(*self->state.options,
                    "scheduler: ignored a message outside the node-control protocol: "
                      + caf::to_string(x.content()));
      return caf::none;
    });
  if (setup.listen)
    start_listening(self);
  else
    self->delayed_send(self, st.options->join_timeout, join_deadline_atom::value);
  // Whatever ends the scheduler ends its listener (and with it every member link) and the
  // session. The functor runs after the state is gone: it holds its own handles.
  self->attach_functor([listener = st.listener](const caf::error&) {
    if (listener)
      caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
  });
  return {
    [=](run_atom) -> caf::result<training_result> {
      auto& st = self->state;
      st.promise = self->make_response_promise<training_result>();
      auto promise = st.promise;
      if (st.outcome) // the run ended before anyone asked
        answer_if_done(self, true);
      return promise;
    },
    [=](join_atom, channel_actor& link, join_message& join) {
      if (self->state.at != scheduler_phase::ending)
        on_join(self, link, join);
    },
    [=](ready_atom, channel_actor& link, ready_message& ready) {
      if (self->state.at != scheduler_phase::ending)
        on_ready(self, link, ready);
    },
    [=](traffic_atom, channel_actor& link, traffic_message& traffic) {
      on_traffic(self, link, traffic);
    },
    [=](goodbye_atom, channel_actor& link, shutdown_message& end) { on_goodbye(self, link, end); },
    [=](link_lost_atom, channel_actor& link, caf::error& why) {
      on_link_lost(self, link.address(), why);
    },
    [=](join_deadline_atom) {
      if (self->state.at < scheduler_phase::training)
        fail(self, errc::timeout,
             "scheduler: gave up after "
               + std::to_string(self->state.options->join_timeout.count() / 1000)
               + " s (--join-timeout): "
               + (self->state.resumed_run ? rejoin_progress(self->state)
                                          : progress_text(self->state)));
    },
    [=](grace_over_atom) { answer_if_done(self, true); },
    [=](cause_due_atom) {
      // No loss was reported within the connection timeout: the failure stands as it came.
      if (self->state.at == scheduler_phase::failing)
        end_run(self, std::move(self->state.unexplained));
    },
    // The session's gate between epochs: the epoch's traffic (scheduler_traffic.cpp).
    [=](epoch_done_atom, std::int64_t epoch, deadline due) {
      return on_epoch_done(self, epoch, due);
    },
    [=](traffic_due_atom, std::int64_t serial) { on_traffic_due(self, serial); },
    // The host was interrupted (Ctrl-C): every member hears why in its goodbye.
    [=](interrupt_atom, std::string& why) { fail(self, errc::peer_down, "scheduler: " + why); },
  };
}

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

void scheduler_interrupt::arm(caf::actor_system& system, caf::actor scheduler) {
  std::lock_guard<std::mutex> lock(mutex_);
  system_ = &system;
  scheduler_ = std::move(scheduler);
}

void scheduler_interrupt::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  system_ = nullptr;
  scheduler_ = caf::actor{};
}

bool scheduler_interrupt::interrupted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return interrupted_;
}

void scheduler_interrupt::interrupt(const std::string& why, std::chrono::milliseconds bound) {
  caf::actor scheduler;
  caf::actor_system* system = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
    scheduler = scheduler_;
    system = system_;
  }
  if (!scheduler || !system)
    return;
  caf::scoped_actor waiting{*system};
  waiting->monitor(scheduler);
  waiting->send(scheduler, interrupt_atom::value, why);
  waiting->receive([](const caf::down_msg&) {}, caf::after(bound) >> [] {});
}

scheduler_node_actor spawn_scheduler_node(caf::actor_system& system, scheduler_setup setup) {
  return system.spawn(scheduler, std::move(setup));
}

training_result run_scheduler(caf::actor_system& system, const training_job& job,
                              const cluster_node_options& options, const session_output& output) {
  check_job(job);
  if (job.nodes.servers < 1 || job.nodes.workers < 1)
    throw std::invalid_argument(
      "scheduler: the job names no server and worker processes "
      "(cluster.server_nodes / worker_nodes, --server-nodes / --worker-nodes)");
  // Plan before anyone joins: the assignments carry the plan's hash and data facts.
  auto train_set = open_dataset(job.train_data);
  auto validation_set = open_dataset(job.validation_data);
  const auto facts = data_facts_of(*train_set, *validation_set);
  auto plan = plan_placement(job, facts);
  auto metrics_options = metrics_options_of(job, output);
  metrics_options.validation_examples =
    facts.validation_examples; // a lost worker's part goes unvalidated
  auto metrics = spawn_metrics(system, std::move(metrics_options));
  auto node =
    spawn_scheduler_node(system, scheduler_setup{options, job, output, std::move(plan), facts,
                                                 metrics, train_set, validation_set});
  caf::scoped_actor blocking{system};
  if (options.interrupt)
    options.interrupt->arm(system, caf::actor_cast<caf::actor>(node));
  // The scheduler's own deadlines (join, every epoch) end the run first; this bound only
  // keeps a bug from hanging the process.
  const auto bound = options.join_timeout * 2 + phases_limit(options.timeouts, job.epochs * 2 + 4);
  std::optional<training_result> result;
  caf::error failure;
  blocking->request(node, bound, run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  blocking->send_exit(node, caf::exit_reason::user_shutdown);
  blocking->wait_for(node);
  blocking->send_exit(metrics, caf::exit_reason::user_shutdown);
  blocking->wait_for(metrics);
  if (options.interrupt) {
    options.interrupt->disarm();
    if (options.interrupt->interrupted())
      throw run_interrupted();
  }
  if (!result)
    throw troupe_error(troupe_code(failure), error_text(failure));
  return std::move(*result);
}

} // namespace troupe
