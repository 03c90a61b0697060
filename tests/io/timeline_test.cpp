// Tests for io/timeline.cpp: what is recorded comes out as Chrome trace JSON with every field a
// viewer needs, spans nest, each track is in time order whatever order it was recorded in, the
// file is written whole (and a path that cannot be written is an error naming it), and merging
// gives each part its own process id and shifts it by its offset: the one its file records
// (measured at join, NTP's arithmetic: clock_offset_of) and the caller's.
#include <troupe/io/timeline.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/io/test_files.hpp"
#include <troupe/io/dataset.hpp>

using namespace troupe;
using Catch::Contains;
using json = nlohmann::json;
using std::chrono::microseconds;

namespace {

// The events of `text` on track `tid` that are not metadata.
std::vector<json> events_of(const json& trace, int tid) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"])
    if (e["tid"] == tid && e["ph"] != "M")
      out.push_back(e);
  return out;
}

std::string metadata_name(const json& trace, const std::string& what, int tid) {
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == what && e["tid"] == tid)
      return e["args"]["name"];
  return "";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("timeline writes complete spans in time order with every field", "[io][timeline]") {
  timeline_recorder t("worker 0");
  const auto compute = t.track("compute 0");
  const auto start = timeline_recorder::clock::now();
  // The inner span is recorded first (spans are recorded when they end): the file still puts
  // the enclosing one first.
  t.complete(compute, "backward", start + microseconds(100), start + microseconds(300),
             {{"step", 7}});
  t.complete(compute, "step", start, start + microseconds(400), {{"step", 7}, {"group", 2}});
  const auto trace = json::parse(t.json(3));
  REQUIRE(trace["traceEvents"].is_array());
  for (const auto& e : trace["traceEvents"])
    for (const char* field : {"name", "ph", "ts", "pid", "tid"})
      CHECK(e.contains(field));
  CHECK(metadata_name(trace, "process_name", 0) == "worker 0");
  CHECK(metadata_name(trace, "thread_name", 1) == "compute 0");
  const auto spans = events_of(trace, 1);
  REQUIRE(spans.size() == 2);
  CHECK(spans[0]["name"] == "step");
  CHECK(spans[0]["ph"] == "X");
  CHECK(spans[0]["pid"] == 3);
  CHECK(spans[0]["dur"] == 400);
  CHECK(spans[0]["args"]["group"] == 2);
  CHECK(spans[1]["name"] == "backward");
  CHECK(spans[1]["dur"] == 200);
  CHECK(spans[1]["args"]["step"] == 7);
  CHECK(spans[1]["ts"].get<std::int64_t>() - spans[0]["ts"].get<std::int64_t>() == 100);
}

TEST_CASE("timeline stamps microseconds of the wall clock", "[io][timeline]") {
  using namespace std::chrono;
  const auto before = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  timeline_recorder t("troupe");
  const auto track = t.track("coordinator");
  t.instant(track, "epoch");
  const auto after = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  const auto ts = events_of(json::parse(t.json()), 1).at(0)["ts"].get<std::int64_t>();
  // The wall clock is read once, at the start, so it may be a microsecond behind.
  CHECK(ts >= before - 1);
  CHECK(ts <= after + 1);
}

TEST_CASE("timeline nests begin and end, and ends what was left open", "[io][timeline]") {
  timeline_recorder t("troupe");
  const auto track = t.track("checkpoint");
  t.end(track); // nothing open: ignored, so the trace stays balanced
  t.begin(track, "save", {{"epoch", 1}});
  t.begin(track, "write");
  t.end(track);
  t.begin(track, "save"); // never ended: the run failed in it
  const auto spans = events_of(json::parse(t.json()), 1);
  std::vector<std::string> phases;
  for (const auto& e : spans)
    phases.push_back(e["ph"]);
  // The writer closes the second "save" and then the first.
  CHECK(phases == std::vector<std::string>{"B", "B", "E", "B", "E", "E"});
  CHECK(spans[0]["args"]["epoch"] == 1);
  CHECK(spans[1]["name"] == "write");
  for (std::size_t i = 1; i < spans.size(); ++i)
    CHECK(spans[i]["ts"] >= spans[i - 1]["ts"]);
}

TEST_CASE("timeline keeps one track per name and per thread's order", "[io][timeline]") {
  timeline_recorder t("troupe");
  CHECK(t.track("shard 0") == t.track("shard 0"));
  CHECK(t.track("shard 0") != t.track("shard 1"));
  auto record = [&t](const std::string& name) {
    const auto track = t.track(name);
    for (int i = 0; i < 200; ++i)
      t.instant(track, "push", "", {{"step", i}});
  };
  std::thread a(record, "shard 0"), b(record, "shard 1");
  a.join();
  b.join();
  const auto trace = json::parse(t.json());
  for (int tid : {1, 2}) {
    const auto events = events_of(trace, tid);
    REQUIRE(events.size() == 200);
    for (std::size_t i = 1; i < events.size(); ++i) {
      CHECK(events[i]["ts"] >= events[i - 1]["ts"]);
      CHECK(events[i]["args"]["step"] == static_cast<int>(i));
    }
  }
}

TEST_CASE("timeline instants carry their detail and the process its new name", "[io][timeline]") {
  timeline_recorder t("worker");
  t.set_process_name("worker 1");
  t.instant(t.track("faults"), "lost node", "server 0 \"quoted\"");
  const auto trace = json::parse(t.json());
  CHECK(metadata_name(trace, "process_name", 0) == "worker 1");
  const auto events = events_of(trace, 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["ph"] == "i");
  CHECK(events[0]["s"] == "t");
  CHECK(events[0]["args"]["detail"] == "server 0 \"quoted\"");
}

TEST_CASE("timeline writes its file whole and names a path it cannot write", "[io][timeline]") {
  test::temp_dir dir;
  timeline_recorder t("troupe");
  t.instant(t.track("coordinator"), "epoch");
  const auto path = dir.file("run.json");
  t.write(path);
  CHECK(json::parse(read_text(path)) == json::parse(t.json()));
  const auto missing = dir.file("no/such/folder/run.json");
  CHECK_THROWS_AS(t.write(missing), io_error);
  CHECK_THROWS_WITH(t.write(missing), Contains(missing));
}

TEST_CASE("merge_timelines gives each part its process id and offset", "[io][timeline]") {
  test::temp_dir dir;
  timeline_recorder scheduler("scheduler"), worker("worker 0");
  scheduler.instant(scheduler.track("coordinator"), "epoch");
  worker.instant(worker.track("compute 0"), "step");
  scheduler.write(dir.file("s.json"));
  worker.write(dir.file("w.json"));
  const auto merged =
    json::parse(merge_timelines({{dir.file("s.json"), 0}, {dir.file("w.json"), 1000}}));
  const auto worker_own = json::parse(worker.json());
  std::vector<json> from_worker;
  for (const auto& e : merged["traceEvents"])
    if (e["pid"] == 2 && e["name"] != "process_labels")
      from_worker.push_back(e);
  REQUIRE(from_worker.size() == worker_own["traceEvents"].size());
  for (std::size_t i = 0; i < from_worker.size(); ++i)
    CHECK(from_worker[i]["ts"].get<std::int64_t>()
          == worker_own["traceEvents"][i]["ts"].get<std::int64_t>() + 1000);
  CHECK(metadata_name(merged, "process_name", 0) == "scheduler");
  bool named_worker = false;
  for (const auto& e : merged["traceEvents"])
    named_worker |= e["pid"] == 2 && e["name"] == "process_name" && e["args"]["name"] == "worker 0";
  CHECK(named_worker);
}

TEST_CASE("merge_timelines names a part it cannot read or that is no trace", "[io][timeline]") {
  test::temp_dir dir;
  const auto missing = dir.file("missing.json");
  CHECK_THROWS_WITH(merge_timelines({{missing, 0}}), Contains(missing));
  const auto broken = dir.file("broken.json");
  test::write_file(broken, {'{', '"'});
  CHECK_THROWS_WITH(merge_timelines({{broken, 0}}), Contains(broken) && Contains("JSON"));
  const auto other = dir.file("other.json");
  test::write_file(other, {'[', ']'});
  CHECK_THROWS_WITH(merge_timelines({{other, 0}}), Contains(other) && Contains("traceEvents"));
}

TEST_CASE("clock_offset_of takes NTP's offset and bounds its error by half the flight",
          "[io][timeline]") {
  // The reference is 5000 us ahead; 100 us each way, 300 us held at the reference.
  auto symmetric = clock_offset_of(1000, 6100, 6400, 1500);
  REQUIRE(symmetric.has_value());
  CHECK(symmetric->offset == 5000);
  CHECK(symmetric->uncertainty == 100);
  // 50 us there, 250 back: off by 100 us, within the uncertainty (150).
  auto lopsided = clock_offset_of(1000, 6050, 6350, 1600);
  REQUIRE(lopsided.has_value());
  CHECK(lopsided->uncertainty == 150);
  CHECK(std::abs(lopsided->offset - 5000) <= lopsided->uncertainty);
  // A clock behind: a negative offset.
  auto behind = clock_offset_of(10'000, 2'010, 2'020, 10'030);
  REQUIRE(behind.has_value());
  CHECK(behind->offset == -8000);
  // Stamps that contradict each other give nothing rather than a wrong offset.
  CHECK(!clock_offset_of(1000, 6100, 6400, 900));  // arrived before it was sent
  CHECK(!clock_offset_of(1000, 6400, 6100, 1600)); // answered before it was received
  CHECK(!clock_offset_of(1000, 6000, 7000, 1500)); // held longer than the round trip
}

TEST_CASE("timeline records its clock offset and the merge applies it", "[io][timeline]") {
  test::temp_dir dir;
  timeline_recorder scheduler("scheduler"), worker("worker 0"), server("server 0");
  scheduler.instant(scheduler.track("coordinator"), "epoch");
  worker.instant(worker.track("compute 0"), "step");
  server.instant(server.track("shard 0"), "apply");
  CHECK(!json::parse(worker.json()).contains("otherData"));
  worker.set_clock_offset("scheduler", -30'000'000, 250);
  const auto own = json::parse(worker.json());
  REQUIRE(own.contains("otherData"));
  CHECK(own["otherData"]["clock_reference"] == "scheduler");
  CHECK(own["otherData"]["clock_offset_us"] == -30'000'000);
  CHECK(own["otherData"]["clock_uncertainty_us"] == 250);
  scheduler.write(dir.file("s.json"));
  worker.write(dir.file("w.json"));
  server.write(dir.file("v.json"));
  const auto merged = json::parse(
    merge_timelines({{dir.file("s.json"), 0}, {dir.file("w.json"), 0}, {dir.file("v.json"), 0}}));
  std::int64_t step_ts = 0, worker_step_ts = 0;
  std::map<int, std::string> labels;
  for (const auto& e : merged["traceEvents"]) {
    if (e["name"] == "step")
      step_ts = e["ts"];
    if (e["name"] == "process_labels")
      labels[e["pid"].get<int>()] = e["args"]["labels"];
  }
  for (const auto& e : own["traceEvents"])
    if (e["name"] == "step")
      worker_step_ts = e["ts"];
  CHECK(step_ts == worker_step_ts - 30'000'000);
  REQUIRE(labels.size() == 3);
  CHECK_THAT(labels[2],
             Contains("the scheduler's") && Contains("-30000000 us") && Contains("within 250 us"));
  CHECK_THAT(labels[3], Contains("no offset measured"));
}

TEST_CASE("merge_timelines names a part whose recorded offset is malformed", "[io][timeline]") {
  test::temp_dir dir;
  const auto odd = dir.file("odd.json");
  const std::string text =
    R"({"traceEvents": [], "otherData": {"clock_offset_us": "soon", "clock_uncertainty_us": 1}})";
  test::write_file(odd, std::vector<std::uint8_t>(text.begin(), text.end()));
  CHECK_THROWS_WITH(merge_timelines({{odd, 0}}), Contains(odd) && Contains("clock_offset_us"));
  const auto unsure = dir.file("unsure.json");
  const std::string negative =
    R"({"traceEvents": [], "otherData": {"clock_offset_us": 5, "clock_uncertainty_us": -1}})";
  test::write_file(unsure, std::vector<std::uint8_t>(negative.begin(), negative.end()));
  CHECK_THROWS_WITH(merge_timelines({{unsure, 0}}), Contains(unsure) && Contains(">= 0"));
}
