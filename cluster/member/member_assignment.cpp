// How a member takes its assignment (member_state.hpp): it checks that the scheduler's job
// and plan are its own, channels to the servers (a worker), spawns its part of the plan with the
// options the assignment implies, serves that part to its peers and, a server, opens its
// listener for workers and its backups; then it says ready.
#include <algorithm>
#include <limits>
#include <thread>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/node_part.hpp>
#include <troupe/actors/weights_init.hpp>
#include <troupe/cluster/job_difference.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/cluster/metrics_relay.hpp>
#include <troupe/cluster/remote_proxies.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/dataset.hpp>

#include "cluster/frame_socket.hpp"
#include "cluster/member/member_placement.hpp"
#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

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
  st.server_channels.assign(st.plan.nodes.size(), channel_actor{});
  const double backward_s = backward_seconds(*st.options);
  std::size_t late = 0, held = 0, sequenced = 0;
  for (const auto& server : a.servers) {
    if (server.node >= st.plan.nodes.size() || st.plan.nodes[server.node].kind != node_kind::server)
      throw std::invalid_argument("the assignment names node " + std::to_string(server.node)
                                  + " as a server, which the plan does not");
    auto channel = options;
    const auto order = push_order_of(st.plan, options, backward_s, server.node);
    if (order.sequenced > 0) {
      channel.push_sequence = order.sequence;
      channel.sequence_patience = order.patience;
    }
    late += order.late;
    held += order.held;
    sequenced += order.sequenced;
    bool local = false;
    auto connected = connect_channel(self->system(), server.host, server.port, channel, &local);
    if (!connected)
      throw troupe_error(troupe_code(connected.error()),
                         st.plan.nodes[server.node].name + ": " + error_text(connected.error())
                           + " (where " + st.plan.nodes[server.node].name
                           + " said it listens: start the server with --listen "
                             "or --advertise an address this worker can reach)");
    self->monitor(*connected);
    st.server_channels[server.node] = *connected;
    st.local_server_channels += local ? 1 : 0;
  }
  const auto backward = backward_bytes(options, backward_s);
  const auto forward = held_bytes(options, backward_s);
  if (sequenced > 0)
    st.pacing_text +=
      ", pushes in a fixed order (" + std::to_string(late) + " of " + std::to_string(sequenced)
      + " last layers first: " + std::to_string(backward)
      + " bytes in backward's time per channel; " + std::to_string(held) + " light last layers last"
      + (forward == std::numeric_limits<std::int64_t>::max()
           ? std::string()
           : ", at most " + std::to_string(forward) + " bytes")
      + ")";
  else if (options.priority && options.pacing_bytes_per_second > 0 && !a.servers.empty()
           && !needs_fixed_push_order(st.plan))
    st.pacing_text += ", pushes by rank as they come (the only worker: no fixed order)";
}

// The compute threads of this node (compute_threads), told to the kernels.
int threads_of(const member_options& options, std::uint32_t scheduler_threads) {
  const int threads = compute_threads(options, scheduler_threads);
  if (options.use_threads)
    options.use_threads(threads);
  return threads;
}

// The job and plan the assignment names, checked against this node's own: the node's place.
training_job place_of(member_actor self, const assignment_message& a) {
  auto& st = self->state;
  const auto& options = *st.options;
  auto job = job_from_bytes(a.job, a.job_hash);
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
  if (a.node >= st.plan.nodes.size()
      || (options.role == node_kind::server) != (st.plan.nodes[a.node].kind == node_kind::server))
    throw std::invalid_argument("the scheduler assigned node " + std::to_string(a.node)
                                + ", which is no " + to_string(options.role) + " of the plan");
  const std::vector<int> ranks(a.ranks.begin(), a.ranks.end());
  if (!ranks.empty() && !a.adopt)
    throw std::invalid_argument("the scheduler assigned ranks of " + st.plan.nodes[a.node].name
                                + " apart from it outside a move");
  if (auto why = split_refusal(st.plan, static_cast<int>(a.node), ranks); !why.empty())
    throw std::invalid_argument("the scheduler assigned " + rank_names(ranks) + " apart: " + why);
  // Ranks taken apart from their node run under a name of their own: the node runs elsewhere.
  st.label = st.plan.nodes[a.node].name + (ranks.empty() ? "" : "/" + rank_names(ranks));
  if (options.events) { // its rank is known from here on
    options.events->set_rank(static_cast<int>(a.rank));
    options.events->record("assigned", {{{"node", a.node}, {"threads", st.threads}},
                                        {{"name", st.label}, {"adopt", a.adopt ? "yes" : "no"}}});
  }
  st.continue_on_worker_loss = job.nodes.continue_on_worker_loss;
  st.backup.shard_backups = job.nodes.shard_backups;
  return job;
}

// The options of this node's channels to servers, a server's channels from workers and to its
// backups: a step's tensors leave first layers first unless the job says otherwise
// (frame_priority.hpp), paced at this node's share of its host's link.
channel_options channels_of(member_actor self, const training_job& job) {
  auto& st = self->state;
  auto channel = channel_options_of(*st.options, st.label, st.traffic);
  channel.serving = st.serving;
  channel.fences = st.fences;
  channel.same_host_shortcut = st.options->local_sockets;
  channel.plan_hash = st.plan.hash;
  channel.keys = wire_keys_of(st.plan);
  channel.priority = job.topology.priority;
  channel.order = forward_order_of(st.plan);
  channel.pacing_bytes_per_second = link_share(*st.options, st.plan);
  if (channel.pacing_bytes_per_second > 0)
    st.pacing_text = ", TCP channels paced at " + std::to_string(channel.pacing_bytes_per_second)
                     + " bytes/s each, at most "
                     + std::to_string(paced_unsent_bytes(channel.pacing_bytes_per_second))
                     + " bytes unsent in the kernel";
  return channel;
}

// A spare is handed a lost worker's place (or a node taken from a worker that adopted it), and
// only that: its computes recompute the step in flight. A worker that joined a run in training
// is a spare too, whether or not it was started as one.
void check_spare(const member_state& st, const assignment_message& a, node_part_options& part) {
  const auto& options = *st.options;
  if (a.adopt) {
    if (options.role != node_kind::worker)
      throw std::invalid_argument(
        "the scheduler handed this node a lost worker's place, and it is no worker");
    part.adopted = true;
    part.on_rewound = rewound_logger(options, st.label, st.plan.steps_per_epoch);
  } else if (options.spare) {
    throw std::invalid_argument(
      "the scheduler assigned this spare a place of its own, not a lost worker's");
  }
}

// What spawn_node_part is given besides the plan: where reports go, the devices and CPUs, and
// how a compute reaches a shard on another node.
node_part_options part_options_of(member_actor self, const assignment_message& a,
                                  const training_job& job) {
  auto& st = self->state;
  const auto& options = *st.options;
  node_part_options part;
  part.node = static_cast<int>(a.node);
  part.ranks.assign(a.ranks.begin(), a.ranks.end());
  check_spare(st, a, part);
  // Computes report their batches to the scheduler's metrics actor through a proxy; the
  // channel flushes it before it answers a phase (serving_registry::report_path).
  // The relay outlives this scheduler: one restarted with --resume is reached through it.
  st.reports = spawn_metrics_relay(
    self->system(), spawn_metrics_sink_proxy(self->system(), st.scheduler, options.position),
    [log = options, label = st.label](std::int64_t dropped) {
      log_node_line(log, label + ": " + std::to_string(dropped)
                           + " batch report(s) made while the scheduler was away went unlogged");
    });
  part.metrics = st.reports;
  st.serving->set_report_path(part.metrics);
  part.timeouts = options.timeouts;
  part.devices = options.devices;
  part.timeline = options.timeline;
  if (part.timeline)
    part.timeline->set_process_name(st.label); // its plan node's name, now that it has one
  part.compute.stand_in = options.stand_in;
  // A node on a thread of its own puts its computes and checkpoint part on theirs; one spawned
  // scheduled (a test's) keeps them scheduled, where CAF's deterministic coordinator runs them.
  const bool detached = self->getf(caf::abstract_actor::is_detached_flag);
  part.compute.detached = detached;
  part.detached_checkpoint_part = detached;
  if (options.threads == 0 && a.threads == 0) // the threads are this node's share of its host
    part.compute_cpus =
      slot_cpus(options.host_slot, st.threads,
                part.ranks.empty() ? computes_on(st.plan, part.node) : part.ranks.size(),
                std::thread::hardware_concurrency());
  st.bound_cpus = part.compute_cpus.empty()
                    ? ""
                    : cpus_text(part.compute_cpus.front().front(), part.compute_cpus.back().back());
  auto& system = self->system();
  part.remote.push_target = [=, &system, channels = st.server_channels, plan = st.plan,
                             relays = st.backup.relays,
                             relayed = job.nodes.shard_backups > 0](std::size_t actor) {
    const auto& target = plan.actors.at(actor);
    const auto& to = channels.at(static_cast<std::size_t>(target.node));
    if (!to)
      throw std::invalid_argument("no channel to "
                                  + plan.nodes.at(static_cast<std::size_t>(target.node)).name
                                  + ", which holds " + target.name);
    return remote_shard(system, relays, relayed, plan, actor, to);
  };
  return part;
}

// Serves the part's actors to its peers by index: each shard here (the scheduler pulls the
// final weights from it), the entry points workers push to (the aggregator in front of a
// shard, which passes a pull on to it), the computes and the checkpoint part.
void serve_part(member_actor self, int node) {
  auto& st = self->state;
  for (auto i : st.plan.actors_on(node)) {
    const auto& entry = st.plan.actors[i];
    if (entry.role == plan_role::shard)
      st.serving->set<remote_interface::push_target>(static_cast<std::uint32_t>(entry.shard),
                                                     st.part.targets[i]);
  }
  for (const auto& [shard, actor] : entry_points(st.plan, node))
    st.serving->set<remote_interface::push_target>(shard, st.part.targets.at(actor));
  for (const auto& [rank, compute] : st.part.computes)
    st.serving->set<remote_interface::compute_driver>(static_cast<std::uint32_t>(rank), compute);
  if (st.part.checkpoint_part)
    st.serving->set<remote_interface::checkpoint_part>(0, st.part.checkpoint_part);
}

// A server's side once its part runs: the backups of the previous server's shards, then its
// listener for workers (they connect only after this node is ready), then its channel to the
// next server, which holds its own shards' backups.
void open_server_side(member_actor self, const assignment_message& a, const training_job& job,
                      const std::vector<tensor>& initial, const channel_options& channel) {
  auto& st = self->state;
  auto& system = self->system();
  if (st.backup.shard_backups > 0)
    spawn_backups(self, job, initial);
  if (st.listening) {
    st.listener = spawn_listener(system, std::move(st.listening), channel);
  } else {
    auto listener =
      spawn_listener(system, st.options->listen_host, st.options->listen_port, channel);
    if (!listener)
      throw troupe_error(errc::peer_down, error_text(listener.error()));
    st.listener = *listener;
  }
  self->monitor(st.listener);
  if (st.backup.shard_backups
      > 0) // its own listener runs first: the next server may connect here at once
    connect_backups(self, a, channel);
}

// The weights a server's shards start from: the initializer's under the job's seed, or with
// init_from the checkpoint's (the reset parameters the initializer's), as one process starts.
// Throws io_error naming the file.
std::vector<tensor> starting_weights(const member_state& st, const training_job& job,
                                     const model_spec& spec) {
  auto reference = build_model(spec);
  if (job.init_from.empty())
    return initial_weights(*reference);
  auto start = fine_tuning_start_of(job.init_from, *reference, job.reset_layers);
  log_node_line(*st.options, st.label + ": " + start.line);
  return std::move(start.weights);
}

// Spawns this node's part; true when it opened a listener for workers (a server).
bool take_assignment(member_actor self, const assignment_message& a) {
  auto& st = self->state;
  const auto job = place_of(self, a);
  const auto channel = channels_of(self, job);
  // The scheduler pulls the final weights over this channel: check them against the plan too.
  caf::anon_send(st.scheduler, plan_atom::value, st.plan.hash, channel.keys);
  const bool server = st.options->role == node_kind::server;
  if (!server)
    connect_servers(self, a, channel);
  const auto spec = model_of(job, a.facts);
  // Only a server's shards start from the job's reference model (or a checkpoint's weights:
  // init_from); a worker's replicas are built by its computes and pull the shards' weights.
  const auto initial = server ? starting_weights(st, job, spec) : std::vector<tensor>{};
  const auto data = server ? node_data{} : open_worker_data(job, a.facts);
  auto part = part_options_of(self, a, job);
  st.job = job;
  st.spec = spec;
  st.data = data;
  st.part_options = part;
  spawn_node_part(self->system(), job, st.plan, spec, initial, data, part, st.part);
  for (auto& [actor, name] : st.part.spawned)
    self->monitor(actor);
  serve_part(self, part.node);
  if (server)
    open_server_side(self, a, job, initial, channel);
  return server;
}

// "servers over local sockets", "servers over TCP", or how many of each.
std::string server_channels_text(const member_state& st) {
  const auto all =
    static_cast<std::size_t>(std::count_if(st.server_channels.begin(), st.server_channels.end(),
                                           [](const channel_actor& c) { return bool(c); }));
  if (st.local_server_channels == all)
    return "servers over local sockets";
  if (st.local_server_channels == 0)
    return "servers over TCP";
  return std::to_string(st.local_server_channels) + " of " + std::to_string(all)
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
      + (st.server_channels.empty() ? "" : ", " + server_channels_text(st)) + st.pacing_text + ")");
  if (!st.phase.is<member_phases::starting>())
    return; // ended while its listener started
  st.phase.enter(member_phases::running{});
  st.ready_port = port;
  record_event(st.options->events, "ready",
               {{{"node", node}, {"port", port}, {"threads", st.threads}}, {{"name", st.label}}});
  caf::anon_send(st.to_scheduler, ready_atom::value,
                 ready_message{node, port, static_cast<std::uint32_t>(st.threads)});
}

// An assignment that could not be taken (a server that cannot be reached, ...) ends the node;
// but a scheduler that ended the run meanwhile (a server it lost, which is why the connection
// was refused) said why in a goodbye already in the mailbox, behind this handler: the node ends
// with that reason, as it would once the channel closed, rather than its own echo of it.
void fail_after_the_mailbox(member_actor self, caf::error why) {
  self->send(self, assignment_failed_atom::value, std::move(why));
}

} // namespace

// Says where an adopted compute recomputes from (node_part_options::on_rewound).
std::function<void(int, std::int64_t)>
rewound_logger(const member_options& log, const std::string& label, std::int64_t steps) {
  steps = std::max<std::int64_t>(1, steps);
  return [log, label, steps](int rank, std::int64_t step) {
    log_node_line(log, label + ": compute_" + std::to_string(rank)
                         + " (adopted) recomputes from step " + std::to_string(step) + " (epoch "
                         + std::to_string(step / steps) + ", batch " + std::to_string(step % steps)
                         + " of " + std::to_string(steps) + "), the step in flight");
  };
}

// Spawns this node's part; true when it opened a listener for workers (a server).

void on_assignment_failed(member_actor self, caf::error why) {
  auto& st = self->state;
  if (st.ended())
    return;
  if (st.told && !st.told->finished)
    return fail(self, errc::peer_down,
                "lost the scheduler at " + clock_time_now() + ": " + st.told->reason);
  finish(self, std::move(why));
}

namespace {

// The join's round trip, closed by the assignment's arrival, gives this node's clock offset
// to the scheduler's: the timeline part records it so that the merge puts the part on the
// scheduler's clock; the events say it either way.
void note_clock_offset(member_actor self, const clock_stamps& stamps) {
  auto& st = self->state;
  const auto arrived = timeline_clock_micros(st.options->timeline.get());
  if (!stamps.measured())
    return;
  const auto measured =
    clock_offset_of(stamps.join_sent, stamps.join_received, stamps.sent, arrived);
  if (!measured)
    return;
  if (st.options->timeline)
    st.options->timeline->set_clock_offset("scheduler", measured->offset, measured->uncertainty);
  record_event(st.options->events, "clock_offset",
               {{{"offset_us", static_cast<double>(measured->offset)},
                 {"uncertainty_us", static_cast<double>(measured->uncertainty)}},
                {}});
}

} // namespace

// The scheduler's assignment: spawn this node's part, then say ready (a server once its
// listener for workers has its port).
void on_assignment(member_actor self, const assignment_message& a) {
  auto& st = self->state;
  if (!st.phase.is<member_phases::joining>())
    return fail(self, errc::bad_request, "the scheduler sent an assignment twice");
  note_clock_offset(self, a.clock);
  st.fences->set_own(a.term); // every frame from here on carries it, on every channel
  st.phase.enter(member_phases::starting{});
  const auto node = a.node;
  try {
    if (!take_assignment(self, a)) {
      if (a.adopt) {
        std::string computes;
        for (const auto& [rank, compute] : st.part.computes)
          computes += (computes.empty() ? "compute_" : ", compute_") + std::to_string(rank);
        log_node_line(*st.options,
                      st.label + (a.ranks.empty() ? ": adopted " : ": took ")
                        + (a.ranks.empty() ? st.plan.nodes[node].name + " (" + computes + ", "
                                           : computes + " of " + st.plan.nodes[node].name + " (")
                        + "with their loaders) as a spare at " + clock_time_now()
                        + "; they recompute from the step in flight");
        record_event(st.options->events, "adopted",
                     {{{"lost_node", node}}, {{"lost", st.plan.nodes[node].name}}});
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

} // namespace troupe
