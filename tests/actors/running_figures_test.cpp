// What the metrics actor writes of the batches it has summed: times by rank and by node, and
// the progress bar's figures.
#include <catch2/catch.hpp>

#include "actors/running_figures.hpp"

using namespace troupe;

namespace {

batch_report timed(int rank, double step, double wait) {
  batch_report r{rank, 0, 0, 4, 10, 5, 10.0, 0.1f};
  r.step_seconds = step;
  r.wait_seconds = wait;
  return r;
}

} // namespace

TEST_CASE("running_figures sums samples, hits and loss, and each rank's times") {
  running_figures w;
  w.add(timed(1, 0.5, 0.25));
  w.add(timed(1, 0.25, 0.0));
  w.add(timed(0, 0.125, 0.5));
  CHECK(w.samples == 30);
  CHECK(w.correct == 15);
  CHECK(w.loss_sum == 30.0);
  REQUIRE(w.ranks.size() == 2);
  CHECK(w.ranks.at(1).steps == 2);
  CHECK(rank_times_json(w)
        == R"({"0":{"step_s":0.125,"wait_s":0.5},"1":{"step_s":0.375,"wait_s":0.125}})");
}

TEST_CASE("node_times_json means each node's steps over its ranks and leaves out unknown ranks") {
  running_figures w;
  w.add(timed(0, 0.5, 0.0));
  w.add(timed(1, 0.25, 0.5));
  w.add(timed(1, 0.25, 0.5));
  w.add(timed(7, 9.0, 9.0)); // a rank the plan does not place
  CHECK(node_times_json(w, {}) == "{}");
  CHECK(node_times_json(w, {{0, "worker_1"}, {1, "worker_1"}})
        == R"({"worker_1":{"step_s":0.333333,"wait_s":0.333333,"ranks":[0,1]}})");
  CHECK(
    node_times_json(w, {{0, "b"}, {1, "a"}})
    == R"({"a":{"step_s":0.25,"wait_s":0.5,"ranks":[1]},"b":{"step_s":0.5,"wait_s":0,"ranks":[0]}})");
}

TEST_CASE("bar_figures gives speed, ETA and the running loss once a batch has passed") {
  running_figures w;
  CHECK(bar_figures(w, 1.0, 3, 10).empty()); // no samples yet
  w.add(timed(0, 0.1, 0.0));
  w.add(timed(0, 0.1, 0.0));
  CHECK(bar_figures(w, 2.0, 0, 10).empty()); // the first batch: no pace yet
  CHECK(bar_figures(w, 0.0, 2, 10).empty());
  // 20 samples in 2 s after 2 batches: 1 s a batch, 7 batches left
  CHECK(bar_figures(w, 2.0, 2, 10) == " 10/s ETA 0:07 loss 1.0000");
  CHECK(bar_figures(w, 200.0, 2, 10) == " 0/s ETA 11:40 loss 1.0000");
}
