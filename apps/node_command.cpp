// `troupe node`: one process of a training cluster (troupe/cluster/cluster_node.hpp). Its
// place (role, scheduler, node counts) comes from flags or a launcher's environment
// (node_identity.hpp); the job from --config and the training flags, as for `troupe train`.
// The scheduler trains and prints what `troupe train` prints; servers and workers run until
// the scheduler ends the run. The secret comes from --secret-file (`-`: standard input) or
// TROUPE_SECRET, never from argv; without one the node refuses to start.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <caf/actor_system.hpp>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/interrupt_watch.hpp"
#include "apps/leave_watch.hpp"
#include "apps/node_identity.hpp"
#include "apps/run_output.hpp"
#include "apps/secret_flag.hpp"
#include "apps/status_serving.hpp"
#include "apps/train_flags.hpp"
#include "apps/weights_digest.hpp"
#include <troupe/actors/weights_init.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/launcher_rank.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/cluster/node_control.hpp>
#include <troupe/cluster/node_fences.hpp>
#include <troupe/cluster/tcp_congestion.hpp>
#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/graph/value_hash.hpp>
#include <troupe/io/checkpoint_parts.hpp>
#include <troupe/kernels/threading.hpp>

namespace troupe {

namespace {

struct node_command_line {
  node_flags place;
  std::string listen = "127.0.0.1", advertise, secret_file, port_file, local_sockets = "on";
  std::string events, replay_changes;
  std::string tcp_congestion = "auto";
  std::int64_t port = 0, rank = -1, host_share = -1, host_slot = -1;
  double join_timeout = 120, heartbeat = 1, peer_timeout = 5, request_timeout = 600;
  double compute_stand_in_ms = 0;
  bool compute_stand_in_shared = false;
  std::int64_t link_mbit = 0;
  double backward_ms = -1;
  double scheduler_timeout = 30;
  bool spare = false;
  bool resume = false;
};

void declare_node_flags(flag_set& f, node_command_line& n) {
  f.add("role", n.place.role,
        "scheduler, server or worker (default: from DMLC_ROLE, an MPI or a Slurm rank)");
  f.add("scheduler", n.place.scheduler,
        "HOST:PORT where the scheduler listens (the scheduler: port 0 = any free port)");
  f.add("rank", n.rank,
        "this node's rank among the servers or the workers (-1: any free one; an MPI or Slurm rank "
        "gives it)");
  f.add_switch(
    "spare", n.spare,
    "a worker that waits, unassigned, to take over the place of a worker lost in training "
    "(on_worker_loss = adopt; a worker that joins a run already training is one anyway)");
  f.add_switch("resume", n.resume,
               "the scheduler: take over a run in training whose scheduler was lost, at the same "
               "--scheduler address: its servers and workers rejoin, and training goes on where "
               "their computes are "
               "(troupe launch restarts a killed scheduler so)");
  f.add("replay-changes", n.replay_changes,
        "the scheduler: make the changes a recorded run's metrics JSONL lists (troupe ctl set, "
        "checkpoint, stop) at the same steps, so a deterministic run with changes ends with the "
        "recorded run's weights (servers and workers ignore it: the scheduler makes the changes)");
  f.set_placeholder("replay-changes", "FILE");
  f.add("scheduler-timeout", n.scheduler_timeout,
        "seconds a server or worker that lost its scheduler in training "
        "trains on, retrying to reach one restarted with --resume (0: it stops at once)");
  f.add("listen", n.listen, key_help("listen"));
  f.add("port", n.port, "port a server listens on for workers (0: any free port)");
  f.add("advertise", n.advertise,
        "address peers reach this node at, when not --listen (multi-homed hosts, 0.0.0.0)");
  f.add("local-sockets", n.local_sockets,
        "on: a worker reaches a server on its own host through a Unix socket, not TCP "
        "(same frames and admission; a third of the CPU per byte); off: TCP always");
  f.add("tcp-congestion", n.tcp_congestion,
        key_help("tcp-congestion", "docs/operations.md says why"));
  f.add("link-mbit", n.link_mbit, key_help("link-mbit", "0: not stated"));
  f.add("backward-ms", n.backward_ms, key_help("backward-ms"));
  f.add("secret-file", n.secret_file,
        "file holding the cluster secret (mode 600; '-': read one line from standard input); else "
        "TROUPE_SECRET");
  f.add("port-file", n.port_file,
        "the scheduler writes its port here once it listens (for launchers)");
  f.add("events", n.events,
        "append this node's records to FILE, one JSON object a line (joined, ready, epochs, a "
        "lost node, ended: docs/operations.md \"Event records\"); scripts read these, not the "
        "log lines");
  f.set_placeholder("events", "FILE");
  f.add("join-timeout", n.join_timeout, key_help("join-timeout"));
  f.add("heartbeat", n.heartbeat, key_help("heartbeat"));
  f.add("peer-timeout", n.peer_timeout, key_help("peer-timeout"));
  f.add("request-timeout", n.request_timeout, key_help("request-timeout"));
  f.add("compute-stand-in-ms", n.compute_stand_in_ms,
        "a worker's computes take this many milliseconds per batch "
        "instead of computing, pushing gradients of the model's shapes (benchmarks of the "
        "communication: "
        "troupe bench scaling); 0: compute");
  f.add_switch("compute-stand-in-shared", n.compute_stand_in_shared,
               "with --compute-stand-in-ms: this worker's computes share one device, which "
               "serves their steps' work in turn (a process of several ranks on one GPU); "
               "without it each has a device of its own");
  f.add("host-share", n.host_share,
        "without a thread count (--threads, train.threads, OMP_NUM_THREADS): this node's "
        "compute threads are the hardware threads / N, at least 1; 0: one (troupe launch sets it; "
        "-1: all)");
  f.add("host-slot", n.host_slot,
        "a worker's place K among the --host-share workers of its host: its computes are "
        "bound to the K-th share of the CPUs when their threads come from the share (troupe launch "
        "sets it; -1: unbound)");
}

// The compute threads a node uses when it is given no count: its share of the host's
// hardware threads (troupe launch says how many share them), unless OMP_NUM_THREADS says.
// Whether a node given no thread count takes its share of the host (else OMP_NUM_THREADS or
// the whole host).
bool threads_from_share(std::int64_t host_share) {
  const char* omp = std::getenv("OMP_NUM_THREADS");
  return host_share >= 0 && (omp == nullptr || *omp == '\0');
}

int default_node_threads(std::int64_t host_share) {
  if (!threads_from_share(host_share))
    return default_thread_count();
  if (host_share == 0)
    return 1;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency() / host_share));
}

// Where a server or worker is, for its interrupt line: what its computes were doing, as the
// scheduler's requests and their batch reports say.
std::string member_position(const std::shared_ptr<run_position>& at, node_kind role) {
  if (at->epoch == 0 && at->batch < 0 && !at->validating)
    return role == node_kind::worker ? "before training" : "while serving";
  return "in " + at->text();
}

// Seconds in the range the config's key of the same name has (graph/config/key_ranges.hpp).
std::chrono::milliseconds seconds_flag(const char* flag, double seconds) {
  const auto& range = *range_of_flag(flag);
  if (!range.contains(seconds))
    throw usage_error(std::string("--") + flag + " must be " + range_text(range) + " seconds, got "
                      + shortest_number(seconds));
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// Records how the node ends, and says on standard error when records could not be written
// (a run is never ended over its records). Returns `code`.
int record_end(const node_options& options, const std::string& path, const std::string& outcome,
               int code, const std::string& reason = "", const std::string& weights = "") {
  if (!options.events)
    return code;
  event_fields fields{{{"code", code}}, {{"outcome", outcome}, {"reason", reason}}};
  if (!weights.empty()) // the scheduler's: the final weights line, digest and all
    fields.strings.push_back({"weights", weights});
  options.events->record("ended", fields);
  if (const auto failed = options.events->failure(); !failed.empty())
    std::cerr << ("troupe node: warning: --events " + path + ": records were lost: " + failed
                  + "\n")
              << std::flush;
  return code;
}

// The first record of a node: where its scheduler is, and whether it joins as a spare or takes
// over as a restarted scheduler.
void record_start(const node_options& options, bool spare, bool resume) {
  record_event(options.events, "started",
               {{{"scheduler_port", options.scheduler_port}},
                {{"scheduler_host", options.scheduler_host},
                 {"spare", spare ? "yes" : "no"},
                 {"resume", resume ? "yes" : "no"}}});
}

// The actor system of a node's process. It ends normally: every actor of a node ends with its
// run, also after a lost peer (a channel fails what waits on it, and the fault scenarios of
// tests/apps/cluster_run.py check that every surviving process exits).
struct node_system {
  local_node_options local;
  local_node_config config{local};
  caf::actor_system system{config};
};

// Runs the scheduler; its exit status. It stops on Ctrl-C as `troupe train` does, saying
// where, with exit status 130; its members hear why it ended, not a lost scheduler. The watch
// is set before the actor system starts its threads.
int run_scheduler_process(train_command_line& cli, const scheduler_options& options,
                          const std::string& events_path, status_serving& status) {
  record_start(options, false, options.resume);
  interrupt_watch interrupts(
    cli.output.position, "troupe node",
    [stop = options.interrupt, at = cli.output.position, grace = options.clocks().goodbye_grace(),
     events = options.events] {
      record_event(events, "interrupted", {{}, {{"where", "in " + at->text()}}});
      stop->interrupt("interrupted (Ctrl-C) in " + at->text(), grace + std::chrono::seconds(1));
    });
  node_system node;
  try {
    cli.output.log = &std::cout;
    cli.output.events = options.events;
    cli.output.timeline = options.timeline;
    const auto result = run_scheduler(node.system, cli.job, options, cli.output);
    const auto weights = weights_digest_line(result);
    std::cout << weights << std::endl;
    int code = finished_run_status(result, std::cerr);
    status.end(code == 0 ? "finished" : "failed");
    if (const int written = write_timeline(options.timeline, cli.timeline_path, std::cerr);
        code == 0)
      code = written;
    return record_end(options, events_path, code == 0 ? "finished" : "failed", code, "", weights);
  } catch (const run_interrupted&) {
    status.end("stopped");
    record_end(options, events_path, "interrupted", 130);
    interrupts.end_process(); // the watcher that interrupted the run says so and exits 130
  } catch (const std::exception& e) {
    std::cerr << ("troupe node: error: " + std::string(e.what()) + "\n") << std::flush;
    status.end("failed", e.what());
    write_timeline(options.timeline, cli.timeline_path, std::cerr); // what it did until then
    return record_end(options, events_path, "failed", 1, e.what());
  }
}

// Runs a server or worker; its exit status. On Ctrl-C it says where its computes were (troupe
// launch passes the signal on to every node): the watcher asks where the node is once, as the
// signal comes, then ends the process.
int run_member_process(const member_options& options, const node_identity& place,
                       const std::string& events_path, const std::string& timeline_path) {
  record_start(options, options.spare, false);
  // A worker drains on SIGTERM; a server keeps the signal's default (its shards have no other
  // home but a backup, which its loss promotes). First, so that every thread started from here
  // on (the interrupt watcher's too) has SIGTERM blocked and the watcher alone takes it.
  std::optional<leave_watch> leaving;
  if (options.leave)
    leaving.emplace(options.leave, "troupe node (worker)");
  interrupt_watch interrupts(
    [&options, at = options.position, role = place.role, events_path] {
      const auto where = member_position(at, role);
      record_event(options.events, "interrupted", {{}, {{"where", where}}});
      record_end(options, events_path, "interrupted", 130);
      return where;
    },
    "troupe node (" + std::string(to_string(place.role)) + ")");
  node_system node;
  try {
    // One write per line: processes under one launcher may share the stream (mpirun).
    std::cerr << (std::string(to_string(place.role)) + ": joining the scheduler at "
                  + place.scheduler_host + ":" + std::to_string(place.scheduler_port) + " ("
                  + place.source + ")\n")
              << std::flush;
    run_member(node.system, options);
    const int written = write_timeline(options.timeline, timeline_path, std::cerr);
    return record_end(options, events_path, written == 0 ? "finished" : "failed", written);
  } catch (const fenced_error& e) {
    // Declared lost while it could not answer: its part runs elsewhere, and the run goes on.
    std::cerr << ("troupe node: fenced: " + std::string(e.what()) + "\n") << std::flush;
    write_timeline(options.timeline, timeline_path, std::cerr);
    return record_end(options, events_path, "fenced", fenced_exit_status, e.what());
  } catch (const std::exception& e) {
    std::cerr << ("troupe node: error: " + std::string(e.what()) + "\n") << std::flush;
    write_timeline(options.timeline, timeline_path, std::cerr); // what it did until then
    // A run that SIGTERM asked to leave and that could not (its scheduler gone meanwhile, or
    // not yet training) ends as the signal would have ended it.
    const int status = leaving && leaving->asked() ? 128 + SIGTERM : 1;
    return record_end(options, events_path, "failed", status, e.what());
  }
}

// This node's place from its flags, the config's cluster section and the launcher's
// environment; `n` takes the config's network settings where no flag said otherwise.
node_identity resolve_place(node_command_line& n, const cluster_settings& cli,
                            const environment& env) {
  auto from_config = [&](const char* flag, auto& value, const auto& configured) {
    if (!cli.given.count(flag))
      value = configured;
  };
  from_config("scheduler", n.place.scheduler, cli.network.scheduler);
  from_config("listen", n.listen, cli.network.listen);
  from_config("join-timeout", n.join_timeout, cli.network.join_timeout);
  from_config("heartbeat", n.heartbeat, cli.network.heartbeat);
  from_config("peer-timeout", n.peer_timeout, cli.network.peer_timeout);
  from_config("request-timeout", n.request_timeout, cli.network.request_timeout);
  from_config("tcp-congestion", n.tcp_congestion, cli.network.tcp_congestion);
  from_config("link-mbit", n.link_mbit, cli.network.link_mbit);
  from_config("backward-ms", n.backward_ms, cli.network.backward_ms);
  n.place.config_server_nodes = cli.server_nodes;
  n.place.config_worker_nodes = cli.worker_nodes;
  if (cli.given.count("server-nodes"))
    n.place.server_nodes = cli.server_nodes;
  if (cli.given.count("worker-nodes"))
    n.place.worker_nodes = cli.worker_nodes;
  return resolve_node_identity(n.place, env);
}

// What every node takes from its flags: the scheduler's address, the secret, the clocks,
// the congestion control and a thread count given here.
template <class Options>
Options common_options(const node_command_line& n, const train_command_line& cli,
                       const node_identity& place, const environment& env,
                       std::shared_ptr<node_events> events) {
  Options options{read_secret(n.secret_file, env)};
  options.events = events;
  // Named by role until a member learns its plan node's name (member_options::timeline).
  options.timeline = open_timeline(cli.timeline_path, to_string(place.role));
  options.scheduler_host = place.scheduler_host;
  options.scheduler_port = place.scheduler_port;
  try {
    const auto congestion = choose_tcp_congestion(n.tcp_congestion);
    options.tcp_congestion = congestion.algorithm;
    if (!congestion.note.empty())
      std::cerr << ("troupe node: " + congestion.note + "\n") << std::flush;
  } catch (const std::invalid_argument& e) {
    throw usage_error("--tcp-congestion (cluster.tcp_congestion): " + std::string(e.what()));
  }
  options.join_timeout = seconds_flag("join-timeout", n.join_timeout);
  options.heartbeat_interval = seconds_flag("heartbeat", n.heartbeat);
  options.connection_timeout = seconds_flag("peer-timeout", n.peer_timeout);
  options.timeouts.step = seconds_flag("request-timeout", n.request_timeout); // the one step limit
  if (!peer_timeout_fits(options.heartbeat_interval, options.connection_timeout))
    throw usage_error(std::string("--peer-timeout ") + peer_timeout_rule + " (--heartbeat)");
  // Threads: a count given here (flag or config) goes to every node with the assignment; a
  // node given none takes the scheduler's, else its share of its host (docs/threads.md).
  options.threads = cli.threads_given ? cli.threads : 0;
  return options;
}

// The flags only one role reads, refused on the others.
void check_role_flags(const node_command_line& n, node_kind role) {
  if (n.spare && role != node_kind::worker)
    throw usage_error("--spare is for a worker (--role worker), not a "
                      + std::string(to_string(role)));
  if (n.spare && n.rank >= 0)
    throw usage_error("--spare takes no --rank: a spare takes the rank of the worker it replaces");
  if (n.resume && role != node_kind::scheduler)
    throw usage_error(
      "--resume is for the scheduler (--role scheduler): a server or worker rejoins a restarted "
      "scheduler by itself (--scheduler-timeout)");
}

// The host-share and host-slot flags, which every role checks (troupe launch gives every node
// the same flags).
void check_host_flags(const node_command_line& n) {
  check_range("host-share", n.host_share, -1, 4096);
  check_range("host-slot", n.host_slot, -1, 4095);
  if (n.host_slot >= 0 && n.host_share > 0 && n.host_slot >= n.host_share)
    throw usage_error("--host-slot " + std::to_string(n.host_slot)
                      + " is not one of the --host-share " + std::to_string(n.host_share)
                      + " places (0 to " + std::to_string(n.host_share - 1) + ")");
}

// A worker's place among its host's workers, -1 unless its threads come from the share.
int host_slot_of(const node_command_line& n) {
  return n.host_share > 0 && threads_from_share(n.host_share) ? static_cast<int>(n.host_slot) : -1;
}

// Checkpoints are the scheduler's: it names every part's file in its requests, so a server
// or worker ignores --model-prefix / --load-epoch (troupe launch gives every node the same
// flags).
void open_checkpoints(checkpoint_options& c, const training_job& job) {
  // A resumed run restores the primaries only: backups that started from the job's initial
  // weights would, once promoted, train on wrong weights without a word. Refused (before the
  // prefix's folder is made) until the parts restore the backups too.
  if (c.load_epoch >= 0 && job.nodes.shard_backups > 0)
    throw usage_error(
      "--load-epoch with --shard-backups 1 (cluster.shard_backups; the old --replicas 2): a "
      "resumed run restores the primary shards only, and a promoted backup would hold the job's "
      "initial weights; resume with --shard-backups 0 (docs/operations.md, \"A lost server\")");
  // The servers read the checkpoint to fine-tune from as they take their places; read here
  // first, a missing or damaged one ends the run before any node joins (the session takes it
  // from here).
  if (!job.init_from.empty())
    c.init_loaded = std::make_shared<const init_source>(read_init_source(job.init_from));
  check_prefix_folder(c.prefix);
  // A checkpoint to resume from is read here, before any node is let in: a damaged one ends
  // the run before the others start. The session takes it from here (its fit to the model is
  // checked when training starts).
  if (c.load_epoch >= 0 && !c.prefix.empty())
    c.loaded =
      std::make_shared<const training_checkpoint>(read_any_checkpoint(c.prefix, c.load_epoch));
}

// The scheduler's options; opens what `troupe train` opens before its first step (the
// checkpoint to resume from, the metrics file) and prints the run's arguments.
scheduler_options scheduler_options_of(const node_command_line& n, train_command_line& cli,
                                       const node_identity& place, const environment& env,
                                       std::shared_ptr<node_events> events,
                                       const std::vector<std::string>& args) {
  auto options = common_options<scheduler_options>(n, cli, place, env, std::move(events));
  options.interrupt = std::make_shared<scheduler_interrupt>();
  options.resume = n.resume;
  options.port_file = n.port_file;
  options.balance = cli.network.balance == "auto";
  if (cli.job.nodes.servers < 1 || cli.job.nodes.workers < 1)
    throw usage_error(
      "the scheduler needs the number of server and worker processes: --server-nodes and "
      "--worker-nodes, the config's cluster.server_nodes / worker_nodes, or a launcher's counts");
  cli.threads = cli.threads_given ? cli.threads : default_node_threads(n.host_share);
  set_compute_threads(cli.threads);
  open_checkpoints(cli.output.checkpoint, cli.job);
  // Read before the metrics file is opened: a replay of the file this run writes reads the
  // recorded run's lines, not the new run's.
  if (!n.replay_changes.empty()) {
    auto recorded = read_recorded_changes(n.replay_changes, cli.job);
    if (!recorded)
      throw usage_error(error_text(recorded.error()));
    options.replay_changes = std::move(*recorded);
  }
  // A restarted scheduler appends to its lost one's metrics file, marking where it took over.
  if (!cli.output.metrics_path.empty()) {
    if (options.resume)
      cli.output.metrics_written_through = last_epoch_written(cli.output.metrics_path);
    cli.output.metrics_file = open_metrics_file(
      cli.output.metrics_path, run_record(args, cli.job, cli.threads), options.resume);
  }
  cli.output.position = std::make_shared<run_position>();
  cli.output.terminal_columns = terminal_columns();
  std::cout << argument_lines(args, cli.job, cli.threads) << note_lines(cli.notes) << std::flush;
  return options;
}

// A server's or worker's options.
member_options member_options_of(const node_command_line& n, const train_command_line& cli,
                                 const node_identity& place, const environment& env,
                                 std::shared_ptr<node_events> events) {
  auto options = common_options<member_options>(n, cli, place, env, std::move(events));
  options.role = place.role;
  options.rank = static_cast<int>(n.rank);
  options.spare = n.spare;
  if (!n.spare && options.rank < 0 && place.rank > 0 && cli.job.nodes.servers > 0
      && cli.job.nodes.workers > 0)
    options.rank =
      place_of_launcher_rank(place.rank, cli.job.nodes.servers, cli.job.nodes.workers).rank;
  if (!(n.scheduler_timeout >= 0 && n.scheduler_timeout <= 86400))
    throw usage_error("--scheduler-timeout must be 0 to 86400 seconds, got "
                      + shortest_number(n.scheduler_timeout));
  options.scheduler_timeout =
    std::chrono::milliseconds(static_cast<std::int64_t>(n.scheduler_timeout * 1000));
  options.listen_host = n.listen;
  options.listen_port = static_cast<std::uint16_t>(n.port);
  options.advertise_host = n.advertise;
  options.local_sockets = on_off("local-sockets", n.local_sockets);
  const auto& rates = range_of_key("cluster.link_mbit");
  check_range("link-mbit", n.link_mbit, static_cast<std::int64_t>(rates.min),
              static_cast<std::int64_t>(rates.max));
  options.link_mbit = n.link_mbit;
  if (!backward_ms_allowed(n.backward_ms))
    throw usage_error("--backward-ms must be -1 or 0 to "
                      + shortest_number(range_of_key("cluster.backward_ms").max)
                      + " milliseconds, got " + shortest_number(n.backward_ms));
  options.backward = std::chrono::milliseconds(static_cast<std::int64_t>(n.backward_ms));
  if (n.compute_stand_in_ms < 0 || n.compute_stand_in_ms > 3600e3)
    throw usage_error("--compute-stand-in-ms must be 0 to 3600000 milliseconds, got "
                      + std::to_string(n.compute_stand_in_ms));
  options.stand_in.step = std::chrono::duration_cast<caf::timespan>(
    std::chrono::duration<double, std::milli>(n.compute_stand_in_ms));
  options.stand_in.seed = cli.job.train_batches.seed;
  if (n.compute_stand_in_shared) {
    if (n.compute_stand_in_ms <= 0)
      throw usage_error("--compute-stand-in-shared shares the device of compute stand-ins: give "
                        "--compute-stand-in-ms too");
    options.stand_in.device = std::make_shared<stand_in_device>();
  }
  if (cli.given.count("config"))
    options.own_job = cli.job;
  options.devices = cli.devices;
  if (options.role == node_kind::worker)
    require_compute_devices(cli.devices, cli.convolutions); // the computes live on workers
  options.default_threads = default_node_threads(n.host_share);
  options.host_slot = host_slot_of(n);
  options.use_threads = [](int threads) { set_compute_threads(threads); };
  options.position = std::make_shared<run_position>();
  if (options.role == node_kind::worker)
    options.leave = std::make_shared<worker_leave>();
  return options;
}

} // namespace

int node_command(const std::vector<std::string>& args) {
  node_command_line n;
  const auto env = current_environment();
  node_identity place;
  // The worker processes, which default the compute count (one compute each), may come from
  // the launcher's environment: the place is resolved as soon as the cluster's settings are read.
  auto cli = parse_train_flags(
    args, "node",
    "Runs one process of a training cluster: the scheduler, a server or a worker "
    "(docs/operations.md).",
    [&](flag_set& f) { declare_node_flags(f, n); },
    [&](const cluster_settings& settings) {
      place = resolve_place(n, settings, env);
      return place.worker_nodes;
    });
  if (cli.help) {
    std::cout << cli.help_text;
    return 0;
  }
  if (place.server_nodes > 0)
    cli.job.nodes.servers = place.server_nodes;
  if (place.worker_nodes > 0)
    cli.job.nodes.workers = place.worker_nodes;
  check_range("port", n.port, 0, 65535);
  // Opened first: a path that cannot be written ends the node before anything starts.
  std::shared_ptr<node_events> events;
  if (!n.events.empty()) {
    try {
      events =
        node_events::append_to(n.events, to_string(place.role),
                               place.role == node_kind::scheduler ? 0 : static_cast<int>(n.rank));
    } catch (const std::exception& e) {
      throw usage_error("--events: " + std::string(e.what()));
    }
  }
  check_range("rank", n.rank, -1, 1023);
  check_role_flags(n, place.role);
  check_host_flags(n);
  if (place.role == node_kind::scheduler) {
    // The server's records are the scheduler's own: the status sees every node's life.
    status_serving status(cli, std::cout, true);
    status.watch(events, static_cast<int>(::getpid()));
    auto options = scheduler_options_of(n, cli, place, env, events, args);
    options.status_document = status.document();
    return run_scheduler_process(cli, options, n.events, status);
  }
  return run_member_process(member_options_of(n, cli, place, env, events), place, n.events,
                            cli.timeline_path);
}

} // namespace troupe
