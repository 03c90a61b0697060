// Tests for actors/step_timeline.cpp: a step's forward, backward and the wait after it on the
// compute's track, one after another; pushes on lanes where no two spans overlap (a push takes
// the first lane free, so two pushes in flight take two lanes, and a later one reuses the
// first); nothing recorded without a timeline, and nothing for a push never sent.
#include "actors/step_timeline.hpp"

#include <algorithm>
#include <map>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/io/trace_events.hpp"

using namespace troupe;
using json = nlohmann::json;

namespace {

std::vector<std::pair<std::string, json>> events_of(const timeline_recorder& recorded) {
  return test::trace_events_of(recorded);
}

std::vector<std::string> names_on(const std::vector<std::pair<std::string, json>>& events,
                                  const std::string& track) {
  std::vector<std::string> names;
  for (const auto& [on, e] : events)
    if (on == track)
      names.push_back(e["name"]);
  return names;
}

} // namespace

TEST_CASE("step_timeline records forward, backward and the wait on the compute's track",
          "[actors][timeline]") {
  auto recorded = std::make_shared<timeline_recorder>("troupe");
  step_timeline marks(recorded, 3, 2);
  for (std::int64_t step = 10; step < 12; ++step) {
    marks.forward(step);
    marks.backward();
    marks.backward_done();
  }
  marks.training_done();
  const auto events = events_of(*recorded);
  auto names = names_on(events, "compute 3");
  REQUIRE(names.size() == 6);
  for (const char* name : {"forward", "backward", "wait for weights"})
    CHECK(std::count(names.begin(), names.end(), name) == 2);
  // One after another, never overlapping (spans of no length may share a microsecond, so the
  // file's order among them is not the order they happened in).
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (const auto& [track, e] : events) {
    const auto ts = e["ts"].get<std::int64_t>();
    spans.emplace_back(ts, ts + e["dur"].get<std::int64_t>());
    CHECK((e["args"]["step"] == 10 || e["args"]["step"] == 11));
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    CHECK(spans[i].first >= spans[i - 1].second);
}

TEST_CASE("step_timeline puts pushes in flight together on lanes of their own",
          "[actors][timeline]") {
  auto recorded = std::make_shared<timeline_recorder>("troupe");
  step_timeline marks(recorded, 0, 3);
  marks.forward(0);
  marks.backward();
  marks.push_sent(2);
  marks.push_sent(1); // group 2 still in flight: the second lane
  marks.push_answered(2);
  marks.push_sent(0); // the first lane is free again
  marks.backward_done();
  marks.push_answered(1);
  marks.push_answered(0);
  marks.push_answered(0); // answered twice (or never sent): nothing more
  const auto events = events_of(*recorded);
  CHECK(names_on(events, "compute 0 pushes") == std::vector<std::string>{"push", "push"});
  CHECK(names_on(events, "compute 0 pushes 2") == std::vector<std::string>{"push"});
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> lanes;
  for (const auto& [track, e] : events) {
    if (track.rfind("compute 0 pushes", 0) != 0)
      continue;
    const auto ts = e["ts"].get<std::int64_t>();
    lanes[track].emplace_back(ts, ts + e["dur"].get<std::int64_t>());
    CHECK(e["args"]["step"] == 0);
  }
  for (auto& [track, spans] : lanes) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      CHECK(spans[i].first >= spans[i - 1].second);
  }
}

TEST_CASE("step_timeline forgets pushes in flight when a phase fails", "[actors][timeline]") {
  auto recorded = std::make_shared<timeline_recorder>("troupe");
  step_timeline marks(recorded, 0, 1);
  marks.forward(0);
  marks.backward();
  marks.push_sent(0);
  marks.backward_done();
  marks.forget();
  marks.push_answered(0); // an answer to the failed phase
  marks.training_done();  // no wait either: forgotten
  // Spans of no length may share a microsecond, so their order in the file is not asserted.
  auto names = names_on(events_of(*recorded), "compute 0");
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"backward", "forward"});
  CHECK(names_on(events_of(*recorded), "compute 0 pushes").empty());
}

TEST_CASE("step_timeline without a timeline records nothing", "[actors][timeline]") {
  step_timeline marks;
  marks.forward(0);
  marks.backward();
  marks.push_sent(0);
  marks.push_answered(0);
  marks.backward_done();
  marks.training_done();
  CHECK(marks.now() == step_timeline::clock::time_point{});
}
