#include <catch2/catch.hpp>

#include <troupe/actors/run_status.hpp>

using namespace troupe;

namespace {

batch_report report(int rank, std::int64_t epoch, std::int64_t index, std::int64_t batches) {
  batch_report r;
  r.rank = rank;
  r.epoch = epoch;
  r.index = index;
  r.batches = batches;
  r.samples = 10;
  r.correct = 4;
  r.loss_sum = 20; // mean 2.0
  r.learning_rate = 0.1f;
  r.step_seconds = 0.5;
  r.wait_seconds = 0.25;
  return r;
}

status_plan cluster_plan() {
  status_plan p;
  p.nodes = {{"scheduler", "scheduler"},
             {"server_0", "server"},
             {"worker_0", "worker"},
             {"worker_1", "worker"}};
  p.actors = {{"compute_0", "compute", 2}, {"compute_1", "compute", 3}, {"shard_0", "shard", 1}};
  p.routes = {{0, 2, "gradients", false}, {1, 2, "gradients", false}};
  return p;
}

event_fields member(const std::string& name, const std::string& reason = "") {
  event_fields f;
  f.strings = {{"member", name}, {"host", "10.0.0.7"}};
  if (!reason.empty())
    f.strings.emplace_back("reason", reason);
  return f;
}

} // namespace

TEST_CASE("run_status: batch reports move the rank's figures and the run's position") {
  run_status status{{{"network", "mlp"}}, 3};
  status.batch(report(0, 0, 0, 4));
  status.batch(report(1, 0, 0, 4));
  status.batch(report(0, 0, 1, 4));
  const auto s = status.snapshot();
  CHECK(s.state == "training");
  REQUIRE(s.ranks.size() == 2);
  CHECK(s.ranks[0].rank == 0);
  CHECK(s.ranks[0].steps == 2);
  CHECK(s.ranks[0].samples == 20);
  CHECK(s.ranks[0].step_seconds == Approx(1.0));
  CHECK(s.ranks[0].wait_seconds == Approx(0.5));
  CHECK(s.ranks[1].samples_total == 10);
  CHECK(s.epoch == 0);
  CHECK(s.batch == 1);
  CHECK(s.step == 2);
  CHECK(s.loss == Approx(2.0));
  CHECK(s.accuracy == Approx(0.4));
  CHECK(s.learning_rate == Approx(0.1));
  CHECK(s.epochs == 3);
  // a short epoch closes a curve point at each of rank 0's batches, over every rank's samples
  REQUIRE(s.curve.size() == 2);
  CHECK(s.curve[0].step == 1);
  CHECK(s.curve[1].epoch_progress == Approx(0.5));
  CHECK(s.curve[0].loss == Approx(2.0));
}

TEST_CASE("run_status: a new epoch starts the rank's epoch figures again, not its total") {
  run_status status{{}, 2};
  status.batch(report(0, 0, 0, 2));
  status.batch(report(0, 0, 1, 2));
  status.batch(report(0, 1, 0, 2));
  const auto s = status.snapshot();
  REQUIRE(s.ranks.size() == 1);
  CHECK(s.ranks[0].samples == 10);
  CHECK(s.ranks[0].steps == 1);
  CHECK(s.ranks[0].samples_total == 30);
  CHECK(s.step == 3);
}

TEST_CASE("run_status: the curve is thinned past its bound, keeping its ends") {
  run_status status{{}, 1};
  const std::int64_t batches = 3 * static_cast<std::int64_t>(run_status::max_curve_points);
  for (std::int64_t i = 0; i < batches; ++i)
    status.batch(report(0, 0, i, 50)); // index beyond batches: a point each
  const auto s = status.snapshot();
  CHECK(s.curve.size() <= run_status::max_curve_points + 1);
  CHECK(s.curve.size() > run_status::max_curve_points / 2);
  CHECK(s.curve.front().step == 1);
  CHECK(s.curve.back().step == batches);
}

TEST_CASE("run_status: phases fill the history, validation beside its training") {
  run_status status{{}, 2};
  phase_report train;
  train.epoch = 0;
  train.samples = 100;
  train.correct = 50;
  train.loss_sum = 70;
  train.seconds = 2;
  status.phase(train);
  CHECK(status.snapshot().state == "validating");
  auto val = train;
  val.validation = true;
  val.correct = 80;
  status.phase(val);
  const auto s = status.snapshot();
  REQUIRE(s.history.size() == 1);
  CHECK(s.history[0].train_accuracy == Approx(0.5));
  CHECK(s.history[0].train_loss == Approx(0.7));
  CHECK(s.history[0].samples_per_s == Approx(50));
  CHECK(s.history[0].validated);
  CHECK(s.history[0].val_accuracy == Approx(0.8));
}

TEST_CASE("run_status: member records tell each node's life and its faults") {
  run_status status{{}, 2};
  status.set_plan(cluster_plan());
  auto s = status.snapshot();
  REQUIRE(s.nodes.size() == 4);
  CHECK(s.nodes[0].state == "ready"); // the scheduler, which serves the status
  CHECK(s.nodes[2].state == "planned");
  status.event("admitted", member("worker_0"));
  status.event("ready", member("worker_1"));
  status.event("lost", member("worker_1", "its channel closed"));
  event_fields adopted = member("worker_0");
  adopted.strings.emplace_back("lost", "worker_1");
  status.event("adopted", adopted);
  status.event("ready", member("spare")); // no node of the plan: nothing changes
  status.set_plan(cluster_plan());        // planned again: the records stay
  s = status.snapshot();
  CHECK(s.nodes[2].state == "joined");
  CHECK(s.nodes[2].host == "10.0.0.7");
  CHECK(s.nodes[3].state == "lost");
  CHECK(s.nodes[3].adopted_by == "worker_0");
  CHECK(s.nodes_lost == 1);
  REQUIRE(s.faults.size() == 2);
  CHECK(s.faults[0].kind == "lost");
  CHECK(s.faults[0].message == "worker_1 lost: its channel closed");
  CHECK(s.faults[1].kind == "adopted");
}

TEST_CASE("run_status: a drained worker left, its node adopted, then taken back by a joiner") {
  run_status status{{}, 2};
  status.set_plan(cluster_plan());
  status.event("ready", member("worker_0"));
  status.event("ready", member("worker_1"));
  status.event("leave granted", member("worker_1", "SIGTERM"));
  CHECK(status.snapshot().nodes[3].state == "leaving");
  status.event("left", member("worker_1", "drained: SIGTERM"));
  event_fields adopted = member("worker_0");
  adopted.strings.emplace_back("lost", "worker_1");
  status.event("adopted", adopted);
  auto s = status.snapshot();
  CHECK(s.nodes[3].state == "left");
  CHECK(s.nodes[3].adopted_by == "worker_0");
  CHECK(s.nodes_lost == 0); // a leave is no loss
  status.event("moved", member("worker_1"));
  s = status.snapshot();
  CHECK(s.nodes[3].state == "ready");
  CHECK(s.nodes[3].adopted_by.empty());
  REQUIRE(s.faults.size() == 3);
  CHECK(s.faults[0].kind == "left");
  CHECK(s.faults[1].kind == "adopted");
  CHECK(s.faults[2].kind == "moved");
}

TEST_CASE("run_status: traffic and waits of an epoch's annotations reach their nodes") {
  run_status status{{}, 2};
  status.set_plan(cluster_plan());
  const std::string traffic =
    R"({"worker_0":{"rx":30,"tx":12,"kinds":{"push":{"rx":0,"tx":12},"weights":{"rx":30,"tx":0}}},)"
    R"("nobody":{"kinds":{"push":{"rx":1,"tx":1}}}})";
  status.annotation(0, "traffic", traffic);
  status.annotation(1, "traffic", traffic);
  status.annotation(
    0, "waited_for",
    R"({"worker_1":{"seconds":2.5,"steps":9},"worker_0":{"seconds":0.5,"steps":1}})");
  // not the JSON it should be: nothing changes, nothing throws
  status.annotation(1, "traffic", "{not json");
  status.annotation(1, "traffic", "[1,2]");
  status.annotation(1, "waited_for", R"({"worker_0":"soon"})");
  status.annotation(1, "other", R"({"worker_0":{"kinds":{"push":{"rx":5}}}})");
  const auto s = status.snapshot();
  REQUIRE(s.nodes.size() == 4);
  CHECK(s.nodes[2].bytes.at("push").at("tx") == 24);
  CHECK(s.nodes[2].bytes.at("weights").at("rx") == 60);
  CHECK(s.nodes[1].bytes.empty());
  CHECK(s.nodes[3].waited_for_s == Approx(2.5));
  CHECK(s.nodes[2].waited_for_s == Approx(0.5));
  REQUIRE(s.history.size() == 1);
  CHECK(s.history[0].straggler == "worker_1");
}

TEST_CASE("run_status: the changes of an epoch's annotations are listed in the order made") {
  run_status status{{}, 3};
  status.set_plan(cluster_plan());
  status.annotation(
    0, "changes",
    R"([{"change":"set topology.staleness=-1","by":"troupe ctl","asked_at":"at epoch 0","step":40},)"
    R"({"change":"checkpoint","by":"troupe ctl","asked_at":"","step":40}])");
  status.annotation(1, "changes",
                    R"([{"change":"set optimizer.lr=0.02","by":"--replay-changes","step":80}])");
  // not changes as the scheduler writes them: left out, nothing throws
  status.annotation(2, "changes", R"({"change":"stop","step":120})");
  status.annotation(2, "changes", R"([{"change":"stop"},{"step":120},{"change":7,"step":120}])");
  status.annotation(2, "changes", "[not json");
  const auto s = status.snapshot();
  REQUIRE(s.changes.size() == 3);
  CHECK(s.changes[0].epoch == 0);
  CHECK(s.changes[0].step == 40);
  CHECK(s.changes[0].change == "set topology.staleness=-1");
  CHECK(s.changes[0].by == "troupe ctl");
  CHECK(s.changes[1].change == "checkpoint");
  CHECK(s.changes[2].epoch == 1);
  CHECK(s.changes[2].step == 80);
  CHECK(s.changes[2].by == "--replay-changes");
}

TEST_CASE("run_status: warnings are counted by kind, the end says how the run ended") {
  run_status status{{}, 2};
  status.warning({0, "near_chance", "accuracy 0.10 after epoch 0"});
  status.warning({1, "near_chance", "again"});
  status.warning({1, "rising", "rose"});
  status.end("failed", "stopped by --fail-on-stall: again");
  const auto s = status.snapshot();
  REQUIRE(s.warnings.size() == 3);
  CHECK(s.warning_counts.at("near_chance") == 2);
  CHECK(s.warning_counts.at("rising") == 1);
  CHECK(s.state == "failed");
  CHECK(s.failure == "stopped by --fail-on-stall: again");
}
