// A server or worker node (cluster_node.hpp). run_member reaches the scheduler (retrying
// until the join timeout: a node may start before its scheduler), then one actor joins,
// takes the assignment, spawns the node's part of the plan and watches it: the scheduler
// link, the links to servers, and every actor of the part. The scheduler's shutdown ends the
// node: normally when the run finished, else with the reason it gives.
//
// A server serves two directories: its entry points (what workers push to: the aggregator in
// front of a shard in BSP, the shard itself in async) on the listener it opens for workers,
// and its shards themselves on the scheduler link, from which the final weights are pulled.
//
// A server watches the links its workers open. When one goes down before the run has ended
// and the job goes on without lost workers (on_worker_loss = continue), the server tells its
// shards to forget the computes of that worker node: an SSP shard would otherwise hold every
// other worker once it is `staleness` steps ahead of the lost one's last push. Whether the run
// goes on is the scheduler's decision; if it stops instead, its shutdown follows.
//
// A worker told to adopt a lost worker node (on_worker_loss = adopt) spawns that node's part
// of the plan beside its own, with the same proxies for the servers and the scheduler's
// metrics, its computes adopted (compute_wiring::adopted: they recompute from the step in
// flight), serves them on its scheduler link and says ready naming the adopted node.
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
#include "cluster/member_placement.hpp"
#include "member_state.hpp"
#include "node_common.hpp"

namespace troupe {

namespace {

// Answers once the node has ended and the links it told so have closed (their peers have
// read why), or the grace is over.
void answer(member_actor self, bool grace_over = false) {
  auto& st = self->state;
  if (!st.outcome || !st.promise.pending() || (!st.closing.empty() && !grace_over))
    return;
  if (*st.outcome)
    st.promise.deliver(*st.outcome);
  else
    st.promise.deliver(true);
  if (st.listener) // held open until the links from workers that heard the end closed
    self->send_exit(st.listener, caf::exit_reason::user_shutdown);
  self->quit();
}

// Ends the node: its part and links go; the scheduler hears why unless it is the one gone
// (with the plan node whose loss is the cause, `lost_node`, when it is a lost peer).
void finish(member_actor self, caf::error reason, std::int32_t lost_node = -1) {
  auto& st = self->state;
  if (st.outcome)
    return;
  st.at = member_phase::ending;
  if (reason) {
    log_node_line(*st.options, st.label + ": " + reason_text(self->system(), reason));
    if (st.scheduler) {
      caf::anon_send(st.to_scheduler, goodbye_atom::value,
                     shutdown_message{reason_text(self->system(), reason), false, lost_node});
      st.closing.push_back(st.scheduler.address());
    }
  }
  st.part.shut_down();
  for (auto& part : st.adopted)
    part.shut_down();
  for (auto& [actor, name] : st.replicas.backup_actors)
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  st.replicas.backup_actors.clear();
  for (auto& [actor, relay] : *st.replicas.relays)
    caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  st.replicas.relays->clear();
  if (st.reports)
    caf::anon_send_exit(st.reports, caf::exit_reason::user_shutdown);
  st.serving->clear();
  // Its links still tell it when they close: it waits for those it says goodbye on below (a
  // server's links from workers, which it does not monitor, had no other way to say so, and
  // the server waited the whole grace).
  st.serving->set<remote_interface::member_control>(0, self);
  // The servers hear that this worker is done (and why), rather than a closed connection.
  const shutdown_message end{reason ? reason_text(self->system(), reason) : "the run finished",
                             !reason};
  auto links = st.server_links;
  links.push_back(st.replicas.backup_link); // a server: the link to the one holding its backups
  for (auto& link : links)
    if (link) {
      caf::anon_send(spawn_member_control_proxy(self->system(), link), goodbye_atom::value, end);
      st.closing.push_back(link.address());
    }
  // The workers still linked here hear how the run ends from this server too, rather than a
  // closed connection (the listener's end closes the links it accepted). At the end of a good
  // run that close would race the worker's own goodbye ("the connection closed"); at the end
  // of a failed one it would race the scheduler's word, and a worker that read the close first
  // would name this server as the node lost. The listener ends once they closed (answer), or
  // the grace is over.
  for (auto& [address, link] : st.worker_links) {
    caf::anon_send(spawn_member_control_proxy(self->system(), link.channel), goodbye_atom::value,
                   end);
    st.closing.push_back(address);
  }
  if (st.listener && st.worker_links.empty())
    self->send_exit(st.listener, caf::exit_reason::user_shutdown);
  st.outcome = std::move(reason);
  self->delayed_send(self, st.options->clocks().goodbye_grace(), grace_over_atom::value);
  answer(self);
}

} // namespace

void fail(member_actor self, errc code, const std::string& why) {
  finish(self, make_error(code, why));
}

namespace {

std::string facts_text(const data_facts& f) {
  return shape_string(f.sample_shape) + ", " + std::to_string(f.classes) + " classes, "
         + std::to_string(f.train_examples) + " training and "
         + std::to_string(f.validation_examples) + " validation examples";
}

// A worker reads its data from the job's paths; it must be the data the scheduler planned with.
node_data open_worker_data(const training_job& job, const data_facts& planned) {
  node_data data{open_dataset(job.train_data), open_dataset(job.validation_data)};
  const auto mine = data_facts_of(*data.train, *data.validation);
  if (mine.sample_shape != planned.sample_shape || mine.classes != planned.classes
      || mine.train_examples != planned.train_examples
      || mine.validation_examples != planned.validation_examples)
    throw std::invalid_argument("this node's data (" + facts_text(mine)
                                + ") is not the scheduler's (" + facts_text(planned) + ")");
  return data;
}

void connect_servers(member_actor self, const assignment_message& a,
                     const channel_options& options) {
  auto& st = self->state;
  st.server_links.assign(st.plan.nodes.size(), channel_actor{});
  const double backward_s = backward_seconds(*st.options);
  std::size_t late = 0, held = 0, sequenced = 0;
  for (const auto& server : a.servers) {
    if (server.node >= st.plan.nodes.size() || st.plan.nodes[server.node].kind != node_kind::server)
      throw std::invalid_argument("the assignment names node " + std::to_string(server.node)
                                  + " as a server, which the plan does not");
    auto link = options;
    const auto order = push_order_of(st.plan, options, backward_s, server.node);
    if (order.sequenced > 0) {
      link.push_sequence = order.sequence;
      link.sequence_patience = order.patience;
    }
    late += order.late;
    held += order.held;
    sequenced += order.sequenced;
    bool local = false;
    auto connected = connect_channel(self->system(), server.host, server.port, link, &local);
    if (!connected)
      throw troupe_error(troupe_code(connected.error()),
                         st.plan.nodes[server.node].name + ": " + error_text(connected.error())
                           + " (where " + st.plan.nodes[server.node].name
                           + " said it listens: start the server with --listen "
                             "or --advertise an address this worker can reach)");
    self->monitor(*connected);
    st.server_links[server.node] = *connected;
    st.local_server_links += local ? 1 : 0;
  }
  const auto backward = backward_bytes(options, backward_s);
  const auto forward = held_bytes(options, backward_s);
  if (sequenced > 0)
    st.pacing_text +=
      ", pushes in a fixed order (" + std::to_string(late) + " of " + std::to_string(sequenced)
      + " last layers first: " + std::to_string(backward) + " bytes in backward's time per link; "
      + std::to_string(held) + " light last layers last"
      + (forward == std::numeric_limits<std::int64_t>::max()
           ? std::string()
           : ", at most " + std::to_string(forward) + " bytes")
      + ")";
  else if (options.priority && options.pacing_bytes_per_second > 0 && !a.servers.empty()
           && !needs_fixed_push_order(st.plan))
    st.pacing_text += ", pushes by rank as they come (the only worker: no fixed order)";
}

// The compute threads of this node (compute_threads), told to the kernels.
int threads_of(const cluster_node_options& options, std::uint32_t scheduler_threads) {
  const int threads = compute_threads(options, scheduler_threads);
  if (options.use_threads)
    options.use_threads(threads);
  return threads;
}

// Says where an adopted compute recomputes from (node_part_options::on_rewound).
std::function<void(int, std::int64_t)>
rewound_logger(const cluster_node_options& log, const std::string& label, std::int64_t steps) {
  steps = std::max<std::int64_t>(1, steps);
  return [log, label, steps](int worker, std::int64_t step) {
    log_node_line(log, label + ": compute_" + std::to_string(worker)
                         + " (adopted) recomputes from step " + std::to_string(step) + " (epoch "
                         + std::to_string(step / steps) + ", batch " + std::to_string(step % steps)
                         + " of " + std::to_string(steps) + "), the step in flight");
  };
}

// Spawns this node's part; true when it opened a listener for workers (a server).
bool take_assignment(member_actor self, const assignment_message& a) {
  auto& st = self->state;
  const auto& options = *st.options;
  const auto job = job_from_bytes(a.job, a.job_hash);
  if (options.own_job && job_hash_without_counts(*options.own_job) != job_hash_without_counts(job))
    throw std::invalid_argument(
      "the scheduler's job is not the one this node's config resolves to ("
      + difference_text(job_differences(*options.own_job, job, "the scheduler's"))
      + "): start every node with the same config and flags");
  st.threads = threads_of(options, a.threads);
  st.plan = plan_placement(job, a.facts);
  st.part_node = static_cast<int>(a.node);
  if (st.plan.hash != a.plan_hash)
    throw std::invalid_argument("this node plans the job as plan " + std::to_string(st.plan.hash)
                                + ", the scheduler as plan " + std::to_string(a.plan_hash)
                                + " (another version?)");
  const int node = static_cast<int>(a.node);
  if (a.node >= st.plan.nodes.size()
      || (options.role == node_kind::server) != (st.plan.nodes[a.node].kind == node_kind::server))
    throw std::invalid_argument("the scheduler assigned node " + std::to_string(a.node)
                                + ", which is no " + to_string(options.role) + " of the plan");
  st.label = st.plan.nodes[a.node].name;
  st.continue_on_worker_loss = job.nodes.continue_on_worker_loss;
  st.replicas.copies = job.nodes.replicas;
  auto link = channel_options_of(options, st.label, st.traffic);
  link.serving = st.serving; // its links to servers, and a server's links from workers
  link.same_host_shortcut = options.local_sockets;
  link.plan_hash = st.plan.hash;
  link.keys = wire_keys_of(st.plan);
  // Its links to servers, a server's links from workers and to its backups: a step's tensors
  // leave first layers first unless the job says otherwise (frame_priority.hpp).
  link.priority = job.topology.priority;
  link.order = forward_order_of(st.plan);
  link.pacing_bytes_per_second = link_share(options, st.plan);
  if (link.pacing_bytes_per_second > 0)
    st.pacing_text = ", TCP links paced at " + std::to_string(link.pacing_bytes_per_second)
                     + " bytes/s each, at most "
                     + std::to_string(paced_unsent_bytes(link.pacing_bytes_per_second))
                     + " bytes unsent in the kernel";
  // The scheduler pulls the final weights over this link: check them against the plan too.
  caf::anon_send(st.scheduler, plan_atom::value, st.plan.hash, link.keys);
  if (options.role == node_kind::worker)
    connect_servers(self, a, link);
  const auto spec = model_of(job, a.facts);
  // Only a server's shards start from the job's reference model; a worker's replicas are
  // built by its computes.
  std::vector<tensor> initial;
  if (options.role == node_kind::server)
    initial = initial_weights(*build_model(spec));
  node_data data;
  if (options.role == node_kind::worker)
    data = open_worker_data(job, a.facts);
  node_part_options part;
  part.node = node;
  if (a.adopt) { // a spare taking a lost worker's node: its computes recompute the step in flight
    if (options.role != node_kind::worker || !options.spare)
      throw std::invalid_argument(
        "the scheduler handed this node a lost worker's place, and it is no spare worker");
    part.adopted = true;
    part.on_rewound =
      rewound_logger(*st.options, st.plan.nodes[a.node].name, st.plan.steps_per_epoch);
  } else if (options.spare) {
    throw std::invalid_argument(
      "the scheduler assigned this spare a place of its own, not a lost worker's");
  }
  // Computes report their batches to the scheduler's metrics actor through a proxy; the
  // channel flushes it before it answers a phase (serving_registry::report_path).
  // The relay outlives this scheduler: one restarted with --resume is reached through it.
  st.reports = spawn_metrics_relay(
    self->system(), spawn_metrics_sink_proxy(self->system(), st.scheduler, options.position),
    [log = options, label = st.label](std::int64_t dropped) {
      log_node_line(log, label + ": " + std::to_string(dropped)
                           + " batch report(s) made while the scheduler was away went unlogged");
    });
  part.metrics = caf::actor_cast<metrics_sink_actor>(st.reports);
  st.serving->set_report_path(part.metrics);
  part.timeouts = options.timeouts;
  part.devices = options.devices;
  part.compute.stand_in = options.stand_in;
  // A node on a thread of its own puts its computes and checkpoint part on theirs; one spawned
  // scheduled (a test's) keeps them scheduled, where CAF's deterministic coordinator runs them.
  const bool detached = self->getf(caf::abstract_actor::is_detached_flag);
  part.compute.detached = detached;
  part.detached_checkpoint_part = detached;
  if (options.threads == 0 && a.threads == 0) // the threads are this node's share of its host
    part.compute_cpus = slot_cpus(options.host_slot, st.threads, computes_on(st.plan, node),
                                  std::thread::hardware_concurrency());
  st.bound_cpus = part.compute_cpus.empty()
                    ? ""
                    : cpus_text(part.compute_cpus.front().front(), part.compute_cpus.back().back());
  auto links = st.server_links;
  const auto plan = st.plan;
  auto& system = self->system();
  part.remote.push_target = [=, &system, relays = st.replicas.relays,
                             relayed = job.nodes.replicas > 1](std::size_t actor) {
    const auto& target = plan.actors.at(actor);
    const auto& to = links.at(static_cast<std::size_t>(target.node));
    if (!to)
      throw std::invalid_argument("no link to "
                                  + plan.nodes.at(static_cast<std::size_t>(target.node)).name
                                  + ", which holds " + target.name);
    return remote_shard(system, relays, relayed, plan, actor, to);
  };
  st.job = job;
  st.spec = spec;
  st.data = data;
  st.part_options = part;
  spawn_node_part(system, job, st.plan, spec, initial, data, part, st.part);
  for (auto& [actor, name] : st.part.spawned)
    self->monitor(actor);
  // Each shard here is served by index: the scheduler pulls the final weights from it, and
  // workers push to its entry point where one exists (the aggregator in front of it, which
  // passes a pull on to the shard).
  for (auto i : st.plan.actors_on(node)) {
    const auto& entry = st.plan.actors[i];
    if (entry.role == plan_role::shard)
      st.serving->set<remote_interface::push_target>(static_cast<std::uint32_t>(entry.shard),
                                                     st.part.targets[i]);
  }
  for (const auto& [shard, actor] : entry_points(st.plan, node))
    st.serving->set<remote_interface::push_target>(shard, st.part.targets.at(actor));
  for (const auto& [worker, compute] : st.part.computes)
    st.serving->set<remote_interface::compute_driver>(static_cast<std::uint32_t>(worker), compute);
  if (st.part
        .checkpoint_part) // the scheduler's checkpoints ask it to save or restore this node's state
    st.serving->set<remote_interface::checkpoint_part>(0, st.part.checkpoint_part);
  if (options.role != node_kind::server)
    return false;
  if (st.replicas.copies > 1)
    spawn_backups(self, job, initial);
  // Workers connect only after this node is ready.
  if (st.listening) {
    st.listener = spawn_listener(system, std::move(st.listening), link);
  } else {
    auto listener = spawn_listener(system, options.listen_host, options.listen_port, link);
    if (!listener)
      throw troupe_error(errc::peer_down, error_text(listener.error()));
    st.listener = *listener;
  }
  self->monitor(st.listener);
  if (st.replicas.copies > 1) // its own listener runs first: the next server may link here at once
    link_to_backups(self, a, link);
  return true;
}

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
      const auto& route = plan.gradient_route(plan.actors[c].worker, plan.actors[i].shard);
      if (route.to == i) // async, ssp: the compute pushes to the shard itself
        sources.push_back(route.source);
    }
    if (!sources.empty())
      out.emplace_back(i, std::move(sources));
  }
  return out;
}

// A worker link went down: when it is a lost worker node (not one that finished) and the run
// goes on without it, this server's shards stop waiting for its computes. The link is known
// by the name its hello gave, which is the plan node name the worker was assigned ("worker_1"),
// recorded only once the link was admitted (its link_up): a peer refused for a wrong secret
// never counts, whatever name it claimed. (The name in the link's messages is a log phrase
// with the address in it; the traffic registry keeps the hello's name as it came.)
void on_worker_link_down(member_actor self, const caf::actor_addr& link, const caf::error& why) {
  auto& st = self->state;
  const auto known = st.worker_links.find(link);
  if (known == st.worker_links.end())
    return;
  const auto name = known->second.name;
  st.worker_links.erase(known);
  if (!why || !st.continue_on_worker_loss || st.outcome || (st.told && st.told->finished))
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

// "servers over local sockets", "servers over TCP", or how many of each.
std::string server_links_text(const member_state& st) {
  const auto all =
    static_cast<std::size_t>(std::count_if(st.server_links.begin(), st.server_links.end(),
                                           [](const channel_actor& c) { return bool(c); }));
  if (st.local_server_links == all)
    return "servers over local sockets";
  if (st.local_server_links == 0)
    return "servers over TCP";
  return std::to_string(st.local_server_links) + " of " + std::to_string(all)
         + " servers over local sockets, the others over TCP";
}

void say_ready(member_actor self, std::uint32_t node, std::uint16_t port) {
  auto& st = self->state;
  const auto computes = st.part.computes.size();
  const auto threads = std::to_string(st.threads) + " thread" + (st.threads == 1 ? "" : "s");
  log_node_line(
    *st.options,
    st.label + ": ready (" + std::to_string(st.part.spawned.size()) + " actors"
      + (port ? ", listening on " + st.options->listen_host + ":" + std::to_string(port) : "")
      + (computes ? ", " + std::to_string(computes) + " compute" + (computes == 1 ? "" : "s")
                      + " on " + threads + (computes == 1 ? "" : " each")
                  : ", kernels on " + threads)
      + (st.bound_cpus.empty() ? "" : ", bound to " + st.bound_cpus)
      + (st.server_links.empty() ? "" : ", " + server_links_text(st)) + st.pacing_text + ")");
  if (st.at != member_phase::starting)
    return; // ended while its listener started
  st.at = member_phase::running;
  st.ready_port = port;
  caf::anon_send(st.to_scheduler, ready_atom::value,
                 ready_message{node, port, static_cast<std::uint32_t>(st.threads)});
}

// An assignment that could not be taken (a server that cannot be reached, ...) ends the node;
// but a scheduler that ended the run meanwhile (a server it lost, which is why the connection
// was refused) said why in a goodbye already in the mailbox, behind this handler: the node ends
// with that reason, as it would once the link closed, rather than its own echo of it (found
// by scripts/chaos.py).
void fail_after_the_mailbox(member_actor self, caf::error why) {
  self->send(self, assignment_failed_atom::value, std::move(why));
}

void on_assignment_failed(member_actor self, caf::error why) {
  auto& st = self->state;
  if (st.outcome)
    return;
  if (st.told && !st.told->finished)
    return fail(self, errc::peer_down,
                "lost the scheduler at " + clock_time_now() + ": " + st.told->reason);
  finish(self, std::move(why));
}

// The scheduler's assignment: spawn this node's part, then say ready (a server once its
// listener for workers has its port).
void on_assignment(member_actor self, const assignment_message& a) {
  auto& st = self->state;
  if (st.at != member_phase::joining)
    return fail(self, errc::bad_request, "the scheduler sent an assignment twice");
  st.at = member_phase::starting;
  const auto node = a.node;
  try {
    if (!take_assignment(self, a)) {
      if (a.adopt) {
        std::string computes;
        for (const auto& [worker, compute] : st.part.computes)
          computes += (computes.empty() ? "compute_" : ", compute_") + std::to_string(worker);
        log_node_line(*st.options, st.label + ": adopted " + st.plan.nodes[node].name + " ("
                                     + computes + ", with their loaders) as a spare at "
                                     + clock_time_now()
                                     + "; they recompute from the step in flight");
      }
      return say_ready(self, node, 0);
    }
    self->request(st.listener, st.options->clocks().port_wait(), port_atom::value)
      .then([=](std::uint16_t port) { say_ready(self, node, port); },
            [=](caf::error& err) {
              fail(self, errc::peer_down,
                   "cannot listen on " + self->state.options->listen_host + ":"
                     + std::to_string(self->state.options->listen_port) + ": "
                     + reason_text(self->system(), err));
            });
  } catch (const troupe_error& e) {
    fail_after_the_mailbox(self, make_error(e.code(), e.what()));
  } catch (const std::exception& e) {
    fail_after_the_mailbox(self, make_error(classify_exception(e), e.what()));
  }
}

// Why this worker cannot adopt plan node `node` ("" if it can): a worker node of the plan,
// not its own or one adopted already, holding loaders and computes only (a hierarchical
// machine's aggregators are not adopted yet).
std::string adoption_refused(const member_state& st, std::uint32_t node) {
  if (st.options->role != node_kind::worker || st.at != member_phase::running || !st.job)
    return "this node is no running worker";
  if (node >= st.plan.nodes.size() || st.plan.nodes[node].kind != node_kind::worker)
    return "plan node " + std::to_string(node) + " is no worker node";
  if (static_cast<int>(node) == st.part_node
      || std::find(st.adopted_nodes.begin(), st.adopted_nodes.end(), static_cast<int>(node))
           != st.adopted_nodes.end())
    return st.plan.nodes[node].name + " runs here already";
  for (auto i : st.plan.actors_on(node)) {
    const auto role = st.plan.actors[i].role;
    if (role != plan_role::loader && role != plan_role::validation_loader
        && role != plan_role::compute)
      return st.plan.nodes[node].name + " holds " + st.plan.actors[i].name
             + ", which a worker does not adopt (only loaders and computes: on_worker_loss = adopt "
               "covers bsp)";
  }
  return "";
}

// The scheduler's adopt: spawns the lost node's loaders and computes here, serves the computes
// on the scheduler link, and says ready naming that node.
void on_adopt(member_actor self, const adopt_message& a) {
  auto& st = self->state;
  if (auto why = adoption_refused(st, a.node); !why.empty())
    return fail(self, errc::bad_request, "cannot adopt as the scheduler asked: " + why);
  const auto lost = static_cast<int>(a.node);
  auto options = st.part_options;
  options.node = lost;
  options.adopted = true;
  options.compute_cpus.clear(); // its computes share this node's CPUs
  options.on_wired = nullptr;
  options.on_rewound = rewound_logger(*st.options, st.label, st.plan.steps_per_epoch);
  auto& part = st.adopted.emplace_back();
  try {
    spawn_node_part(self->system(), *st.job, st.plan, st.spec, {}, st.data, options, part);
  } catch (const std::exception& e) {
    return fail(self, classify_exception(e),
                "cannot adopt " + st.plan.nodes[a.node].name + ": " + e.what());
  }
  st.adopted_nodes.push_back(lost);
  for (auto& [actor, name] : part.spawned)
    self->monitor(actor);
  std::string computes;
  for (const auto& [worker, compute] : part.computes) {
    st.serving->set<remote_interface::compute_driver>(static_cast<std::uint32_t>(worker), compute);
    computes += (computes.empty() ? "compute_" : ", compute_") + std::to_string(worker);
  }
  log_node_line(*st.options, st.label + ": adopted " + st.plan.nodes[a.node].name + " (" + computes
                               + ", with their loaders) at " + clock_time_now()
                               + "; they recompute from the step in flight");
  caf::anon_send(st.to_scheduler, ready_atom::value,
                 ready_message{a.node, 0, static_cast<std::uint32_t>(st.threads)});
}

std::string scheduler_address(const cluster_node_options& o) {
  return o.scheduler_host + ":" + std::to_string(o.scheduler_port);
}

// Link `link` ended (`why`; empty: normally). Links report this before they fail anything,
// so a loss is seen here before whatever it makes fail (a compute whose push failed).
void on_link_lost(member_actor self, const caf::actor_addr& link, const caf::error& why) {
  auto& st = self->state;
  if (st.outcome) {
    st.closing.erase(std::remove(st.closing.begin(), st.closing.end(), link), st.closing.end());
    return answer(self);
  }
  if (st.worker_links.count(link))
    return on_worker_link_down(self, link, why);
  const bool scheduler = st.scheduler && link == st.scheduler.address();
  std::size_t server = st.server_links.size();
  for (std::size_t n = 0; n < st.server_links.size(); ++n)
    if (st.server_links[n] && link == st.server_links[n].address())
      server = n;
  if (!scheduler && !(st.told && st.told->finished) && on_replica_link_lost(self, link, why))
    return; // replicas = 2: a lost server is the scheduler's to replace
  if (!scheduler && server == st.server_links.size())
    return; // a link this node no longer uses (or a refused peer's)
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
  if (scheduler && train_on_without_scheduler(self, why))
    return; // a scheduler restarted with --resume takes the run over
  if (scheduler) {
    st.scheduler = channel_actor{};
    st.to_scheduler = scheduler_control_actor{};
    return fail(self, errc::peer_down,
                "lost the scheduler at " + clock_time_now() + ": "
                  + (st.told ? st.told->reason : reason_text(self->system(), why)));
  }
  st.server_links[server] = channel_actor{};
  finish(self,
         make_error(errc::peer_down, "lost " + st.plan.nodes[server].name + " at "
                                       + clock_time_now() + ": "
                                       + reason_text(self->system(), why)),
         static_cast<std::int32_t>(server));
}

void on_down(member_actor self, const caf::down_msg& down) {
  auto& st = self->state;
  if (st.outcome) {
    st.closing.erase(std::remove(st.closing.begin(), st.closing.end(), down.source),
                     st.closing.end());
    return answer(self);
  }
  if (st.listener && down.source == st.listener.address())
    return fail(self, errc::peer_down,
                "the listener for workers ended: " + reason_text(self->system(), down.reason));
  if (st.told && st.told->finished)
    return finish(self, caf::error{});
  // An actor of the part ended. When a lost link made it fail, that loss reached this actor
  // first (on_link_lost) and ended the node already.
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
  // A link that ended without saying so (killed): its down is the loss.
  on_link_lost(self, down.source, down.reason);
}

// How often a node tries again to reach a scheduler that does not listen yet (a node may start
// before its scheduler): a retry period, not an ordering of events.
constexpr auto connect_retry = std::chrono::milliseconds(200);

} // namespace

void join_over(member_actor self, const channel_actor& link) {
  auto& st = self->state;
  if (st.at != member_phase::connecting)
    return;
  st.at = member_phase::joining;
  st.scheduler = link;
  st.to_scheduler = spawn_scheduler_control_proxy(self->system(), link);
  self->monitor(link);
  // A server bound its port before it joined: the scheduler can tell the other servers where
  // it listens (replicas = 2) before any is ready.
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
  caf::anon_send(st.to_scheduler, join_atom::value, std::move(join));
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

namespace {

// One try to reach the scheduler (blocks while connecting: the node's actor runs on a thread of
// its own); until the join timeout, a failed try is tried again.
void try_to_connect(member_actor self) {
  auto& st = self->state;
  if (st.at != member_phase::connecting && !(st.at == member_phase::rejoining && !st.scheduler))
    return;
  if (st.at == member_phase::connecting && !st.unreachable
      && !st.retrying) // the first try starts the join timeout
    self->delayed_send(self, st.options->join_timeout, connect_deadline_atom::value);
  // A node rejoining with its place goes by its plan node's name, as on its other links, and
  // checks frames against its plan from the start.
  const bool placed = st.at == member_phase::rejoining && st.part_node >= 0;
  auto link = channel_options_of(*st.options,
                                 placed ? st.label
                                        : std::string(to_string(st.options->role)) + " (pid "
                                            + std::to_string(::getpid()) + ")",
                                 st.traffic);
  link.serving = st.serving;
  if (placed) {
    link.plan_hash = st.plan.hash;
    link.keys = wire_keys_of(st.plan);
  }
  auto connected =
    connect_channel(self->system(), st.options->scheduler_host, st.options->scheduler_port, link);
  if (connected)
    return st.at == member_phase::rejoining ? rejoin_over(self, *connected)
                                            : join_over(self, *connected);
  st.unreachable = std::move(connected.error());
  if (st.at
      == member_phase::rejoining) // its deadline is the scheduler timeout, said when it was lost
    return (void)self->delayed_send(self, connect_retry, connect_atom::value);
  if (!st.retrying)
    log_node_line(*st.options, std::string(to_string(st.options->role)) + ": no scheduler at "
                                 + scheduler_address(*st.options)
                                 + " yet; retrying until the join timeout");
  st.retrying = true;
  self->delayed_send(self, connect_retry, connect_atom::value);
}

member_node_actor::behavior_type member(member_actor self, cluster_node_options options,
                                        std::shared_ptr<serving_registry> serving,
                                        std::shared_ptr<traffic_registry> traffic,
                                        std::shared_ptr<listening_socket> listening) {
  auto& st = self->state;
  st.listening = std::move(listening);
  st.traffic = std::move(traffic);
  st.options.emplace(std::move(options));
  st.serving = std::move(serving);
  st.serving->set<remote_interface::member_control>(0, self);
  st.label = std::string(to_string(st.options->role))
             + (st.options->spare ? " (spare, pid " : " (pid ") + std::to_string(::getpid()) + ")";
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
  // Only the scheduler's link may assign or query: a server's links from workers reach this
  // actor too (for their losses).
  auto from_scheduler = [=](const channel_actor& link, const char* what) {
    if (self->state.scheduler && link == self->state.scheduler)
      return true;
    log_node_line(*self->state.options, self->state.label + ": ignored " + what
                                          + " from a link other than the scheduler's");
    return false;
  };
  return {
    [=](run_atom) -> caf::result<bool> {
      self->state.promise = self->make_response_promise<bool>();
      auto promise = self->state.promise;
      answer(self);
      return promise;
    },
    [=](scheduler_link_atom, channel_actor& link) {
      if (self->state.at == member_phase::rejoining && !self->state.scheduler)
        rejoin_over(self, link);
      else
        join_over(self, link);
    },
    [=](connect_atom) { try_to_connect(self); },
    [=](connect_deadline_atom) {
      auto& st = self->state;
      if (st.at != member_phase::connecting)
        return;
      // The caller says it (run_member throws it): nothing else to tell anyone.
      st.at = member_phase::ending;
      st.outcome =
        make_error(errc::peer_down, "no scheduler at " + scheduler_address(*st.options) + " within "
                                      + std::to_string(st.options->join_timeout.count() / 1000)
                                      + " s (--join-timeout): " + error_text(st.unreachable));
      answer(self);
    },
    [=](assignment_atom, channel_actor& link, assignment_message& a) {
      if (!self->state.outcome && from_scheduler(link, "an assignment"))
        on_assignment(self, a);
    },
    [=](traffic_query_atom, channel_actor& link, traffic_query_message& query) {
      if (!self->state.outcome && from_scheduler(link, "a traffic query"))
        on_traffic_query(self, query);
    },
    [=](adopt_atom, channel_actor& link, adopt_message& a) {
      if (!self->state.outcome && from_scheduler(link, "an adopt"))
        on_adopt(self, a);
    },
    [=](promote_atom, channel_actor& link, promote_message& p) {
      if (!self->state.outcome && from_scheduler(link, "a promote"))
        on_promote(self, p);
    },
    [=](goodbye_atom, channel_actor& link, shutdown_message& end) {
      // The scheduler's says how the run ends; the link's end follows (on_link_lost). A
      // server's or worker's goodbye is followed by its link's end, which names it.
      if (self->state.scheduler && link == self->state.scheduler)
        self->state.told = end;
    },
    [=](link_up_atom, channel_actor& link, const std::string&) {
      if (link == self->state.scheduler)
        self->state.scheduler_admitted = true;
      if (self->state.options->role == node_kind::server && !self->state.outcome
          && link != self->state.scheduler) {
        self->state.worker_links[link.address()] = {self->state.traffic->peer_of(link.address()),
                                                    link};
      }
    },
    [=](link_lost_atom, channel_actor& link, caf::error& why) {
      on_link_lost(self, link.address(), why);
    },
    [=](grace_over_atom) { answer(self, true); },
    [=](rejoin_deadline_atom, std::uint64_t serial) { on_rejoin_deadline(self, serial); },
    [=](assignment_failed_atom, caf::error& why) { on_assignment_failed(self, std::move(why)); },
    [=](assignment_deadline_atom) {
      if (self->state.at == member_phase::joining)
        fail(self, errc::timeout, "no assignment from the scheduler in time");
    },
  };
}

} // namespace

member_node_actor spawn_member_node(caf::actor_system& system, const cluster_node_options& options,
                                    std::shared_ptr<serving_registry> serving,
                                    std::shared_ptr<traffic_registry> traffic, bool detached,
                                    std::shared_ptr<listening_socket> listening) {
  if (!detached)
    return system.spawn(member, options, std::move(serving), std::move(traffic),
                        std::move(listening));
  return system.spawn<caf::detached>(member, options, std::move(serving), std::move(traffic),
                                     std::move(listening));
}

void run_member(caf::actor_system& system, const cluster_node_options& options) {
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
  }
  auto serving = std::make_shared<serving_registry>();
  auto traffic = std::make_shared<traffic_registry>();
  auto node = spawn_member_node(system, options, serving, traffic, true, std::move(listening));
  caf::scoped_actor blocking{system};
  blocking->send(node, connect_atom::value);
  caf::error failure;
  // A member runs as long as its scheduler's run: the node's own deadlines (join, assignment,
  // peers, the scheduler's) end it, so this request is given the longest wait there is.
  blocking->request(node, longest_wait, run_atom::value)
    .receive([&](bool) {}, [&](caf::error& err) { failure = std::move(err); });
  blocking->send_exit(node, caf::exit_reason::user_shutdown);
  blocking->wait_for(node);
  if (failure)
    throw troupe_error(troupe_code(failure), error_text(failure));
}

} // namespace troupe
