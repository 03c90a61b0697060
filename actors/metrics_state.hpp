// Private to actors/: the metrics actor's state (metrics_actor.cpp: phases, epoch records,
// warnings) and what its batch side (metrics_batches.cpp: the progress bar, the speedometer
// window, step records) does with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/io/metrics_log.hpp>

#include "actors/running_figures.hpp"

namespace troupe {

using clock_type = std::chrono::steady_clock;

// Seconds since the Unix epoch: what a record's "time" holds, to line records up with logs.
inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct metrics_state {
  metrics_options options;
  std::shared_ptr<jsonl_writer> jsonl;
  // Speedometer window
  clock_type::time_point window_start;
  std::int64_t window_samples = 0;
  std::int64_t window_correct = 0;
  std::int64_t window_top_k_correct = 0;
  std::int64_t window_batches = 0;
  bool bar_drawn = false;
  // Since the last step record (every rank's batches) and since the epoch began (the bar's
  // speed, ETA and running loss).
  running_figures since_step, since_epoch;
  clock_type::time_point step_start, epoch_start;
  phase_report pending_train;
  bool have_pending_train = false;
  float learning_rate = 0;
  std::optional<run_watch> watch;
  /// What each epoch's compressed pushes sent, by epoch (batch_report::values_pushed).
  std::map<std::int64_t, push_counts> pushed;
  /// Warnings by epoch, for its JSON line.
  std::map<std::int64_t, std::vector<run_warning>> warnings;
  // JSON values a host added to an epoch's line (annotate_atom), by epoch.
  std::map<std::int64_t, std::vector<std::pair<std::string, std::string>>> annotations;
  std::ostream silent{nullptr}; // where lines go when the options name no stream
  static inline const char* name = "metrics";
};

/// printf's `fmt` of up to three numbers, as a string.
std::string format(const char* fmt, double a, double b = 0, double c = 0);
/// Clears the progress bar's line if one is drawn.
void clear_bar(metrics_state& st);
/// A training batch's report: the speedometer window and its line, the bar, the step record.
void on_batch(metrics_state& st, const batch_report& r);

} // namespace troupe
