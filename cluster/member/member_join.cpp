// How a server or worker reaches its scheduler and joins (member_node.cpp drives it): one try
// to connect at a time, retried until the join timeout, then the join with what the scheduler
// needs to place the node (its role and rank, where it listens, its pid, its own job's hash).
#include <string>
#include <unistd.h>

#include <caf/all.hpp>

#include <troupe/cluster/job_transfer.hpp>
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

namespace {

// How often a node tries again to reach a scheduler that does not listen yet (a node may start
// before its scheduler): a retry period, not an ordering of events.
constexpr auto connect_retry = std::chrono::milliseconds(200);

} // namespace

std::string scheduler_address(const member_options& o) {
  return o.scheduler_host + ":" + std::to_string(o.scheduler_port);
}

void join_over(member_actor self, const channel_actor& channel) {
  auto& st = self->state;
  if (!st.phase.is<member_phases::connecting>())
    return;
  st.phase.enter(member_phases::joining{});
  st.scheduler = channel;
  st.to_scheduler = spawn_scheduler_control_proxy(self->system(), channel);
  self->monitor(channel);
  // A server bound its port before it joined: the scheduler can tell the other servers where
  // it listens (shard_backups = 1) before any is ready.
  const std::uint16_t port = st.listening ? st.listening->port() : 0;
  join_message join{st.options->role,
                    advertised_host(*st.options),
                    port,
                    static_cast<std::uint32_t>(::getpid()),
                    st.options->rank,
                    st.options->own_job ? job_hash_without_counts(*st.options->own_job) : 0};
  if (st.options->own_job) // so that a refusal can name the keys that differ
    join.job = job_bytes(*st.options->own_job);
  join.spare = st.options->spare;
  join.sent_micros = timeline_clock_micros(st.options->timeline.get());
  caf::anon_send(st.to_scheduler, join_atom::value, std::move(join));
  record_event(st.options->events, "joined",
               {{{"scheduler_port", st.options->scheduler_port}, {"port", port}},
                {{"scheduler_host", st.options->scheduler_host},
                 {"host", advertised_host(*st.options)},
                 {"spare", st.options->spare ? "yes" : "no"}}});
  // The scheduler assigns once everyone joined, within its own join timeout; a spare waits
  // for a loss, however long (the scheduler's end ends it too).
  if (!st.options->spare)
    self->delayed_send(self, st.options->clocks().assignment_wait(),
                       assignment_deadline_atom::value);
  else
    log_node_line(*st.options,
                  st.label
                    + ": joined as a spare; it waits to take over a worker lost in training");
}

// One try to reach the scheduler (blocks while connecting: the node's actor runs on a thread of
// its own); until the join timeout, a failed try is tried again.
void try_to_connect(member_actor self) {
  auto& st = self->state;
  if (!st.phase.is<member_phases::connecting>()
      && !(st.phase.is<member_phases::rejoining>() && !st.scheduler))
    return;
  auto* connecting = st.phase.as<member_phases::connecting>();
  if (connecting && !st.unreachable
      && !connecting->retrying) // the first try starts the join timeout
    self->delayed_send(self, st.options->join_timeout, connect_deadline_atom::value);
  // A node rejoining with its place goes by its plan node's name, as on its other channels, and
  // checks frames against its plan from the start.
  const bool placed = st.phase.is<member_phases::rejoining>() && st.part_node >= 0;
  auto channel = channel_options_of(*st.options,
                                    placed ? st.label
                                           : std::string(to_string(st.options->role)) + " (pid "
                                               + std::to_string(::getpid()) + ")",
                                    st.traffic);
  channel.serving = st.serving;
  channel.fences = st.fences;
  if (placed) {
    channel.plan_hash = st.plan.hash;
    channel.keys = wire_keys_of(st.plan);
  }
  auto connected = connect_channel(self->system(), st.options->scheduler_host,
                                   st.options->scheduler_port, channel);
  if (connected)
    return st.phase.is<member_phases::rejoining>() ? rejoin_over(self, *connected)
                                                   : join_over(self, *connected);
  st.unreachable = std::move(connected.error());
  if (!connecting) // rejoining: its deadline is the scheduler timeout, said when it was lost
    return (void)self->delayed_send(self, connect_retry, connect_atom::value);
  if (!connecting->retrying)
    log_node_line(*st.options, std::string(to_string(st.options->role)) + ": no scheduler at "
                                 + scheduler_address(*st.options)
                                 + " yet; retrying until the join timeout");
  connecting->retrying = true;
  self->delayed_send(self, connect_retry, connect_atom::value);
}

} // namespace troupe
