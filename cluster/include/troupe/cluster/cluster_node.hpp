// A node of a training cluster: the scheduler, a server or a worker process (`troupe node`).
//
//   worker/server --join--> scheduler            each node connects to the scheduler and joins
//   scheduler --assignment (job, plan node)--> servers; each spawns its shards and aggregators,
//                                                listens for workers --ready(port)--> scheduler
//   scheduler --assignment (+ server endpoints)--> workers; each connects to the servers,
//                                                spawns loaders and computes --ready-->
//   scheduler: coordinator + metrics drive the epochs through proxies (control, reports);
//              pulls the final weights from the servers' shards; --shutdown(finished)--> all
//
// The scheduler plans the job once and sends every node the resolved job with its hash and
// the plan hash (a node given its own config refuses a job that is not the one it holds);
// every node plans again from the same job and data facts and checks the plan hash, so no
// two nodes can disagree about who holds what. A node's rank within its role is the one its
// launcher gave it, else the lowest free one in join order.
//
// Failures: the scheduler monitors every member channel (heartbeats and a connection timeout on
// both ends), so a killed, frozen or cut-off node is noticed within `connection_timeout`;
// the scheduler then logs which node it lost and when, sends every other node a shutdown
// naming it, and fails. A node that loses a server it pushes to, or one of its own actors,
// tells the scheduler why and fails. One that loses its scheduler in training trains on and
// rejoins a scheduler restarted with `resume` within `scheduler_timeout` (docs/operations.md,
// "A lost scheduler"), else fails naming it. Nothing waits without a deadline: the
// join (`join_timeout`, during which a node retries reaching its scheduler), every request,
// every epoch (the session's phase timeout).
//
// Thread-safety: run_scheduler and run_member block the calling thread until the run ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/timeouts.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/admission.hpp>
#include <troupe/cluster/cluster_clocks.hpp>
#include <troupe/cluster/run_changes.hpp>
#include <troupe/cluster/wire_messages.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/io/node_events.hpp>
#include <troupe/io/timeline.hpp>

namespace troupe {

/// Lets a host end a scheduler's run from another thread (Ctrl-C) so that every member hears
/// why: a closed connection alone looks like a lost scheduler, for which members train on and
/// wait (scheduler_timeout).
using interrupt_atom = caf::atom_constant<caf::atom("interrupt")>;
/// What a running scheduler takes from its interrupt: (interrupt_atom, why).
using interruptible_actor = caf::typed_actor<caf::reacts_to<interrupt_atom, std::string>>;

class scheduler_interrupt {
public:
  /// Ends the run as interrupted (`why`, in every member's goodbye) and returns once the
  /// scheduler has ended, its members told and their channels closed, or `bound` passed; at
  /// once when no scheduler runs. Thread-safe.
  void interrupt(const std::string& why, std::chrono::milliseconds bound);
  /// Whether interrupt() was called: the run that ends then is the interrupted one
  /// (run_scheduler throws run_interrupted).
  bool interrupted() const;
  // run_scheduler's: the scheduler to interrupt while it runs.
  void arm(caf::actor_system& system, interruptible_actor scheduler);
  void disarm();

private:
  mutable std::mutex mutex_;
  caf::actor_system* system_ = nullptr;
  interruptible_actor scheduler_;
  bool interrupted_ = false;
};

/// Lets a host ask its worker to leave the run from another thread (SIGTERM: drain): the
/// worker asks its scheduler to move its computes to other workers and, let go, ends as a
/// finished run does; refused (the scheduler says why in the log), it trains on.
using leave_asked_atom = caf::atom_constant<caf::atom("leaveasked")>;
/// What a running worker takes from its host: (leave_asked_atom, what asked it).
using leavable_actor = caf::typed_actor<caf::reacts_to<leave_asked_atom, std::string>>;

class worker_leave {
public:
  /// Asks the worker to leave (`why`: "SIGTERM"); false when no worker runs (before
  /// run_member started it, or after it ended): the host then ends the process its own way.
  /// Thread-safe.
  bool ask(const std::string& why);
  // run_member's: the worker to ask while it runs.
  void arm(leavable_actor worker);
  void disarm();

private:
  std::mutex mutex_;
  leavable_actor worker_;
};

/// What every node of a cluster takes, whatever its role: how to reach its scheduler (or, the
/// scheduler's, where to listen), the secret, the clocks and the log.
struct node_options {
  explicit node_options(cluster_secret cluster) : secret(std::move(cluster)) {}

  /// Where the scheduler listens (the scheduler: where to listen; port 0 = any free port).
  std::string scheduler_host = "127.0.0.1";
  std::uint16_t scheduler_port = 0;
  /// The congestion control of every TCP channel of this node (tcp_congestion.hpp: what
  /// choose_tcp_congestion resolved); empty: the host's default.
  std::string tcp_congestion;
  cluster_secret secret;
  /// How long the scheduler waits for every node to join and be ready, and how long a node
  /// retries reaching its scheduler.
  std::chrono::milliseconds join_timeout{120000};
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds connection_timeout{5000};
  /// Every wait derived from join_timeout and connection_timeout (cluster_clocks.hpp).
  cluster_clocks clocks() const { return cluster_clocks{join_timeout, connection_timeout}; }
  /// The actors' own deadlines (a step, an epoch).
  request_timeouts timeouts;
  /// Compute threads this node was given (--threads, the config's train.threads); 0: none.
  /// The scheduler sends its count to every node in the assignment; a node given a count of
  /// its own must agree with it.
  int threads = 0;
  /// Start-up progress, losses and refusals, one line each (default: standard error).
  std::function<void(const std::string&)> log;
  /// Machine-readable records of this node's moments beside its lines (joined, ready, a lost
  /// node, ...: troupe/io/node_events.hpp, docs/operations.md "Event records"). May be null.
  std::shared_ptr<node_events> events;
  /// Where this node records what it does (troupe/io/timeline.hpp): a member's computes and
  /// checkpoint, the scheduler's faults (a lost node, an adoption, a promotion) on its track
  /// "faults". Null: nowhere. The host writes it when the node ends.
  std::shared_ptr<timeline_recorder> timeline;
};

/// The scheduler's options.
struct scheduler_options : node_options {
  using node_options::node_options;

  /// How its host interrupts it (Ctrl-C). May be null.
  std::shared_ptr<scheduler_interrupt> interrupt;
  /// It takes over a run in training whose scheduler was lost. It plans as the lost one did,
  /// takes rejoins only, and once every plan node is back trains on from the epoch the
  /// workers' computes are in, restoring nothing.
  bool resume = false;
  /// A file to write the bound port to once it listens (decimal and a newline, written to a
  /// temporary file and renamed). Empty: none.
  std::string port_file;
  /// The run's status as the status server's /status document (status_json.hpp), for
  /// `troupe ctl status`. Empty: this scheduler keeps none, and ctl's status is refused.
  std::function<std::string()> status_document;
  /// --replay-changes: the changes a recorded run made (run_changes.hpp), made again at the same
  /// steps, as troupe ctl would make them. Empty: none.
  std::vector<run_change> replay_changes;
  /// cluster.balance = auto: at each gate between epochs it measures every worker process's
  /// time per compute rank and moves ranks so a faster process runs more of them.
  bool balance = false;
};

/// A server's or a worker's options (role); the ones marked "a worker's" are read by workers
/// only.
struct member_options : node_options {
  using node_options::node_options;

  /// node_kind::server or node_kind::worker.
  node_kind role = node_kind::worker;
  /// The rank within its role this node asks for (a launcher's: MPI, Slurm, troupe launch);
  /// -1: any free one (join order). The scheduler refuses a rank that is taken.
  int rank = -1;
  /// Servers: where to listen for workers (port 0 = any free port).
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;
  /// The address peers reach this node at when it differs from listen_host (a multi-homed
  /// host, or listening on 0.0.0.0). Empty: listen_host.
  std::string advertise_host;
  /// Workers reach a server on their own host through a Unix socket rather than TCP
  /// (cluster/transport/unix_connection.hpp); servers offer one. The scheduler's channels stay TCP:
  /// it judges hosts by the addresses connections come from.
  bool local_sockets = true;
  /// The rate of each host's network, per direction, in Mbit/s (0: not stated). Stated, a
  /// server's or worker's TCP channels to its peers pace themselves at an equal share of it (a
  /// worker's at rate / servers, a server's at rate / workers), and with priority on and two or
  /// more worker nodes a worker writes each step's pushes in a fixed order (frame_priority.hpp,
  /// fixed_push_order) whose backward part is what its share carries in `backward` time.
  std::int64_t link_mbit = 0;
  /// How long a step's backward takes; negative: the compute stand-in's backward (two thirds
  /// of its step), or 0 without one (a fixed order then starts with the first layers).
  std::chrono::milliseconds backward{-1};
  /// Compute threads when neither this node nor the scheduler was given a count (its share of
  /// its host: docs/threads.md).
  int default_threads = 1;
  /// A worker's: its place among the worker processes started on its host (troupe launch says;
  /// -1: unknown). With threads from the host share (no count given anywhere), its computes
  /// are bound to the CPUs of that place, so the workers of one host never queue on one core.
  int host_slot = -1;
  /// A worker's: it joins as a spare, unassigned until it takes over a lost worker's node
  /// (join_message::spare).
  bool spare = false;
  /// Once its scheduler is lost in training, the node keeps its part running this long,
  /// retrying to reach a scheduler restarted with --resume at the same address, and rejoins it
  /// (join_message::rejoin); 0: it stops at once, naming the scheduler.
  std::chrono::milliseconds scheduler_timeout{30000};
  /// Called with the compute threads this node settles on, once assigned and before any of
  /// its actors runs a kernel (the app caps its kernels there). May be empty.
  std::function<void(int)> use_threads;
  /// A worker's: where its compute actors run (node_part_options::devices). Empty: the CPU.
  std::vector<compute_device> devices;
  /// A worker's: its computes take this time per batch instead of computing (benchmarks of the
  /// communication; compute_stand_in in troupe/actors/compute_actor.hpp). Inactive: they compute.
  compute_stand_in stand_in;
  /// A node given a config: the job it resolves to, which the scheduler's must equal in
  /// everything but the process counts (those are the scheduler's, or a launcher's, to say).
  /// Empty: take the scheduler's job as it is.
  std::optional<training_job> own_job;
  /// A worker's: kept up to date with the epoch and batch its computes are at (its channel to
  /// the scheduler, channel.hpp). May be null.
  std::shared_ptr<run_position> position;
  /// A worker's: how its host asks it to leave the run (drain). May be null.
  std::shared_ptr<worker_leave> leave;
};

/// What run_scheduler throws once options.interrupt ended the run: the caller, which
/// interrupted it, says so and ends the process its own way.
class run_interrupted : public std::runtime_error {
public:
  run_interrupted() : std::runtime_error("the run was interrupted") {}
};

/// Runs the scheduler of `job` (whose nodes name the server and worker processes): waits for
/// them to join, assigns their parts, trains, writes `output` as `troupe train` does and
/// returns the result with the final weights pulled from the servers. Throws troupe_error
/// naming the node and the reason when the run fails, run_interrupted after an interrupt,
/// std::invalid_argument for a job that is not a cluster job.
training_result run_scheduler(caf::actor_system& system, const training_job& job,
                              const scheduler_options& options, const session_output& output);

/// Runs a server or worker (options.role) until its scheduler ends the run. Throws
/// troupe_error naming what failed.
void run_member(caf::actor_system& system, const member_options& options);

} // namespace troupe
