// The metrics actor: turns batch and phase reports into what a user watches and keeps.
//
// Protocol: metrics_actor, a metrics_sink_actor (a host may supply its own actor of that type
// to a session and receive every report itself) that also takes annotations
//   (batch_report)  -> ()    counts a training batch; every `display_batches` batches prints
//                            `Epoch[e] Batch [i]\tSpeed: N samples/sec\taccuracy=A` (accuracy
//                            over the batches since the last line, as MXNet's Speedometer with
//                            auto-reset), `\ttop_k_accuracy_K=T` after it when the report
//                            counts top-k; on a terminal redraws a progress bar with the
//                            epoch's speed, ETA and running loss; each line is flushed as it
//                            is written (a pipe sees it at once); every `step_records` of
//                            rank 0's batches appends a step record to the metrics file
//   (phase_report)  -> ()    prints `Epoch[e] Train-accuracy=A`, `Train-cross-entropy: L`,
//                            `Train-top_k_accuracy_K: T` (when counted), `Time cost=T` or the
//                            same three `Validation-` lines (accuracy and time after '=', loss
//                            and top-k after ':': MXNet's tools/parse_log.py averages every
//                            `Epoch[e] Train...=V` line as accuracy, so only accuracy may be
//                            written that way); the metrics file gets `top_k`,
//                            `train_top_k_accuracy` and `val_top_k_accuracy` then;
//                            a validation that covers less than the whole set (a lost
//                            worker's part: the report's lost_parts; or fewer samples than
//                            `validation_examples`) says so after each of its lines:
//                            ` (on 5000 of 10000 examples: worker 1 lost)`; the metrics
//                            file gets `val_samples` always, `val_examples` when known;
//                            after an epoch's validation (or its training, with no validation)
//                            appends one JSON object to the metrics file ("record":
//                            "epoch", with its wall-clock "time"); a training epoch
//                            whose validation is skipped gets its line without validation
//                            fields when the next epoch's report (or flush) arrives
//   (annotate_atom, int64 epoch, string key, string json, string line) -> ()
//                            adds `"key": json` to epoch `epoch`'s JSON line (json is a
//                            well-formed value: an object, a number) and prints `line`
//                            (unless empty) now; a cluster's scheduler adds each node's traffic
//   (flush_atom)    -> bool  all output written and flushed
//
// Output goes to the given stream (stdout in the app, a string stream in tests). The progress
// bar fits `terminal_columns`. A metrics file that fails to take a line ends the actor with
// errc::bad_data naming the file (the session then ends the run).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>

#include <troupe/actors/messages.hpp>
#include <troupe/actors/run_status.hpp>
#include <troupe/actors/run_watch.hpp>

namespace troupe {

using metrics_sink_actor =
  caf::typed_actor<caf::reacts_to<batch_report>, caf::reacts_to<phase_report>,
                   caf::replies_to<flush_atom>::with<bool>>;

class jsonl_writer;
class node_events;

/// Where a run is, for a host that must say so from another thread (an interrupted run):
/// the metrics actor stores worker 0's last batch report here. Thread-safe.
struct run_position {
  std::atomic<std::int64_t> epoch{0}, batch{-1}, batches{0};
  std::atomic<bool> validating{false};
  /// "epoch 3 at batch 120 of 469" or "epoch 3 at validation".
  std::string text() const;
};

struct metrics_options {
  std::ostream* out = nullptr;        ///< where log lines go (must outlive the actor); null: none
  std::int64_t display_batches = 100; ///< 0: no per-batch lines
  bool progress_bar = false;
  bool expect_validation = true;
  /// The whole validation set's examples (0: unknown): a validation covering fewer says so.
  std::int64_t validation_examples = 0;
  std::string jsonl_path; ///< empty: no metrics file
  /// An already open metrics file (the app opens it before anything starts); used instead
  /// of opening `jsonl_path`.
  std::shared_ptr<jsonl_writer> jsonl;
  /// Epochs up to this one have their lines in the metrics file already (a scheduler restarted
  /// with --resume appends to its lost one's file, and may be asked an epoch again): their
  /// lines are not written twice. -1: none.
  std::int64_t written_through = -1;
  std::shared_ptr<run_position> position; ///< null: not kept
  int terminal_columns = 80;              ///< the progress bar's line stays shorter than this
  /// Constant fields copied into every JSON line: text (network, dataset) and numbers
  /// (batch_size).
  std::vector<std::pair<std::string, std::string>> tags;
  std::vector<std::pair<std::string, double>> number_tags;
  /// Records of the run's moments beside the lines (a cluster's scheduler, `troupe node
  /// --events`): `training` when worker 0's first batch of an epoch is in, `batch` every
  /// `display_batches` batches, `trained` and `validated` after an epoch's two phases. Null: none.
  std::shared_ptr<node_events> events;
  /// The run's own warnings (run_watch.hpp): each printed as `Warning: ...`, recorded in its
  /// epoch's JSON line as `"warnings": [{"epoch", "kind", "message"}]` (and as a `warning`
  /// event); with fail_on_stall the first one ends the actor with errc::bad_data
  /// "stopped by --fail-on-stall: ..." once its epoch's line is written.
  run_watch_options watch;
  bool fail_on_stall = false;
  /// Every this many of rank 0's batches, a step record in the metrics file:
  /// {"step", "epoch", "epoch_progress", "time", "loss", "accuracy", "learning_rate",
  /// "samples_per_s", "record": "step", "ranks": {"R": {"step_s", "wait_s"}}} over every
  /// rank's batches since the last one (with rank_nodes also "nodes": {"NAME": {"step_s",
  /// "wait_s", "ranks": [R, ...]}}). 0: none.
  std::int64_t step_records = 0;
  /// The node each rank's compute lives on (a cluster's plan node names), for the step
  /// records' "nodes"; empty: no "nodes".
  std::map<int, std::string> rank_nodes;
  /// What the status server shows (run_status.hpp): every report, annotation and warning
  /// goes there too. Null: none.
  std::shared_ptr<run_status> status;
};

/// The metrics actor itself: a sink that also takes annotations.
using metrics_actor = metrics_sink_actor::extend<
  caf::reacts_to<annotate_atom, std::int64_t, std::string, std::string, std::string>>;

/// Opens the metrics file first: throws io_error naming it if it cannot be written.
metrics_actor spawn_metrics(caf::actor_system& system, metrics_options options);

} // namespace troupe
