// What the metrics actor sums over a stretch of batch reports (since the last step record,
// since the epoch began), and the texts it writes of them: a step record's per-rank and
// per-node times, the progress bar's speed, ETA and running loss. Private to actors/.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <troupe/actors/messages.hpp>

namespace troupe {

struct running_figures {
  std::int64_t samples = 0, correct = 0;
  double loss_sum = 0;
  struct times {
    double step = 0, wait = 0;
    std::int64_t steps = 0;
  };
  std::map<int, times> ranks; ///< each rank's steps: their time and the waits before them
  void add(const batch_report& r);
};

/// {"0":{"step_s":S,"wait_s":W},...}: each rank's mean step time and wait before a step.
std::string rank_times_json(const running_figures& w);

/// {"worker_0":{"step_s":S,"wait_s":W,"ranks":[0,1]},...}: each node's mean step time and wait
/// over the steps of its ranks (`rank_nodes`: the node each rank's compute lives on; ranks it
/// does not name are left out). "{}" when it names none.
std::string node_times_json(const running_figures& w, const std::map<int, std::string>& rank_nodes);

/// " 1234/s ETA 0:42 loss 0.5321": the speed of the `w` an epoch has summed over `seconds`
/// (samples a second), the time its batches after batch `index` of `batches` take at that
/// pace, and the mean loss so far. Empty before the epoch's second batch.
std::string bar_figures(const running_figures& w, double seconds, std::int64_t index,
                        std::int64_t batches);

} // namespace troupe
