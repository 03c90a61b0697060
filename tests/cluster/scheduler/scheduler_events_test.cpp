// The scheduler's event records (node_events; docs/operations.md, "Event records"), message by
// message (scheduler_fixture.hpp): the moments the chaos scripts fault at and read pids from
// are recorded with their fields, in the order they happened, and a refusal is recorded too.
//
// Built on CAF's own test framework (its test coordinator needs it); ctest runs each case
// alone (tests/cluster/CMakeLists.txt).
#define CAF_SUITE node_control

#include "tests/cluster/scheduler_fixture.hpp"

namespace {

struct recording_scheduler : scheduler_fixture {
  recorded_events records = std::make_shared<std::vector<recorded_event>>();
  recording_scheduler() { options.events = events_into(records, "scheduler"); }

  // The index in `records` of the first `event` naming `member`; -1 when none.
  int first(const std::string& event, const std::string& member) const {
    for (std::size_t i = 0; i < records->size(); ++i)
      if ((*records)[i].event == event && (*records)[i].strings.at("member") == member)
        return static_cast<int>(i);
    return -1;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(scheduler_events_tests, recording_scheduler)

// Each member's admission carries its pid and name; every member is admitted before any is
// ready; a loss names the member, its pid and the reason; every record is the scheduler's.
CAF_TEST(scheduler_records_admissions_readiness_and_a_loss) {
  start();
  auto m = to_training();
  const auto admitted = records_of(records, "admitted");
  CAF_REQUIRE_EQUAL(admitted.size(), 3u);
  const std::map<std::string, double> pids{{"server_0", 100}, {"worker_0", 200}, {"worker_1", 201}};
  for (const auto& r : admitted) {
    const auto& member = r.strings.at("member");
    CAF_REQUIRE(pids.count(member) == 1);
    CAF_CHECK_EQUAL(r.numbers.at("member_pid"), pids.at(member));
    CAF_CHECK_EQUAL(r.strings.at("member_role"), member.substr(0, member.find('_')));
  }
  CAF_REQUIRE_EQUAL(records_of(records, "ready").size(), 3u);
  for (const auto& [member, pid] : pids)
    CAF_CHECK(first("admitted", member) < first("ready", "server_0"));
  CAF_CHECK(first("ready", "server_0") < first("ready", "worker_0")); // workers once it serves
  CAF_CHECK_EQUAL(records_of(records, "ready")[0].numbers.at("port"), 4000);

  lost(m.w1, "the connection closed");
  const auto lost = records_of(records, "lost");
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK_EQUAL(lost[0].strings.at("member"), "worker_1");
  CAF_CHECK_EQUAL(lost[0].numbers.at("member_pid"), 201);
  CAF_CHECK(contains(lost[0].strings.at("reason"), "the connection closed"));
  for (const auto& r : *records) {
    CAF_CHECK_EQUAL(r.strings.at("role"), "scheduler");
    CAF_CHECK_EQUAL(r.numbers.at("pid"), 7);
    CAF_CHECK(r.numbers.count("t") == 1);
  }
}

// A refused join is recorded with the refused process's pid, role and the reason it was
// told; it is no member, so nothing else is recorded for it.
CAF_TEST(scheduler_records_a_refused_join) {
  start();
  sent_list s, a, b;
  auto server = channel(s), first_worker = channel(a), second_worker = channel(b);
  join(server, node_kind::server);
  join(first_worker, node_kind::worker, 1, 300);
  join(second_worker, node_kind::worker, 1, 301);
  const auto refused = records_of(records, "refused");
  CAF_REQUIRE_EQUAL(refused.size(), 1u);
  CAF_CHECK_EQUAL(refused[0].numbers.at("member_pid"), 301);
  CAF_CHECK_EQUAL(refused[0].strings.at("member_role"), "worker");
  CAF_CHECK(contains(refused[0].strings.at("reason"), "worker rank 1 is taken by worker 1"));
  CAF_CHECK_EQUAL(records_of(records, "admitted").size(), 2u);
  lost(second_worker, "closed");
  CAF_CHECK(records_of(records, "lost").empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
