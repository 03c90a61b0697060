// A compute's records on the run's timeline (actors/step_timeline.hpp): the step's spans on its
// own track, each push on the first lane free when it was sent.
#include "actors/step_timeline.hpp"

#include <string>

namespace troupe {

step_timeline::step_timeline(std::shared_ptr<timeline_recorder> to, int rank, std::size_t groups)
    : to_(std::move(to)), rank_(rank), pushes_(groups) {
  if (to_)
    track_ = to_->track("compute " + std::to_string(rank));
}

void step_timeline::record_forward(std::int64_t step) {
  forward_start_ = clock::now();
  record_wait(forward_start_);
  step_ = step;
}

void step_timeline::record_wait(clock::time_point end) {
  if (waiting_)
    to_->complete(track_, "wait for weights", wait_start_, end, {{"step", step_}});
  waiting_ = false;
}

void step_timeline::record_backward() {
  const auto now = clock::now();
  to_->complete(track_, "forward", forward_start_, backward_start_, {{"step", step_}});
  to_->complete(track_, "backward", backward_start_, now, {{"step", step_}});
  wait_start_ = now;
  waiting_ = true;
}

void step_timeline::record_sent(std::size_t g) {
  if (g >= pushes_.size())
    return;
  std::size_t lane = 0;
  while (lane < lane_busy_.size() && lane_busy_[lane])
    ++lane;
  if (lane == lanes_.size()) {
    const auto name = "compute " + std::to_string(rank_) + " pushes";
    lanes_.push_back(to_->track(lane == 0 ? name : name + " " + std::to_string(lane + 1)));
    lane_busy_.push_back(false);
  }
  lane_busy_[lane] = true;
  pushes_[g] = {true, lane, clock::now()};
}

void step_timeline::record_answered(std::size_t g) {
  if (g >= pushes_.size() || !pushes_[g].sent)
    return;
  auto& push = pushes_[g];
  to_->complete(lanes_[push.lane], "push", push.at, clock::now(),
                {{"step", step_}, {"group", static_cast<std::int64_t>(g)}});
  lane_busy_[push.lane] = false;
  push.sent = false;
}

void step_timeline::forget() {
  waiting_ = false;
  for (auto& push : pushes_)
    push.sent = false;
  lane_busy_.assign(lane_busy_.size(), false);
}

} // namespace troupe
