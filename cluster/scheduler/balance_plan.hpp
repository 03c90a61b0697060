// What `cluster { balance = auto }` decides at a gate between epochs, as pure functions: how
// many compute ranks each worker process should run, from how long a rank's step took there,
// and which one move (ranks of one process to another) brings the run closest to that.
//
// The model: a worker process serves its ranks on one device in turn, so its time per step is
// its ranks times its time per rank, and a bsp step lasts as long as the slowest process's.
// Each process keeps one rank at least. Private to cluster/.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace troupe {

/// One worker process as the balance sees it: the ranks it runs and its seconds per rank's step.
struct balanced_process {
  std::vector<int> ranks;
  double seconds_per_rank = 0;
};

/// How many ranks each of `processes` runs in the placement whose slowest step is shortest (the
/// slower of two equal choices left to the process listed first), each at least one; sums to
/// their ranks. Empty when a process has no time (> 0) yet or none is given.
std::vector<std::size_t> balanced_counts(const std::vector<balanced_process>& processes);

/// The seconds of a bsp step when process p runs counts[p] ranks.
double step_seconds(const std::vector<balanced_process>& processes,
                    const std::vector<std::size_t>& counts);

/// One move toward the balanced counts: `count` ranks from process `from` to process `to`.
struct balance_move {
  std::size_t from = 0, to = 0, count = 0;
  double step_before = 0, step_after = 0; ///< seconds per step, as the model estimates them
};

/// The move from the process furthest above its balanced count to the one furthest below,
/// of as many ranks as both allow; none when the balanced placement would not shorten the step
/// by at least `gain` (a fraction: 0.05 is 5 %), or nothing is known yet.
std::optional<balance_move> next_balance_move(const std::vector<balanced_process>& processes,
                                              double gain);

} // namespace troupe
