// /status's schema as docs/operations.md lists it: the fields a script reads, their types, and
// null where a figure does not exist (no validation yet, one process).
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include <troupe/status/status_json.hpp>

using namespace troupe;
using nlohmann::json;

TEST_CASE("status_json: the top-level fields and their types") {
  status_snapshot s;
  s.run = {{"network", "lenet"}};
  s.epochs = 3;
  const auto doc = json::parse(status_json(s));
  CHECK(doc.at("schema") == status_schema_version);
  for (const char* key :
       {"state", "time", "started", "run", "epochs", "position", "current", "plan", "ranks",
        "nodes", "history", "curve", "warnings", "faults", "changes", "nodes_lost"})
    CHECK(doc.contains(key));
  CHECK(doc.at("failure").is_null());
  CHECK(doc.at("run").at("network") == "lenet");
  for (const char* key : {"epoch", "batch", "batches", "step"})
    CHECK(doc.at("position").at(key).is_number_integer());
  for (const char* key : {"loss", "accuracy", "learning_rate", "samples_per_s"})
    CHECK(doc.at("current").at(key).is_number());
  for (const char* key : {"ranks", "nodes", "history", "curve", "warnings", "faults", "changes"})
    CHECK(doc.at(key).is_array());
}

TEST_CASE("status_json: each change made while training, with its epoch, step and asker") {
  status_snapshot s;
  s.changes.push_back({1, 938, "set topology.staleness=-1", "troupe ctl"});
  s.changes.push_back({2, 1407, "stop", "--replay-changes"});
  const auto doc = json::parse(status_json(s));
  const auto& changes = doc.at("changes");
  REQUIRE(changes.size() == 2);
  CHECK(
    changes[0]
    == json{
      {"epoch", 1}, {"step", 938}, {"change", "set topology.staleness=-1"}, {"by", "troupe ctl"}});
  CHECK(changes[1].at("change") == "stop");
  CHECK(changes[1].at("by") == "--replay-changes");
}

TEST_CASE("status_json: ranks carry their node, nodes their ranks and speed") {
  status_snapshot s;
  s.plan.nodes = {{"scheduler", "scheduler"}, {"worker_0", "worker"}};
  s.plan.actors = {{"compute_0", "compute", 1}, {"compute_1", "compute", 1}};
  s.plan.routes = {{0, 1, "gradients: 1 key", false}};
  for (int rank : {0, 1}) {
    rank_figures r;
    r.rank = rank;
    r.samples_per_s = 100;
    r.steps = 4;
    r.wait_seconds = 2;
    s.ranks.push_back(r);
  }
  s.nodes = {{"scheduler", "scheduler", "", "ready", "", {}, 0},
             {"worker_0", "worker", "h1", "ready", "", {{"push", {{"tx", 7}, {"rx", 1}}}}, 0.5}};
  const auto doc = json::parse(status_json(s));
  REQUIRE(doc.at("ranks").size() == 2);
  CHECK(doc.at("ranks")[1].at("node") == "worker_0");
  CHECK(doc.at("ranks")[1].at("wait_s") == Approx(0.5));
  const auto& worker = doc.at("nodes")[1];
  CHECK(worker.at("ranks") == json::array({0, 1}));
  CHECK(worker.at("samples_per_s") == Approx(200));
  CHECK(worker.at("tx") == 7);
  CHECK(worker.at("bytes").at("push").at("rx") == 1);
  CHECK(worker.at("adopted_by").is_null());
  CHECK(doc.at("plan").at("actors")[0].at("node") == 1);
  CHECK(doc.at("plan").at("routes")[0].at("label") == "gradients: 1 key");
}

TEST_CASE("status_json: an unvalidated epoch has null validation, a NaN loss is null") {
  status_snapshot s;
  epoch_figures e;
  e.train_loss = std::nan("");
  s.history = {e};
  s.ranks = {rank_figures{}};
  const auto doc = json::parse(status_json(s));
  CHECK(doc.at("history")[0].at("val_accuracy").is_null());
  CHECK(doc.at("history")[0].at("train_loss").is_null());
  CHECK(doc.at("history")[0].at("straggler").is_null());
  CHECK(doc.at("ranks")[0].at("node").is_null()); // one process
}
