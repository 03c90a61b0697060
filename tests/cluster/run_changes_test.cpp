// troupe ctl set's words checked against the key table, and the changes a metrics JSONL file
// recorded read back for --replay-changes: each refusal says what and where.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/run_changes.hpp>

using namespace troupe;

namespace {

// A job of optimizer `rule` and topology `kind` (bsp: aggregate(all), the shard's one source).
training_job job_of(optimizer_kind rule = optimizer_kind::sgd,
                    topology_kind kind = topology_kind::bsp) {
  training_job job;
  job.optimizer.kind = rule;
  use_preset(job.topology, kind);
  return job;
}

std::string refusal_of(const std::string& assignment, const training_job& job = job_of()) {
  auto c = parse_setting(assignment, job, 0);
  REQUIRE(!c);
  return error_text(c.error());
}

// A file of `text` in /tmp, named after this process; removed when the case ends.
struct recorded_file {
  std::string path;
  explicit recorded_file(const std::string& text)
      : path("/tmp/troupe_run_changes_test_" + std::to_string(::getpid()) + ".jsonl") {
    std::ofstream(path) << text;
  }
  ~recorded_file() { std::remove(path.c_str()); }
};

} // namespace

TEST_CASE("a setting is read by its config path or its name, within the key's range",
          "[cluster][changes]") {
  auto lr = parse_setting("lr=0.05", job_of(), 938);
  REQUIRE(lr);
  CHECK(lr->setting == shard_setting::lr);
  CHECK(lr->value == 0.05);
  CHECK(lr->step == 938);
  CHECK(setting_text(*lr) == "set optimizer.lr=0.05");
  auto wd = parse_setting("optimizer.wd=0", job_of(optimizer_kind::adamw), 0);
  REQUIRE(wd);
  CHECK(wd->setting == shard_setting::wd);
  CHECK(setting_text(*wd) == "set optimizer.wd=0");
  CHECK(parse_setting("momentum=0.5", job_of(optimizer_kind::rmsprop), 0));
  // The staleness bound of a run whose shard has several sources: -1 lifts it (async).
  for (auto kind : {topology_kind::async, topology_kind::ssp}) {
    auto bound = parse_setting("staleness=2", job_of(optimizer_kind::sgd, kind), 0);
    REQUIRE(bound);
    CHECK(bound->setting == shard_setting::staleness);
    CHECK(setting_text(*bound) == "set topology.staleness=2");
    auto none = parse_setting("topology.staleness=-1", job_of(optimizer_kind::sgd, kind), 0);
    REQUIRE(none);
    CHECK(none->value == -1);
  }
  const auto async = job_of(optimizer_kind::sgd, topology_kind::async);
  CHECK_THAT(
    refusal_of("staleness=1.5", async),
    Catch::Contains("topology.staleness must be between -1 and 1000000 (-1: none, async)"));
  CHECK_THAT(refusal_of("staleness=-2", async), Catch::Contains("out of range"));
  CHECK_THAT(refusal_of("staleness=2"),
             Catch::Contains("the run's topology, bsp, ends in aggregate(all), the shard's one "
                             "source, and a staleness bound needs several"));
  CHECK_THAT(refusal_of("lr=0"), Catch::Contains("optimizer.lr must be above 0 and at most 100"));
  CHECK_THAT(refusal_of("lr=1e3"), Catch::Contains("out of range"));
  CHECK_THAT(refusal_of("lr= 0.1"), Catch::Contains("' 0.1' is not a number"));
  CHECK_THAT(refusal_of("lr=0.1x"), Catch::Contains("'0.1x' is not a number"));
  CHECK_THAT(refusal_of("lr=inf"), Catch::Contains("'inf' is not a number"));
  CHECK_THAT(refusal_of("momentum=0.5", job_of(optimizer_kind::adam)),
             Catch::Contains("the run's optimizer, adam, has no momentum"));
  CHECK_THAT(refusal_of("optimizer.beta1=0.8"),
             Catch::Contains("set optimizer.beta1: no key a running job can change"));
  CHECK_THAT(refusal_of("=1"), Catch::Contains("no key a running job can change"));
  CHECK(settable_keys() == "optimizer.lr, optimizer.momentum, optimizer.wd, topology.staleness");
}

TEST_CASE("recorded changes are read from each metrics line in step order", "[cluster][changes]") {
  recorded_file f(
    R"({"epoch":0,"train":{}})"
    "\n"
    R"({"epoch":1,"changes":[{"change":"set optimizer.lr=0.02","by":"troupe ctl","asked_at":"","step":40},{"change":"checkpoint","by":"troupe ctl","asked_at":"","step":40}]})"
    "\n\n"
    R"({"epoch":0,"changes":[{"change":"set optimizer.momentum=0.5","by":"troupe ctl","asked_at":"","step":20}]})"
    "\n"
    R"({"epoch":2,"changes":[{"change":"stop","by":"troupe ctl","asked_at":"","step":60}]})"
    "\n");
  auto r = read_recorded_changes(f.path, job_of());
  REQUIRE(r);
  REQUIRE(r->size() == 4);
  CHECK((*r)[0].step == 20);
  CHECK((*r)[0].kind == run_change_kind::set);
  CHECK((*r)[0].set.setting == shard_setting::momentum);
  CHECK((*r)[0].set.step == 20);
  CHECK((*r)[1].text == "set optimizer.lr=0.02");
  CHECK((*r)[1].set.value == 0.02);
  CHECK((*r)[2].kind == run_change_kind::checkpoint);
  CHECK((*r)[3].kind == run_change_kind::stop);
  CHECK((*r)[3].step == 60);
}

TEST_CASE("a recorded file that cannot be replayed is refused naming the file and line",
          "[cluster][changes]") {
  const auto refused = [](const std::string& text, optimizer_kind rule = optimizer_kind::sgd) {
    recorded_file f(text);
    auto r = read_recorded_changes(f.path, job_of(rule));
    REQUIRE(!r);
    CHECK(troupe_code(r.error()) == errc::bad_data);
    return error_text(r.error());
  };
  CHECK_THAT(refused("{\"epoch\":0}\nnot json\n"), Catch::Contains(".jsonl:2: not a JSON object"));
  CHECK_THAT(refused(R"({"changes":{"change":"stop"}})"),
             Catch::Contains(":1: \"changes\" is not a list"));
  CHECK_THAT(refused(R"({"changes":[{"change":"stop"}]})"),
             Catch::Contains("a change needs \"change\" (its words) and \"step\""));
  CHECK_THAT(refused(R"({"changes":[{"change":"stop","step":-5}]})"),
             Catch::Contains("\"step\" (at least 0)"));
  CHECK_THAT(refused(R"({"changes":[{"change":"resize 4","step":5}]})"),
             Catch::Contains("'resize 4' is no change (set KEY=VALUE, checkpoint, stop)"));
  CHECK_THAT(refused(R"({"changes":[{"change":"set optimizer.lr=500","step":5}]})"),
             Catch::Contains(":1: set optimizer.lr=500: out of range"));
  CHECK_THAT(refused(R"({"changes":[{"change":"set optimizer.momentum=0.5","step":5}]})",
                     optimizer_kind::adam),
             Catch::Contains("has no momentum"));
  auto missing = read_recorded_changes("/nonexistent/m.jsonl", job_of());
  REQUIRE(!missing);
  CHECK_THAT(error_text(missing.error()),
             Catch::Contains("--replay-changes /nonexistent/m.jsonl: cannot be read"));
}
