// The scheduler node (cluster_node.hpp). One actor keeps the run's bookkeeping: who joined,
// which plan node each member got, who is ready; once everyone is, a training session spawns
// the scheduler's part of the plan (coordinator, metrics) with proxies for the computes
// and shards on the members. Servers are assigned first and say where they listen in their
// ready; workers are assigned only then, with those endpoints, so a worker never pushes to a
// server that is not serving yet.
//
// The actor is a state machine (scheduler_phases.hpp: a type per phase, one table of moves)
// driven by typed node-control messages from its channels: joining -> servers assigned -> workers
// assigned -> training -> ending, with `failing` between training and ending when the session fails
// with a lost peer before the loss itself has been reported: the loss names the node and
// when, so the run ends with it; no timing orders the two (channels report a loss before they
// fail anything, and a member that stops for a lost peer names it in its goodbye).
//
// Every member channel is watched from its join on: a channel that ends before the run has
// finished is a lost node and ends the run. Whichever way the run ends, the members are
// told (a shutdown frame, `finished` or with the reason) and the answer waits until their
// channels have closed (at most the clocks' goodbye_grace), so the frames are out before the
// process exits.
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

#include "cluster/node_common.hpp"
#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

int expected_members(const scheduler_state& st, node_kind role) {
  return role == node_kind::server ? st.job.nodes.servers : st.job.nodes.workers;
}

int counted_members(const scheduler_state& st, node_kind role, bool ready_only) {
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
    const bool joining = st.phase.is<scheduler_phases::joining>();
    const int have = counted_members(st, role, !joining), want = expected_members(st, role);
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

// The member events that are faults, as instants on the timeline's "faults" track: the node,
// and for an adoption the one that adopts.
static void record_fault(const scheduler_state& st, const std::string& event,
                         const member_entry& m) {
  const auto& to = st.options->timeline;
  if (!to || (event != "lost" && event != "adoption" && event != "adopted" && event != "promoted"))
    return;
  const auto role = std::string(to_string(m.role));
  to->instant(to->track("faults"), event,
              m.rank >= 0 ? role + " " + std::to_string(m.rank) : std::string("spare"),
              {{"node", m.node}});
}

void record_member_event(const scheduler_state& st, const std::string& event, const member_entry& m,
                         const event_fields& extra) {
  record_fault(st, event, m);
  if (!st.options->events)
    return;
  const auto role = std::string(to_string(m.role));
  event_fields fields{
    {{"member_rank", m.rank}, {"member_pid", static_cast<double>(m.pid)}, {"node", m.node}},
    {{"member", m.rank >= 0 ? role + "_" + std::to_string(m.rank) : "spare"},
     {"member_role", role},
     {"host", m.seen_from.empty() ? m.host : host_of_address(m.seen_from)},
     {"spare", m.spare ? "yes" : "no"}}};
  fields.numbers.insert(fields.numbers.end(), extra.numbers.begin(), extra.numbers.end());
  fields.strings.insert(fields.strings.end(), extra.strings.begin(), extra.strings.end());
  st.options->events->record(event, fields);
}

namespace {

void answer_if_done(scheduler_actor self, bool grace_over);

// Tells every member still there how the run ends, then answers once their channels have closed
// (or the grace is over).
void end_run(scheduler_actor self, caf::expected<training_result> outcome) {
  auto& st = self->state;
  if (st.phase.is<scheduler_phases::ending>())
    return;
  // The epoch's traffic so far still reaches the metrics; an open question hears that the
  // run fails, so the coordinator starts no other phase.
  end_gathering(self, outcome ? caf::error{} : outcome.error());
  auto& ending = st.phase.enter(scheduler_phases::ending{std::move(outcome), false});
  if (!ending.outcome) {
    // Most reasons already name the scheduler ("scheduler: lost worker 1 ..."): said once.
    auto why = reason_text(self->system(), ending.outcome.error());
    if (why.rfind("scheduler: ", 0) == 0)
      why.erase(0, 11);
    log_node_line(*st.options, "scheduler: the run failed: " + why);
  }
  shutdown_message end;
  end.finished = static_cast<bool>(ending.outcome);
  end.reason =
    end.finished ? "the run finished" : reason_text(self->system(), ending.outcome.error());
  // A finished run ends the workers first: a server that left earlier would look lost to a
  // worker that has not heard the end yet. The servers follow once the workers are gone.
  for (auto& m : st.members)
    if (!m.gone && (!end.finished || m.role == node_kind::worker))
      caf::anon_send(m.to, goodbye_atom::value, end);
  ending.servers_told = !end.finished;
  if (st.session)
    self->send_exit(st.session, caf::exit_reason::user_shutdown);
  self->delayed_send(self, st.options->clocks().goodbye_grace(), grace_over_atom::value);
  answer_if_done(self, false); // at once when no member is left to hear it
}

void answer_if_done(scheduler_actor self, bool grace_over) {
  auto& st = self->state;
  auto* ending = st.phase.as<scheduler_phases::ending>();
  if (!ending)
    return;
  auto gone = [&](node_kind role) {
    return std::all_of(st.members.begin(), st.members.end(),
                       [&](auto& m) { return m.role != role || m.gone; });
  };
  if (!ending->servers_told && (gone(node_kind::worker) || grace_over)) {
    ending->servers_told = true;
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
  if (ending->outcome)
    st.promise.deliver(std::move(*ending->outcome));
  else
    st.promise.deliver(ending->outcome.error());
  if (st.listener)
    self->send_exit(st.listener, caf::exit_reason::user_shutdown);
  self->quit();
}

} // namespace

void fail(scheduler_actor self, errc code, const std::string& why) {
  end_run(self, make_error(code, why));
}

namespace {

// The session failed. A peer_down there is the echo of a lost channel (a remote compute's
// request failed with it); the loss itself reaches this actor too, from the scheduler's own
// channel to that node or from a member that lost it (its goodbye names it), and it names the
// node and when. So unless a loss has been reported already, the scheduler waits for it
// (failing), at most the connection timeout, within which every lost channel is noticed.
void on_session_failed(scheduler_actor self, caf::error err) {
  auto& st = self->state;
  if (st.phase.is<scheduler_phases::ending>() || st.phase.is<scheduler_phases::failing>())
    return;
  const bool loss_known =
    std::any_of(st.members.begin(), st.members.end(), [](auto& m) { return m.gone; });
  if (troupe_code(err) != errc::peer_down || loss_known)
    return end_run(self, std::move(err));
  // The run is failing whatever the cause turns out to be: an open question hears it now.
  end_gathering(self, err);
  st.phase.enter(scheduler_phases::failing{std::move(err)});
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

namespace {

// Each plan node's channel: its member's, or (a scheduler restarted after losses) the member's that
// adopted its computes or promoted its shards.
std::vector<channel_actor> channels_by_node(const scheduler_state& st) {
  std::vector<channel_actor> channel_of_node(st.plan.nodes.size());
  for (auto& m : st.members) {
    if (m.node >= 0) // (a spare has no node)
      channel_of_node.at(static_cast<std::size_t>(m.node)) = m.channel;
    for (auto n : m.adopted_nodes)
      channel_of_node.at(static_cast<std::size_t>(n)) = m.channel;
    for (auto n : m.promoted_nodes)
      channel_of_node.at(static_cast<std::size_t>(n)) = m.channel;
  }
  return channel_of_node;
}

// How the session reaches what lives on the members: their computes (through a relay the
// scheduler can re-point, with on_worker_loss = adopt: scheduler_adoption.cpp), their shards
// (through a relay with shard_backups = 1: scheduler_promotion.cpp) and their checkpoint parts. The
// relays are spawned here, before the session asks.
remote_actors remote_of_members(scheduler_actor self, const std::vector<channel_actor>& channels) {
  auto& st = self->state;
  auto& system = self->system();
  const auto& plan = st.plan;
  if (st.job.nodes.adopt_on_worker_loss)
    for (auto c : plan.actors_of(plan_role::compute)) {
      const auto& a = plan.actors.at(c);
      st.relays[c] = spawn_compute_relay(
        system,
        spawn_compute_proxy(system, channels.at(static_cast<std::size_t>(a.node)),
                            static_cast<std::uint32_t>(a.rank)),
        a.rank, st.times);
    }
  if (st.job.nodes.shard_backups > 0)
    for (auto s : plan.actors_of(plan_role::shard)) {
      const auto& a = plan.actors.at(s);
      st.shard_relays[s] = spawn_push_relay(
        system,
        spawn_push_target_proxy(system, channels.at(static_cast<std::size_t>(a.node)),
                                static_cast<std::uint32_t>(a.shard)),
        a.name);
    }
  remote_actors remote;
  remote.compute = [=, &system, relays = st.relays](std::size_t actor) -> compute_actor {
    const auto& a = plan.actors.at(actor);
    if (auto relay = relays.find(actor); relay != relays.end())
      return relay->second;
    return spawn_compute_proxy(system, channels.at(static_cast<std::size_t>(a.node)),
                               static_cast<std::uint32_t>(a.rank));
  };
  remote.push_target = [=, &system,
                        relays = st.shard_relays](std::size_t actor) -> push_target_actor {
    const auto& a = plan.actors.at(actor);
    if (auto relay = relays.find(actor); relay != relays.end())
      return push_target_actor{relay->second};
    return spawn_push_target_proxy(system, channels.at(static_cast<std::size_t>(a.node)),
                                   static_cast<std::uint32_t>(a.shard));
  };
  remote.checkpoint_part = [=, &system](int node) {
    return spawn_checkpoint_part_proxy(system, channels.at(static_cast<std::size_t>(node)));
  };
  return remote;
}

} // namespace

void start_training(scheduler_actor self) {
  auto& st = self->state;
  if (auto why = start_replay(st); !why.empty())
    return fail(self, errc::bad_request, "scheduler: " + why);
  st.phase.enter(scheduler_phases::training{});
  if (st.resumed_run)
    log_node_line(*st.options, "scheduler: " + threads_text(st) + "; training");
  else
    log_node_line(*st.options, "scheduler: every node is ready (" + progress_text(st) + "); "
                                 + threads_text(st) + "; training");
  record_event(st.options->events, "assembled",
               {{{"servers", st.job.nodes.servers}, {"workers", st.job.nodes.workers}},
                {{"resumed", st.resumed_run ? "yes" : "no"}}});
  session_sinks sinks;
  sinks.output = st.output;
  sinks.metrics = st.metrics;
  sinks.between_epochs = epoch_gate_actor{self}; // each epoch's traffic is read while no step runs
  sinks.timeouts = st.options->timeouts;
  sinks.node.node = 0;
  sinks.node.train_data = st.train_set;
  sinks.node.validation_data = st.validation_set;
  sinks.node.resume_at_epoch = st.resume_epoch;
  sinks.node.remote = remote_of_members(self, channels_by_node(st));
  st.session = st.spawn_session(self->system(), st.job, std::move(sinks));
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

// Whether the run goes on without member `m` (a worker lost during training of a job that
// says so, with another worker left); logs it if so. The coordinator drops its computes when
// their requests fail.
bool goes_on_without(scheduler_actor self, const member_entry& m, const std::string& what) {
  auto& st = self->state;
  if (m.role != node_kind::worker || !st.job.nodes.continue_on_worker_loss
      || !st.phase.is<scheduler_phases::training>())
    return false;
  const bool others = std::any_of(st.members.begin(), st.members.end(),
                                  [](auto& o) { return o.role == node_kind::worker && !o.gone; });
  if (!others)
    return false;
  log_node_line(*st.options, "scheduler: " + m.name() + ": " + what
                               + "; the run goes on without it (on_worker_loss = continue)");
  record_member_event(st, "dropped", m, {{}, {{"reason", what}}});
  end_gathering_if_complete(self); // it may have been the last one to answer
  return true;
}

// The member on `channel` stops and says why. A member that stopped because it lost a peer
// names that peer's plan node: the run ends naming the lost node, whichever report came first.
void on_goodbye(scheduler_actor self, const channel_actor& channel, const shutdown_message& end) {
  auto& st = self->state;
  auto* m = member_of(st, channel.address());
  if (!m || m->gone)
    return; // a node that never joined: nothing of the run is lost
  if (st.phase.is<scheduler_phases::ending>()) {
    m->gone = true;
    return answer_if_done(self, false);
  }
  if (m->leaving) // its leave was granted: it goes as planned, and its computes move
    return on_member_lost(self, *m, left_text(*m));
  m->gone = true;
  forget_join(st, *m);
  record_member_event(st, "stopped", *m,
                      {{{"lost_node", end.lost_node}}, {{"reason", end.reason}}});
  if (m->idle()) {
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

// Member `m`, declared lost (`what`), is fenced before anything of its part moves: this
// scheduler's channels refuse its term (it cannot rejoin), and every other member is told, so
// their channels take nothing it sends if it runs again (node_fences.hpp). A member that left
// as asked, or one that was never assigned, needs none.
void fence_member(scheduler_actor self, const member_entry& m, const std::string& what) {
  auto& st = self->state;
  if (m.leaving || m.term == 0 || !st.fences->fence(m.term, what))
    return;
  const fence_message fence{
    static_cast<std::uint32_t>(std::max(0, m.node)), m.term,
    ("the scheduler declared it lost: " + what).substr(0, failure_message::max_text_bytes)};
  for (const auto& other : st.members)
    if (&other != &m && !other.gone && other.to)
      caf::anon_send(other.to, fence_atom::value, fence);
  log_node_line(*st.options, "scheduler: fenced " + m.name() + " (term " + std::to_string(m.term)
                               + "): every node refuses its frames from now on");
  record_member_event(st, "fenced", m, {{{"term", static_cast<double>(m.term)}}, {}});
}

void on_member_lost(scheduler_actor self, member_entry& m, const std::string& what) {
  m.gone = true;
  fence_member(self, m, what);
  forget_join(self->state, m);
  record_member_event(self->state, m.leaving ? "left" : "lost", m, {{}, {{"reason", what}}});
  if (m.idle()) { // it held nothing
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

// The channel of a member ended (`why`; empty: normally), reported by the channel itself before it
// failed anything, or seen as the channel actor's down.
void on_channel_lost(scheduler_actor self, const caf::actor_addr& channel, const caf::error& why) {
  auto& st = self->state;
  auto* m = member_of(st, channel);
  if (!m)
    return; // a node that never joined: nothing of the run is lost
  if (st.phase.is<scheduler_phases::ending>()) {
    m->gone = true;
    return answer_if_done(self, false);
  }
  if (m->gone)
    return;
  on_member_lost(self, *m,
                 m->leaving ? left_text(*m)
                            : "lost " + m->name() + " at " + clock_time_now() + ": "
                                + reason_text(self->system(), why));
}

void on_down(scheduler_actor self, const caf::down_msg& down) {
  auto& st = self->state;
  if (st.session && down.source == st.session.address())
    return fail(self, errc::internal,
                "scheduler: the training session terminated: "
                  + reason_text(self->system(), down.reason));
  on_channel_lost(self, down.source, down.reason);
}

scheduler_self_actor::behavior_type scheduler(scheduler_actor self, scheduler_setup setup) {
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
  // Whatever ends the scheduler ends its listener (and with it every member channel) and the
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
      if (st.phase.is<scheduler_phases::ending>()) // the run ended before anyone asked
        answer_if_done(self, true);
      return promise;
    },
    [=](join_atom, channel_actor& channel, join_message& join) {
      if (!self->state.phase.is<scheduler_phases::ending>())
        on_join(self, channel, join);
    },
    [=](ready_atom, channel_actor& channel, ready_message& ready) {
      if (!self->state.phase.is<scheduler_phases::ending>())
        on_ready(self, channel, ready);
    },
    [=](traffic_atom, channel_actor& from, traffic_message& t) { on_traffic(self, from, t); },
    [=](leave_atom, channel_actor& from, leave_message& leave) {
      if (auto* m = member_of(self->state, from.address()); m && !m->gone)
        on_leave(self, *m, leave);
    },
    [=](goodbye_atom, channel_actor& from, shutdown_message& end) { on_goodbye(self, from, end); },
    [=](command_atom, command_message& c, deadline) { return on_command(self, c); },
    [=](channel_lost_atom, channel_actor& channel, caf::error& why) {
      on_channel_lost(self, channel.address(), why);
    },
    [=](join_deadline_atom) {
      if (self->state.before_training())
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
      if (auto* failing = self->state.phase.as<scheduler_phases::failing>())
        end_run(self, std::move(failing->unexplained));
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

} // namespace

scheduler_node_actor spawn_scheduler_node(caf::actor_system& system, scheduler_setup setup) {
  return system.spawn(scheduler, std::move(setup));
}

} // namespace troupe
