// A server or worker node (cluster_node.hpp). run_member reaches the scheduler (retrying
// until the join timeout: a node may start before its scheduler), then one actor joins,
// takes the assignment, spawns the node's part of the plan and watches it: the scheduler
// channel, the channels to servers, and every actor of the part. The scheduler's shutdown ends the
// node: normally when the run finished, else with the reason it gives.
//
// A server serves two directories: its entry points (what workers push to: the aggregator in
// front of a shard in BSP, the shard itself in async) on the listener it opens for workers,
// and its shards themselves on the scheduler channel, from which the final weights are pulled.
//
// A server watches the channels its workers open. When one goes down before the run has ended
// and the job goes on without lost workers (on_worker_loss = continue), the server tells its
// shards to forget the computes of that worker node: an SSP shard would otherwise hold every
// other worker once it is `staleness` steps ahead of the lost one's last push. Whether the run
// goes on is the scheduler's decision; if it stops instead, its shutdown follows.
//
// A worker told to adopt a lost worker node (on_worker_loss = adopt) spawns that node's part
// of the plan beside its own (member_adoption.cpp). How a member takes its assignment is
// member_assignment.cpp's.
#include <list>
#include <troupe/cluster/cluster_node.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <unistd.h>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/node_part.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/frame_codec.hpp>
#include <troupe/cluster/job_difference.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/cluster/remote_proxies.hpp>
#include <troupe/graph/value_hash.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/dataset.hpp>

#include "cluster/frame_socket.hpp"
#include "cluster/member/member_placement.hpp"
#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

namespace {

// Answers once the node has ended and the channels it told so have closed (their peers have
// read why), or the grace is over.
void answer(member_actor self, bool grace_over = false) {
  auto& st = self->state;
  const auto* end = st.phase.as<member_phases::ending>();
  if (!end || !st.promise.pending() || (!end->closing.empty() && !grace_over))
    return;
  if (end->outcome)
    st.promise.deliver(end->outcome);
  else
    st.promise.deliver(true);
  if (st.listener) // held open until the channels from workers that heard the end closed
    self->send_exit(st.listener, caf::exit_reason::user_shutdown);
  self->quit();
}

// A channel told how the node ends has closed.
void forget_closing(member_phases::ending& end, const caf::actor_addr& channel) {
  end.closing.erase(std::remove(end.closing.begin(), end.closing.end(), channel),
                    end.closing.end());
}

} // namespace

// Ends the node: its part and channels go; the scheduler hears why unless it is the one gone
// (with the plan node whose loss is the cause, `lost_node`, when it is a lost peer).
void finish(member_actor self, caf::error reason, std::int32_t lost_node) {
  auto& st = self->state;
  if (st.ended())
    return;
  auto& closing = st.phase.enter(member_phases::ending{reason, {}}).closing;
  if (reason) {
    log_node_line(*st.options, st.label + ": " + reason_text(self->system(), reason));
    if (st.scheduler) {
      caf::anon_send(st.to_scheduler, goodbye_atom::value,
                     shutdown_message{reason_text(self->system(), reason), false, lost_node});
      closing.push_back(st.scheduler.address());
    }
  }
  st.part.shut_down();
  for (auto& part : st.adopted)
    part.shut_down();
  for (auto& [actor, name] : st.backup.backup_actors)
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  st.backup.backup_actors.clear();
  for (auto& [actor, relay] : *st.backup.relays)
    caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  st.backup.relays->clear();
  if (st.reports)
    caf::anon_send_exit(st.reports, caf::exit_reason::user_shutdown);
  st.serving->clear();
  // Its channels still tell it when they close: it waits for those it says goodbye on below (a
  // server's channels from workers, which it does not monitor, had no other way to say so, and
  // the server waited the whole grace).
  st.serving->set<remote_interface::member_control>(0, self);
  // The servers hear that this worker is done (and why), rather than a closed connection.
  const shutdown_message end{reason ? reason_text(self->system(), reason) : "the run finished",
                             !reason};
  auto channels = st.server_channels;
  channels.push_back(
    st.backup.backup_channel); // a server: the channel to the one holding its backups
  for (auto& channel : channels)
    if (channel) {
      caf::anon_send(spawn_member_control_proxy(self->system(), channel), goodbye_atom::value, end);
      closing.push_back(channel.address());
    }
  // The workers still linked here hear how the run ends from this server too, rather than a
  // closed connection (the listener's end closes the channels it accepted). At the end of a good
  // run that close would race the worker's own goodbye ("the connection closed"); at the end
  // of a failed one it would race the scheduler's word, and a worker that read the close first
  // would name this server as the node lost. The listener ends once they closed (answer), or
  // the grace is over.
  for (auto& [address, worker] : st.worker_channels) {
    caf::anon_send(spawn_member_control_proxy(self->system(), worker.channel), goodbye_atom::value,
                   end);
    closing.push_back(address);
  }
  if (st.listener && st.worker_channels.empty())
    self->send_exit(st.listener, caf::exit_reason::user_shutdown);
  self->delayed_send(self, st.options->clocks().goodbye_grace(), grace_over_atom::value);
  answer(self);
}

void fail(member_actor self, errc code, const std::string& why) {
  finish(self, make_error(code, why));
}

namespace {
// The computes of worker node `lost` as this server's shards know them: (shard actor, the
// `worker` fields of their pushes there), from the plan's routes.
std::vector<std::pair<std::size_t, std::vector<std::int32_t>>>
sources_on(const placement_plan& plan, int server, int lost) {
  std::vector<std::pair<std::size_t, std::vector<std::int32_t>>> out;
  for (auto i : plan.actors_on(server)) {
    if (plan.actors[i].role != plan_role::shard)
      continue;
    std::vector<std::int32_t> sources;
    for (auto c : plan.actors_on(lost)) {
      if (plan.actors[c].role != plan_role::compute)
        continue;
      const auto& route = plan.gradient_route(plan.actors[c].rank, plan.actors[i].shard);
      if (route.to == i) // async, ssp: the compute pushes to the shard itself
        sources.push_back(route.source);
    }
    if (!sources.empty())
      out.emplace_back(i, std::move(sources));
  }
  return out;
}

// A worker channel went down: when it is a lost worker node (not one that finished) and the run
// goes on without it, this server's shards stop waiting for its computes. The channel is known
// by the name its hello gave, which is the plan node name the worker was assigned ("worker_1"),
// recorded only once the channel was admitted (its channel_up): a peer refused for a wrong secret
// never counts, whatever name it claimed. (The name in the channel's messages is a log phrase
// with the address in it; the traffic registry keeps the hello's name as it came.)
void on_worker_channel_down(member_actor self, const caf::actor_addr& channel,
                            const caf::error& why) {
  auto& st = self->state;
  const auto known = st.worker_channels.find(channel);
  if (known == st.worker_channels.end())
    return;
  const auto name = known->second.name;
  st.worker_channels.erase(known);
  if (!why || !st.continue_on_worker_loss || st.ended() || (st.told && st.told->finished))
    return;
  int lost = -1;
  for (std::size_t n = 0; n < st.plan.nodes.size(); ++n)
    if (st.plan.nodes[n].kind == node_kind::worker && st.plan.nodes[n].name == name)
      lost = static_cast<int>(n);
  if (lost < 0)
    return;
  const auto shards = sources_on(st.plan, st.part_node, lost);
  if (shards.empty())
    return; // its computes push to none of this node's shards
  for (const auto& [shard, sources] : shards)
    if (const auto& own = st.part.own_shards.at(shard)) // the plan puts it here
      self->send(own, forget_atom::value, sources);
  std::string computes;
  for (auto c : st.plan.actors_on(lost))
    if (st.plan.actors[c].role == plan_role::compute)
      computes += (computes.empty() ? "" : ", ") + st.plan.actors[c].name;
  log_node_line(*st.options, st.label + ": lost " + name + " at " + clock_time_now() + ": "
                               + reason_text(self->system(), why)
                               + "; the shards here no longer wait for " + computes
                               + " (on_worker_loss = continue)");
}

// Channel `channel` ended (`why`; empty: normally). Channels report this before they fail anything,
// so a loss is seen here before whatever it makes fail (a compute whose push failed).
void on_channel_lost(member_actor self, const caf::actor_addr& channel, const caf::error& why) {
  auto& st = self->state;
  if (auto* end = st.phase.as<member_phases::ending>()) {
    forget_closing(*end, channel);
    return answer(self);
  }
  // A channel of this node found the process stopped past the peer timeout, or a peer said it
  // is fenced: whatever this loss is, it follows from that.
  if (auto why_fenced = st.fences->fenced_here())
    return on_fenced_here(self, *why_fenced);
  if (st.worker_channels.count(channel))
    return on_worker_channel_down(self, channel, why);
  const bool scheduler = st.scheduler && channel == st.scheduler.address();
  if (scheduler && st.released)
    return leave_run(self);
  std::size_t server = st.server_channels.size();
  for (std::size_t n = 0; n < st.server_channels.size(); ++n)
    if (st.server_channels[n] && channel == st.server_channels[n].address())
      server = n;
  if (!scheduler && !(st.told && st.told->finished) && on_backup_channel_lost(self, channel, why))
    return; // shard_backups = 1: a lost server is the scheduler's to replace
  if (!scheduler && server == st.server_channels.size())
    return; // a channel this node no longer uses (or a refused peer's)
  // Once the scheduler has said the run is over, whatever ends next is the end it announced.
  if (st.told && st.told->finished)
    return finish(self, caf::error{});
  // Refused before admission (a wrong secret, another plan or version): final, since another
  // try holds the same secret and plan.
  if (scheduler && !st.scheduler_admitted && troupe_code(why) == errc::bad_request)
    return fail(self, errc::bad_request,
                "cannot join the scheduler at " + scheduler_address(*st.options) + ", and another "
                  + "try would fail the same: "
                  + (st.told ? st.told->reason : reason_text(self->system(), why))
                  + " (every node needs the scheduler's secret and the same job)");
  // Asked to leave, it does not wait for a restarted scheduler: it ends as asked.
  if (scheduler && st.leaving)
    return fail(self, errc::peer_down,
                "lost the scheduler at " + clock_time_now() + " while asking to leave ("
                  + st.leave_reason + "): " + reason_text(self->system(), why));
  if (scheduler && train_on_without_scheduler(self, why))
    return; // a scheduler restarted with --resume takes the run over
  if (scheduler) {
    st.scheduler = channel_actor{};
    st.to_scheduler = scheduler_control_actor{};
    return fail(self, errc::peer_down,
                "lost the scheduler at " + clock_time_now() + ": "
                  + (st.told ? st.told->reason : reason_text(self->system(), why)));
  }
  st.server_channels[server] = channel_actor{};
  finish(self,
         make_error(errc::peer_down, "lost " + st.plan.nodes[server].name + " at "
                                       + clock_time_now() + ": "
                                       + reason_text(self->system(), why)),
         static_cast<std::int32_t>(server));
}

void on_down(member_actor self, const caf::down_msg& down) {
  auto& st = self->state;
  if (auto* end = st.phase.as<member_phases::ending>()) {
    forget_closing(*end, down.source);
    return answer(self);
  }
  if (st.listener && down.source == st.listener.address())
    return fail(self, errc::peer_down,
                "the listener for workers ended: " + reason_text(self->system(), down.reason));
  if (st.told && st.told->finished)
    return finish(self, caf::error{});
  // An actor of the part ended. When a lost channel made it fail, that loss reached this actor
  // first (on_channel_lost) and ended the node already.
  for (auto& [actor, name] : st.part.spawned)
    if (down.source == actor.address())
      return fail(self, errc::internal,
                  name + " terminated: " + reason_text(self->system(), down.reason));
  for (auto& part : st.adopted)
    for (auto& [actor, name] : part.spawned)
      if (down.source == actor.address())
        return fail(self, errc::internal,
                    name + " (adopted) terminated: " + reason_text(self->system(), down.reason));
  if (auto name = backup_actor_name(st, down.source); !name.empty())
    return fail(self, errc::internal,
                name + " terminated: " + reason_text(self->system(), down.reason));
  // A channel that ended without saying so (killed): its down is the loss.
  on_channel_lost(self, down.source, down.reason);
}

// What the node does with a down message, an exception and a message outside its protocol.
void set_handlers(member_actor self) {
  self->set_down_handler([=](caf::down_msg& down) { on_down(self, down); });
  // A defect that throws here must still end the node with a word, not leave its host waiting
  // on a promise nobody keeps.
  self->set_exception_handler([=](caf::scheduled_actor*, std::exception_ptr& thrown) -> caf::error {
    std::string what = "an unknown exception";
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    auto err = make_error(errc::internal, self->state.label + ": internal error: " + what);
    log_node_line(*self->state.options, error_text(err));
    if (self->state.promise.pending())
      self->state.promise.deliver(err);
    return err;
  });
  self->set_default_handler(
    [=](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
      log_node_line(*self->state.options,
                    self->state.label + ": ignored a message outside the node-control protocol: "
                      + caf::to_string(x.content()));
      return caf::none;
    });
}

// No scheduler was reached within the join timeout: the caller says so (run_member throws
// it), nothing else to tell anyone.
void on_connect_deadline(member_actor self) {
  auto& st = self->state;
  if (!st.phase.is<member_phases::connecting>())
    return;
  st.phase.enter(member_phases::ending{
    make_error(errc::peer_down, "no scheduler at " + scheduler_address(*st.options) + " within "
                                  + std::to_string(st.options->join_timeout.count() / 1000)
                                  + " s (--join-timeout): " + error_text(st.unreachable)),
    {}});
  answer(self);
}

// A channel was admitted: the scheduler's, or (a server) a worker's, known from then on by the
// name its hello gave.
void on_channel_up(member_actor self, const channel_actor& channel) {
  auto& st = self->state;
  if (channel == st.scheduler)
    st.scheduler_admitted = true;
  if (st.options->role == node_kind::server && !st.ended() && channel != st.scheduler)
    st.worker_channels[channel.address()] = {st.traffic->peer_of(channel.address()), channel};
}

member_self_actor::behavior_type member(member_actor self, member_options options,
                                        std::shared_ptr<serving_registry> serving,
                                        std::shared_ptr<traffic_registry> traffic,
                                        std::shared_ptr<listening_socket> listening,
                                        std::shared_ptr<node_fences> fences) {
  auto& st = self->state;
  if (fences)
    st.fences = std::move(fences);
  st.listening = std::move(listening);
  st.traffic = std::move(traffic);
  st.options.emplace(std::move(options));
  st.serving = std::move(serving);
  st.serving->set<remote_interface::member_control>(0, self);
  if (st.options->role == node_kind::server)
    st.serving->set<remote_interface::shard_change>(0, self);
  st.label = std::string(to_string(st.options->role))
             + (st.options->spare ? " (spare, pid " : " (pid ") + std::to_string(::getpid()) + ")";
  set_handlers(self);
  // Only the scheduler's channel may assign or query: a server's channels from workers reach this
  // actor too (for their losses).
  auto from_scheduler = [=](const channel_actor& channel, const char* what) {
    if (self->state.scheduler && channel == self->state.scheduler)
      return true;
    log_node_line(*self->state.options, self->state.label + ": ignored " + what
                                          + " from a channel other than the scheduler's");
    return false;
  };
  return {
    [=](run_atom) -> caf::result<bool> {
      self->state.promise = self->make_response_promise<bool>();
      auto promise = self->state.promise;
      answer(self);
      return promise;
    },
    [=](scheduler_channel_atom, channel_actor& channel) {
      if (self->state.phase.is<member_phases::rejoining>() && !self->state.scheduler)
        rejoin_over(self, channel);
      else
        join_over(self, channel);
    },
    [=](connect_atom) { try_to_connect(self); },
    [=](connect_deadline_atom) { on_connect_deadline(self); },
    [=](assignment_atom, channel_actor& channel, assignment_message& a) {
      if (!self->state.ended() && from_scheduler(channel, "an assignment"))
        on_assignment(self, a);
    },
    [=](traffic_query_atom, channel_actor& channel, traffic_query_message& query) {
      if (!self->state.ended() && from_scheduler(channel, "a traffic query"))
        on_traffic_query(self, query);
    },
    [=](adopt_atom, channel_actor& channel, adopt_message& a) {
      if (!self->state.ended() && from_scheduler(channel, "an adopt"))
        on_adopt(self, a);
    },
    [=](promote_atom, channel_actor& channel, promote_message& p) {
      if (!self->state.ended() && from_scheduler(channel, "a promote"))
        on_promote(self, p);
    },
    [=](release_atom, channel_actor& channel, release_message& r) {
      if (!self->state.ended() && from_scheduler(channel, "a release"))
        on_release(self, r);
    },
    [=](cede_atom, channel_actor& channel, cede_message& c) {
      if (!self->state.ended() && from_scheduler(channel, "a cede"))
        on_cede(self, c);
    },
    [=](drain_atom, channel_actor& channel, drain_message& d) {
      if (!self->state.ended() && from_scheduler(channel, "a drain"))
        on_drain(self, d);
    },
    [=](leave_asked_atom, std::string& why) { on_leave_asked(self, why); },
    [=](change_atom, const shard_change& change, deadline due) {
      return on_change(self, change, due);
    },
    [=](goodbye_atom, channel_actor& channel, shutdown_message& end) {
      // The scheduler's says how the run ends; the channel's end follows (on_channel_lost). A
      // server's or worker's goodbye is followed by its channel's end, which names it.
      if (end.fenced)
        return on_fenced_here(self, end.reason);
      if (self->state.scheduler && channel == self->state.scheduler)
        self->state.told = end;
    },
    [=](fence_atom, channel_actor& channel, fence_message& f) {
      if (!self->state.ended() && from_scheduler(channel, "a fence"))
        on_fence(self, f);
    },
    [=](channel_up_atom, channel_actor& channel, const std::string&) {
      on_channel_up(self, channel);
    },
    [=](channel_lost_atom, channel_actor& channel, caf::error& why) {
      on_channel_lost(self, channel.address(), why);
    },
    [=](grace_over_atom) { answer(self, true); },
    [=](rejoin_deadline_atom, std::uint64_t serial) { on_rejoin_deadline(self, serial); },
    [=](assignment_failed_atom, caf::error& why) { on_assignment_failed(self, std::move(why)); },
    [=](assignment_deadline_atom) {
      if (self->state.phase.is<member_phases::joining>())
        fail(self, errc::timeout, "no assignment from the scheduler in time");
    },
  };
}

} // namespace

member_node_actor spawn_member_node(caf::actor_system& system, const member_options& options,
                                    std::shared_ptr<serving_registry> serving,
                                    std::shared_ptr<traffic_registry> traffic, bool detached,
                                    std::shared_ptr<listening_socket> listening,
                                    std::shared_ptr<node_fences> fences) {
  if (!detached)
    return system.spawn(member, options, std::move(serving), std::move(traffic),
                        std::move(listening), std::move(fences));
  return system.spawn<caf::detached>(member, options, std::move(serving), std::move(traffic),
                                     std::move(listening), std::move(fences));
}

void run_member(caf::actor_system& system, const member_options& options) {
  if (options.role == node_kind::scheduler)
    throw std::invalid_argument("run_member runs a server or a worker");
  // A server binds its port for workers now, before it joins: a port in use ends it at once,
  // not after every node has joined and the scheduler assigned it.
  std::shared_ptr<listening_socket> listening;
  if (options.role == node_kind::server) {
    auto bound =
      listening_socket::bind(options.listen_host, options.listen_port, options.local_sockets);
    if (!bound)
      throw troupe_error(errc::peer_down, error_text(bound.error()) + " (--listen, --port)");
    listening = std::move(*bound);
    record_event(options.events, "listening",
                 {{{"port", listening->port()}}, {{"host", options.listen_host}}});
  }
  auto serving = std::make_shared<serving_registry>();
  auto traffic = std::make_shared<traffic_registry>();
  auto fences = std::make_shared<node_fences>();
  auto node =
    spawn_member_node(system, options, serving, traffic, true, std::move(listening), fences);
  if (options.leave)
    options.leave->arm(caf::actor_cast<leavable_actor>(node));
  caf::scoped_actor blocking{system};
  blocking->send(node, connect_atom::value);
  caf::error failure;
  // A member runs as long as its scheduler's run: the node's own deadlines (join, assignment,
  // peers, the scheduler's) end it, so this request is given the longest wait there is.
  blocking->request(node, longest_wait, run_atom::value)
    .receive([&](bool) {}, [&](caf::error& err) { failure = std::move(err); });
  if (options.leave)
    options.leave->disarm();
  blocking->send_exit(node, caf::exit_reason::user_shutdown);
  blocking->wait_for(node);
  if (failure && fences->fenced_here())
    throw fenced_error(error_text(failure));
  if (failure)
    throw troupe_error(troupe_code(failure), error_text(failure));
}

} // namespace troupe
