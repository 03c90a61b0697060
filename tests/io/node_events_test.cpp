// Tests for io/node_events.cpp: each record is one JSON object on its own line holding the
// common fields (t, event, role, rank, pid) and its own; a file is appended to, not emptied; a
// path that cannot be written is an error naming it; a failed write is kept, never thrown.
#include <troupe/io/node_events.hpp>

#include <chrono>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/io/test_files.hpp"
#include <troupe/io/dataset.hpp>

using namespace troupe;
using Catch::Contains;

namespace {

std::vector<nlohmann::ordered_json> read_records(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::ordered_json> records;
  for (std::string line; std::getline(in, line);)
    records.push_back(nlohmann::ordered_json::parse(line));
  return records;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

} // namespace

TEST_CASE("node_events writes one record a line with the common fields first", "[io][events]") {
  test::temp_dir dir;
  const auto path = dir.file("worker_1.jsonl");
  const double before = now_seconds();
  {
    auto events = node_events::append_to(path, "worker", -1);
    events->record("started");
    events->set_rank(1);
    events->record("batch", {{{"epoch", 2}, {"batch", 8}}, {{"node", "worker_1"}}});
  }
  const double after = now_seconds();
  const auto records = read_records(path);
  REQUIRE(records.size() == 2);
  CHECK(records[0]["event"] == "started");
  CHECK(records[0]["rank"] == -1);
  CHECK(records[1]["event"] == "batch");
  CHECK(records[1]["role"] == "worker");
  CHECK(records[1]["rank"] == 1);
  CHECK(records[1]["pid"] == static_cast<int>(::getpid()));
  CHECK(records[1]["epoch"] == 2);
  CHECK(records[1]["batch"] == 8);
  CHECK(records[1]["node"] == "worker_1");
  for (const auto& r : records) { // the wall clock of the moment it was written
    CHECK(r["t"].get<double>() >= before - 1e-3);
    CHECK(r["t"].get<double>() <= after + 1e-3);
  }
  CHECK(records[0]["t"].get<double>() <= records[1]["t"].get<double>());
  CHECK(records[1].begin().key() == "t");
}

TEST_CASE("node_events appends to a file a node started again writes", "[io][events]") {
  test::temp_dir dir;
  const auto path = dir.file("scheduler.jsonl");
  node_events::append_to(path, "scheduler", 0)->record("ended", {{{"code", 1}}, {}});
  node_events::append_to(path, "scheduler", 0)->record("started");
  const auto records = read_records(path);
  REQUIRE(records.size() == 2);
  CHECK(records[0]["event"] == "ended");
  CHECK(records[1]["event"] == "started");
}

TEST_CASE("node_events names a path it cannot open", "[io][events]") {
  test::temp_dir dir;
  CHECK_THROWS_WITH(node_events::append_to(dir.file("missing/worker_0.jsonl"), "worker", 0),
                    Contains("missing/worker_0.jsonl") && Contains("cannot open"));
  CHECK_THROWS_AS(node_events::append_to(dir.path(), "worker", 0), io_error);
  CHECK_THROWS_WITH(node_events::append_to(dir.path(), "worker", 0), Contains("it is a directory"));
}

TEST_CASE("node_events keeps the first failed write and goes on", "[io][events]") {
  int calls = 0;
  node_events events(
    [&](const auto&, const auto&) {
      ++calls;
      throw io_error("events.jsonl: write failed: No space left on device (" + std::to_string(calls)
                     + ")");
    },
    "server", 0, 7);
  CHECK(events.failure().empty());
  CHECK_NOTHROW(events.record("listening", {{{"port", 9000}}, {}}));
  CHECK_NOTHROW(events.record("ready"));
  CHECK(calls == 2);
  CHECK(events.failure() == "events.jsonl: write failed: No space left on device (1)");
}

TEST_CASE("record_event writes nothing without records", "[io][events]") {
  std::vector<std::string> seen;
  auto events = std::make_shared<node_events>(
    [&](const auto&, const auto& strings) { seen.push_back(strings.at(0).second); }, "worker", 0,
    7);
  record_event(nullptr, "ready");
  record_event(events, "ready");
  CHECK(seen == std::vector<std::string>{"ready"});
}
