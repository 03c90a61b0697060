// A server or worker that lost its scheduler in training (member_state.hpp). Nothing the run
// needs from step to step lives on the scheduler: the computes train their epoch against the
// shards on their own, and the scheduler only starts phases, gathers reports and writes
// checkpoints between epochs. So the node keeps its part running, points its computes' batch
// reports nowhere, and retries reaching the scheduler's address until the scheduler timeout;
// a scheduler restarted there with --resume hears from it where it stands (the latest epoch
// its computes were asked to train, its shards' last applied step), and once every node is
// back asks each phase again, which the computes answer with the phase in flight or the
// last one finished (compute_actor.hpp). No step is lost or computed twice, so the weights
// end as they would have without the loss.
#include <algorithm>
#include <memory>
#include <unistd.h>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/cluster/remote_proxies.hpp>
#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/graph/value_hash.hpp>

#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

namespace {

std::string seconds_text(std::chrono::milliseconds t) {
  return shortest_number(static_cast<double>(t.count()) / 1000) + " s";
}

// Sends the rejoin once every compute and shard asked has answered.
struct rejoin_gathering {
  rejoin_message where;
  std::size_t missing = 0;
};

void send_rejoin(member_actor self, const channel_actor& channel, const rejoin_message& where) {
  auto& st = self->state;
  if (st.ended() || st.scheduler != channel)
    return; // ended, or that channel was lost meanwhile
  join_message join{st.options->role, advertised_host(*st.options),
                    st.ready_port,    static_cast<std::uint32_t>(::getpid()),
                    st.options->rank, st.job ? job_hash_without_counts(*st.job) : 0};
  join.spare = st.options->spare;
  join.rejoin = where;
  join.sent_micros = timeline_clock_micros(st.options->timeline.get());
  st.phase.enter(member_phases::running{});
  caf::anon_send(st.to_scheduler, join_atom::value, std::move(join));
  record_event(st.options->events, "rejoined",
               {{{"epoch", where.epoch}, {"applied_step", where.applied_step}},
                {{"scheduler_host", st.options->scheduler_host}}});
  log_node_line(
    *st.options,
    st.label + ": rejoined the scheduler at " + st.options->scheduler_host + ":"
      + std::to_string(st.options->scheduler_port)
      + (st.options->role == node_kind::worker
           ? " (its computes were last asked to train epoch " + std::to_string(where.epoch) + ")"
           : " (its shards applied step " + std::to_string(where.applied_step) + " last)"));
}

} // namespace

bool train_on_without_scheduler(member_actor self, const caf::error& why) {
  auto& st = self->state;
  // The restarted one was lost before the rejoin was sent, or before its channel was ever
  // admitted (a frozen scheduler's port still takes connections): again, within the same
  // timeout.
  const bool unassigned = st.phase.is<member_phases::joining>();
  const bool unconfirmed = (st.phase.is<member_phases::running>() || unassigned)
                           && st.scheduler_losses > 0 && !st.scheduler_admitted;
  if ((st.phase.is<member_phases::rejoining>() || unconfirmed) && !st.told) {
    st.phase.enter(member_phases::rejoining{});
    st.scheduler = channel_actor{};
    st.to_scheduler = scheduler_control_actor{};
    st.unreachable = why;
    self->send(self, connect_atom::value);
    return true;
  }
  // A node not yet given a place (a spare, or one lost its scheduler before training) waits for
  // the restarted scheduler too, and joins it again as it joined the lost one.
  if ((!st.phase.is<member_phases::running>() && !unassigned)
      || st.options->scheduler_timeout.count() <= 0 || st.told)
    return false;
  st.phase.enter(member_phases::rejoining{});
  st.scheduler = channel_actor{};
  st.to_scheduler = scheduler_control_actor{};
  st.scheduler_admitted = false;
  st.unreachable = caf::error{};
  if (st.reports)
    caf::anon_send(st.reports, repoint_atom::value, metrics_sink_actor{});
  const auto serial = ++st.scheduler_losses;
  record_event(st.options->events, "lost",
               {{}, {{"lost", "scheduler"}, {"reason", reason_text(self->system(), why)}}});
  log_node_line(
    *st.options,
    st.label + ": lost the scheduler at " + clock_time_now() + ": "
      + reason_text(self->system(), why)
      + (unassigned ? "; it has no place yet, and for " : "; training goes on here, and for ")
      + seconds_text(st.options->scheduler_timeout)
      + " (--scheduler-timeout) it retries reaching a scheduler restarted at "
      + st.options->scheduler_host + ":" + std::to_string(st.options->scheduler_port)
      + " (troupe node --role scheduler --resume; troupe launch restarts it)");
  self->delayed_send(self, st.options->scheduler_timeout, rejoin_deadline_atom::value, serial);
  self->send(self, connect_atom::value);
  return true;
}

void rejoin_over(member_actor self, const channel_actor& channel) {
  auto& st = self->state;
  if (st.part_node < 0) { // no place yet (a spare, or lost before training): it joins as before
    st.phase.enter(member_phases::connecting{});
    return join_over(self, channel);
  }
  st.scheduler = channel;
  st.to_scheduler = spawn_scheduler_control_proxy(self->system(), channel);
  self->monitor(channel);
  if (st.reports)
    caf::anon_send(st.reports, repoint_atom::value,
                   spawn_metrics_sink_proxy(self->system(), channel, st.options->position));
  auto gathering = std::make_shared<rejoin_gathering>();
  auto& where = gathering->where;
  where.node = static_cast<std::uint32_t>(st.part_node);
  where.threads = static_cast<std::uint32_t>(st.threads);
  where.term = st.fences->own();
  for (auto node : st.adopted_nodes)
    where.adopted.push_back(static_cast<std::uint32_t>(node));
  for (auto node : st.backup.promoted)
    where.promoted.push_back(static_cast<std::uint32_t>(node));
  where.counted = st.last_traffic_answer;
  std::vector<local_compute_actor> computes;
  for (const auto& [rank, compute] : st.part.computes)
    computes.push_back(compute);
  for (const auto& part : st.adopted)
    for (const auto& [rank, compute] : part.computes)
      computes.push_back(compute);
  std::vector<param_shard_actor> shards;
  for (const auto& shard : st.part.own_shards)
    if (shard)
      shards.push_back(shard);
  gathering->missing = computes.size() + shards.size();
  if (gathering->missing == 0)
    return send_rejoin(self, channel, where);
  // Answered at once between steps; a step in flight finishes first (a compute answers
  // between its handlers), hence the step timeout.
  const auto limit = st.options->timeouts.step;
  auto failed = [=](caf::error& err) {
    fail(self, troupe_code(err),
         "cannot say where this node stands to the restarted scheduler: "
           + reason_text(self->system(), err));
  };
  for (auto& compute : computes)
    self->request(compute, limit, position_atom::value)
      .then(
        [=](std::int64_t epoch) {
          gathering->where.epoch = std::max(gathering->where.epoch, epoch);
          if (--gathering->missing == 0)
            send_rejoin(self, channel, gathering->where);
        },
        failed);
  for (auto& shard : shards)
    self->request(shard, limit, applied_atom::value)
      .then(
        [=](const std::vector<applied_group>& groups) {
          for (const auto& g : groups)
            gathering->where.applied_step = std::max(gathering->where.applied_step, g.step);
          if (--gathering->missing == 0)
            send_rejoin(self, channel, gathering->where);
        },
        failed);
}

void on_rejoin_deadline(member_actor self, std::uint64_t serial) {
  auto& st = self->state;
  if (serial != st.scheduler_losses || st.ended())
    return;
  const bool waiting =
    st.phase.is<member_phases::running>() || st.phase.is<member_phases::joining>();
  if (!st.phase.is<member_phases::rejoining>() && (!waiting || st.scheduler_admitted))
    return; // rejoined in time
  fail(self, errc::peer_down,
       "lost the scheduler, and no scheduler came back at " + st.options->scheduler_host + ":"
         + std::to_string(st.options->scheduler_port) + " within "
         + seconds_text(st.options->scheduler_timeout) + " (--scheduler-timeout)"
         + (st.unreachable ? ": " + reason_text(self->system(), st.unreachable) : ""));
}

} // namespace troupe
