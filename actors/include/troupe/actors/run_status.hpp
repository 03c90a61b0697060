// A run's status as the status server shows it (`--status-listen`): where the run is, what each
// rank and node does, the curves so far, the warnings and faults. The metrics actor keeps it
// up to date from the reports it gets (batch, phase, annotations, warnings); a cluster's
// scheduler adds its nodes' lives from its event records (node_events: admitted, ready, lost,
// adopted, promoted...); the host says when the run ends. Readers take a snapshot: a plain
// value, consistent as of one moment, that they render without holding anything.
//
// Thread-safety: every member may be called from several threads (a mutex; each call is short).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <troupe/actors/messages.hpp>
#include <troupe/actors/run_watch.hpp>
#include <troupe/io/node_events.hpp>

namespace troupe {

struct placement_plan;

/// The run's actor graph as `troupe graph` draws it: its nodes (processes), actors and routes.
struct status_plan {
  struct actor {
    std::string name, role; ///< role: loader, compute, aggregator, shard, coordinator, ...
    int node = -1;          ///< index into nodes; -1 in one process
  };
  struct route {
    int from = 0, to = 0; ///< indices into actors
    std::string label;
    bool side = false; ///< control or reports (drawn dashed)
  };
  std::vector<std::pair<std::string, std::string>> nodes; ///< (name, role), plan order
  std::vector<actor> actors;
  std::vector<route> routes;
  std::string topology;
  int workers = 0;
  std::int64_t steps_per_epoch = 0;
};

/// The plan's graph, with every route labelled as `troupe graph` labels it.
status_plan status_plan_of(const placement_plan& plan);

/// One compute's figures over its current epoch.
struct rank_figures {
  int rank = 0;
  std::int64_t epoch = 0, batch = -1, batches = 0;
  std::int64_t samples = 0; ///< this epoch
  std::int64_t steps = 0;   ///< this epoch
  std::int64_t samples_total = 0;
  double step_seconds = 0;  ///< this epoch's steps, summed
  double wait_seconds = 0;  ///< this epoch's waits, summed
  double samples_per_s = 0; ///< this epoch, from its first report to its last
  double seen = 0;          ///< unix seconds of its last report
  double since = 0;         ///< unix seconds its epoch's first step began
};

/// One node of a cluster run, as the scheduler's records tell its life.
struct node_figures {
  std::string name, role, host;
  std::string state = "planned"; ///< planned, joined, ready, lost, stopped (and its reason)
  std::string adopted_by;        ///< a lost worker's: the node that runs its computes now
  /// Bytes moved since the run began, by message kind and direction ("rx", "tx").
  std::map<std::string, std::map<std::string, std::uint64_t>> bytes;
  double waited_for_s = 0; ///< what the barriers waited for this node, summed over epochs
};

/// One finished epoch: its training and (when validated) validation figures.
struct epoch_figures {
  std::int64_t epoch = 0;
  double train_loss = 0, train_accuracy = 0, time_s = 0, samples_per_s = 0, learning_rate = 0;
  bool validated = false;
  double val_loss = 0, val_accuracy = 0;
  std::string straggler; ///< the node the barriers waited for most; empty: none
};

/// A point of the training curve: the mean of every rank's batches since the last point.
struct step_point {
  std::int64_t step = 0;
  double epoch_progress = 0, loss = 0, accuracy = 0, learning_rate = 0, time = 0;
};

/// A warning of the run's watch, or a fault a node's record told (a loss, an adoption).
struct status_event {
  double time = 0; ///< unix seconds
  std::int64_t epoch = -1;
  std::string kind; ///< near_chance, diverging, rising; lost, adopted, promoted, ...
  std::string message;
};

/// A change made while the run trained (troupe ctl set, checkpoint, stop; or replayed), as the
/// scheduler recorded it in the epoch's metrics line.
struct status_change {
  std::int64_t epoch = -1; ///< the epoch whose gate made it
  std::int64_t step = 0;   ///< the first step it counts for
  std::string change;      ///< "set topology.staleness=-1", "checkpoint", "stop"
  std::string by;          ///< "troupe ctl", "--replay-changes"
};

struct status_snapshot {
  std::string state = "starting"; ///< starting, training, validating, finished, failed, stopped
  std::string failure;            ///< why, when it failed
  std::vector<std::pair<std::string, std::string>> run; ///< network, dataset, config, ...
  std::int64_t epochs = 0;                              ///< the run's epochs
  double started = 0, now = 0;                          ///< unix seconds
  std::int64_t epoch = 0, batch = -1, batches = 0, step = 0;
  double loss = 0, accuracy = 0, learning_rate = 0, samples_per_s = 0; ///< this epoch so far
  status_plan plan;
  std::vector<rank_figures> ranks;
  std::vector<node_figures> nodes; ///< a cluster's, plan order; empty in one process
  std::vector<epoch_figures> history;
  std::vector<step_point> curve;
  std::vector<status_event> warnings, faults;
  std::vector<status_change> changes;                 ///< in the order they were made
  std::map<std::string, std::int64_t> warning_counts; ///< by kind
  std::int64_t nodes_lost = 0;                        ///< losses the run has gone on after
};

class run_status {
public:
  /// The run's description (network, dataset, config...) and its epochs.
  run_status(std::vector<std::pair<std::string, std::string>> run, std::int64_t epochs);

  void set_plan(status_plan plan);
  void batch(const batch_report& r);
  void phase(const phase_report& r);
  /// A host's annotation of an epoch's line (metrics_actor.hpp): `traffic`, `waited_for` and
  /// `changes` are read; other keys are not shown. A value that is not the JSON it should be is
  /// ignored, and so is a change without its words or step.
  void annotation(std::int64_t epoch, const std::string& key, const std::string& json);
  void warning(const run_warning& w);
  /// A record of a cluster's scheduler (node_events): member events change its nodes.
  void event(const std::string& event, const event_fields& fields);
  /// The run's end: finished, failed (with why) or stopped (interrupted).
  void end(const std::string& state, const std::string& failure = "");

  status_snapshot snapshot() const;

  /// Curve points kept: older points are thinned (every other dropped) beyond this.
  static constexpr std::size_t max_curve_points = 2000;

private:
  rank_figures& rank_of(int rank);
  node_figures* node_named(const std::string& name);
  void add_point(const batch_report& r);
  void changes(std::int64_t epoch, const std::string& json);

  mutable std::mutex mutex_;
  status_snapshot s_;
  // The curve's open point: every rank's batches since the last point.
  std::int64_t open_samples_ = 0, open_correct_ = 0, open_batches_ = 0;
  double open_loss_ = 0;
  // This epoch so far (the running figures), every rank's.
  std::int64_t epoch_samples_ = 0, epoch_correct_ = 0;
  double epoch_loss_ = 0, epoch_start_ = 0;
};

} // namespace troupe
