// The metrics actor: turns batch and phase reports into what a user watches and keeps.
//
// Protocol: metrics_actor, a metrics_sink_actor (a host may supply its own actor of that type
// to a session and receive every report itself) that also takes annotations
//   (batch_report)  -> ()    counts a training batch; every `display_batches` batches prints
//                            `Epoch[e] Batch [i]\tSpeed: N samples/sec\taccuracy=A` (accuracy
//                            over the batches since the last line, as MXNet's Speedometer with
//                            auto-reset); on a terminal redraws a progress bar
//   (phase_report)  -> ()    prints `Epoch[e] Train-accuracy=`, `Train-cross-entropy=`,
//                            `Time cost=` or `Validation-accuracy=`, `Validation-cross-entropy=`;
//                            after an epoch's validation (or its training, with no validation)
//                            appends one JSON object to the metrics file; a training epoch
//                            whose validation is skipped gets its line without validation
//                            fields when the next epoch's report (or flush) arrives
//   (annotate_atom, int64 epoch, string key, string json, string line) -> ()
//                            adds `"key": json` to epoch `epoch`'s JSON line (json is a
//                            well-formed value: an object, a number) and prints `line`
//                            (unless empty) now; a cluster's scheduler adds each node's traffic
//   (flush_atom)    -> bool  all output written and flushed
//
// Output goes to the given stream (stdout in the app, a string stream in tests).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>

#include <troupe/actors/messages.hpp>

namespace troupe {

using metrics_sink_actor = caf::typed_actor<caf::reacts_to<batch_report>,
                                            caf::reacts_to<phase_report>,
                                            caf::replies_to<flush_atom>::with<bool>>;

struct metrics_options {
  std::ostream* out = nullptr;    ///< where log lines go (must outlive the actor); null: none
  std::int64_t display_batches = 100;  ///< 0: no per-batch lines
  bool progress_bar = false;
  bool expect_validation = true;
  std::string jsonl_path;         ///< empty: no metrics file
  /// Constant fields copied into every JSON line (network, batch_size, ...).
  std::vector<std::pair<std::string, std::string>> tags;
};

/// The metrics actor itself: a sink that also takes annotations.
using metrics_actor = metrics_sink_actor::extend<
  caf::reacts_to<annotate_atom, std::int64_t, std::string, std::string, std::string>>;

/// Opens the metrics file first: throws io_error naming it if it cannot be written.
metrics_actor spawn_metrics(caf::actor_system& system, metrics_options options);

} // namespace troupe
