// A training session: one actor that runs a whole job when asked, without blocking anyone.
//
//   train loader --batch--> compute --gradients--> [tap] --> [aggregators] --> param shard(s)
//                             ^------------------------ weights ------------------------'
//   validation loader --batch--> compute        coordinator drives epochs, metrics reports
//
// Protocol: training_session_actor (= run_actor, troupe/actors/coordinator_actor.hpp)
//   (run_atom) -> training_result   opens the data, builds the models, spawns and wires every
//                                   actor of the job, runs all epochs, collects the shards'
//                                   final weights, shuts its actors down and answers. The first
//                                   failure anywhere (an error reply, an actor that terminates,
//                                   a request that times out) ends the run and is the answer,
//                                   as a caf::error of a troupe errc
//                                   (troupe/actors/actor_errors.hpp). A session can run again; each
//                                   run spawns afresh. With output.checkpoint.load_epoch set, the
//                                   checkpoint is read and checked against the job
//                                   (check_resumable) before anything is spawned: a missing,
//                                   damaged or unfitting file is the answer (errc::bad_data naming
//                                   it).
//
// A host embeds it from its own actors: `self->request(session, timeout, run_atom::value)
// .then(...)`. Nothing here blocks a scheduler thread: the session actor runs detached (set-up
// opens files), compute actors run detached by default (a training step is one long handler),
// and loaders, aggregators and shards do short work per message. Nothing changes process-wide
// OpenMP or oneTBB settings; call set_compute_threads (troupe/kernels/threading.hpp) to cap them.
//
// `run_training` is the blocking wrapper the CLI uses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <caf/actor_system.hpp>

#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/coordinator_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/actors/weights_init.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/placement.hpp>
#include <troupe/io/checkpoint_file.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/io/node_events.hpp>
#include <troupe/io/timeline.hpp>

namespace troupe {

using training_session_actor = run_actor;

/// A run's checkpoints (docs/checkpoints.md): files PREFIX-EEEE.safetensors, EEEE the epochs
/// completed. Process-local, like the output: where files go is not part of the job.
struct checkpoint_options {
  std::string prefix;           ///< empty: no checkpoints are written or read
  std::int64_t save_period = 1; ///< save after every Nth epoch, and after the last
  /// Resume from PREFIX-<load_epoch>: its state replaces the job's starting point and the run
  /// trains epochs load_epoch .. epochs - 1. -1: start afresh.
  std::int64_t load_epoch = -1;
  /// That checkpoint, when the caller read it already (a cluster's scheduler reads it before
  /// any node joins); null: the session reads it.
  std::shared_ptr<const training_checkpoint> loaded;
  /// The checkpoint the job's init_from names, when the caller read it already (a cluster's
  /// scheduler reads it before any node joins); null: the session reads it.
  std::shared_ptr<const init_source> init_loaded;
};

/// Where a session's own output goes. Process-local: never part of the job.
struct session_output {
  std::ostream* log = nullptr; ///< MXNet-style lines; null: silent. Must outlive the run.
  std::int64_t display_batches = 100;
  bool progress_bar = false;
  std::string metrics_path; ///< JSON lines, one per epoch; empty: none
  /// The metrics file, opened by the host before the run (so a file that cannot be written
  /// stops nothing half-way); used instead of opening `metrics_path`.
  std::shared_ptr<jsonl_writer> metrics_file;
  std::int64_t metrics_written_through = -1; ///< metrics_options::written_through
  std::shared_ptr<run_position> position;    ///< kept up to date when set (metrics_actor.hpp)
  int terminal_columns = 80;                 ///< width the progress bar fits
  checkpoint_options checkpoint;
  /// Records of the run's moments (epochs, batches, checkpoints: metrics_options::events,
  /// manifest_checkpoint_wiring::events). Null: none.
  std::shared_ptr<node_events> events;
  /// The run's own warnings (run_watch.hpp): epochs of rising loss that warn, and whether a
  /// warning stops the run (its result then carries the warning as its error).
  int stall_epochs = 2;
  bool fail_on_stall = false;
  std::int64_t step_records = 0;      ///< metrics_options::step_records
  std::shared_ptr<run_status> status; ///< metrics_options::status; the session sets its plan
  /// Where the host serves `status` (its own concern: `--status-listen`); empty: nowhere.
  std::string status_listen;
  /// Where the computes and the checkpoint record their steps, pushes and saves
  /// (troupe/io/timeline.hpp); the host writes it at the end. Null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
};

/// Where a gradient tap sits: between the compute of rank `rank` and what it pushes the keys
/// of shard `shard` to.
struct tap_point {
  int rank = 0;
  std::size_t shard = 0;
};

/// Called once per (worker, shard) route when a run wires its actors: returns the actor the
/// compute actor pushes to instead of `downstream` (the host's tap forwards to `downstream`,
/// or returns it unchanged to stay out of that route).
using gradient_tap =
  std::function<push_target_actor(push_target_actor downstream, const tap_point& where)>;

/// What one run spawned and wired, by the plan's actor names, taken from the handles the
/// session actually handed to each actor. Reported once per run, before the first epoch, so a
/// test (or a host) can compare it with the placement plan `troupe check` prints.
struct wiring_report {
  struct actor_entry {
    std::string name;
    plan_role role;
  };
  struct route_entry {
    std::string from, to; ///< "tap" for an actor the session did not spawn (a gradient tap)
    route_carries carries;
  };
  std::vector<actor_entry> actors;
  std::vector<route_entry> routes;
  std::uint64_t plan_hash = 0;
};

/// What a host plugs into a session; everything has a default.
struct session_sinks {
  session_output output;
  /// The host's own receiver of every batch and phase report (and the final flush). Invalid:
  /// the session spawns its metrics actor, which writes `output`.
  metrics_sink_actor metrics;
  gradient_tap tap;
  request_timeouts timeouts;
  compute_spawn_options compute;
  /// Where the compute actors of this process run (node_part_options::devices). Empty: CPU.
  std::vector<compute_device> devices;
  /// Asked by the coordinator after each epoch's training (coordinator_options::between_epochs:
  /// a cluster's scheduler gathers the epoch's traffic there). Invalid: none.
  epoch_gate_actor between_epochs;
  /// Called on the session's thread after a run's actors are spawned; may be empty.
  std::function<void(const wiring_report&)> on_wired;
  /// The scheduler of a cluster run (troupe/cluster/cluster_node.hpp): the session spawns
  /// node `node` of the plan only (the coordinator, and the metrics actor unless `metrics` is
  /// given) and reaches the compute actors and shards of the other nodes through `remote`.
  /// Default (-1): every node of the plan in this process.
  struct cluster_part {
    int node = -1;
    remote_actors remote;
    /// The job's data, when the host has opened it already (the scheduler plans with it):
    /// the session then does not open it again. Null: the session opens it.
    std::shared_ptr<const dataset> train_data, validation_data;
    /// A scheduler restarted in training (scheduler_options::resume): the run goes on at
    /// this epoch, the one the members' computes are in, and restores no checkpoint (the
    /// members hold the run's state). -1: the run starts as its job says.
    std::int64_t resume_at_epoch = -1;
  } node;
};

/// Checks the job (check_job) and spawns the session; throws std::invalid_argument for a job
/// no run could use. Data and model problems are reported by `run`, as errc::bad_data.
training_session_actor spawn_training_session(caf::actor_system& system, training_job job,
                                              session_sinks sinks = {});

/// Spawns a session, runs it and waits. Throws troupe_error with the first failure's category
/// and text (std::invalid_argument for a job check_job refuses).
/// `devices` as session_sinks::devices.
training_result run_training(caf::actor_system& system, const training_job& job,
                             const session_output& output = {},
                             const std::vector<compute_device>& devices = {},
                             const request_timeouts& timeouts = {});

} // namespace troupe
