// What a compute records on a run's timeline (troupe/io/timeline.hpp, compute_wiring::timeline):
// on its own track "compute R" each step's forward, backward and the wait after it (from the
// end of backward until the next step starts: the answers to its pushes, which under a
// synchronous topology wait for every compute, and the next batch), and each validation
// batch; each push group's push as a span from its send to its answer. Pushes overlap each
// other and backward, and a track's spans must nest, so pushes go on lanes of their own
// ("compute R pushes", "compute R pushes 2", ...): a push takes the first lane free when it
// is sent and leaves it when answered, so no two spans of one lane overlap and there are as
// many lanes as pushes were ever in flight at once.
//
// Without a timeline every call is one pointer check. Used on the compute's thread only.
// Private to actors/.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <troupe/io/timeline.hpp>

namespace troupe {

class step_timeline {
public:
  using clock = timeline_recorder::clock;

  step_timeline() = default; ///< records nothing
  step_timeline(std::shared_ptr<timeline_recorder> to, int rank, std::size_t groups);

  /// Step `step` starts (its forward); ends the wait since the last backward.
  void forward(std::int64_t step) {
    if (to_)
      record_forward(step);
  }
  /// Forward and the loss are done; backward starts.
  void backward() {
    if (to_)
      backward_start_ = clock::now();
  }
  /// Backward is done (train_step returned); the wait starts.
  void backward_done() {
    if (to_)
      record_backward();
  }
  /// Group g's push is sent / answered.
  void push_sent(std::size_t g) {
    if (to_)
      record_sent(g);
  }
  void push_answered(std::size_t g) {
    if (to_)
      record_answered(g);
  }
  /// The training phase ends after its last step's answers: that step's wait ends now.
  void training_done() {
    if (to_)
      record_wait(clock::now());
  }
  /// A phase begins or fails: nothing waits any longer, pushes in flight are forgotten.
  void forget();
  /// Now, when recording (else a time nobody reads): the start of an evaluate span.
  clock::time_point now() const { return to_ ? clock::now() : clock::time_point{}; }
  /// One validation batch evaluated, from `start` (now() before it) to now.
  void evaluated(clock::time_point start) {
    if (to_)
      to_->complete(track_, "evaluate", start, clock::now());
  }

private:
  void record_forward(std::int64_t step);
  void record_wait(clock::time_point end);
  void record_backward();
  void record_sent(std::size_t g);
  void record_answered(std::size_t g);

  struct push_in_flight {
    bool sent = false;
    std::size_t lane = 0;
    clock::time_point at;
  };

  std::shared_ptr<timeline_recorder> to_;
  int rank_ = 0;
  timeline_recorder::track_id track_ = 0;
  std::int64_t step_ = -1;
  clock::time_point forward_start_, backward_start_, wait_start_;
  bool waiting_ = false;
  std::vector<push_in_flight> pushes_; // by group
  std::vector<timeline_recorder::track_id> lanes_;
  std::vector<bool> lane_busy_;
};

} // namespace troupe
