// The metrics relay (cluster/metrics_relay.cpp), message by message on CAF's deterministic
// test coordinator: fake sinks record the reports they got and answer a flush with what the
// case says, so a case sees where each report went and who answered the flush.
#define CAF_SUITE relay

#include <caf/test/dsl.hpp>

#include <memory>
#include <optional>
#include <vector>

#include <troupe/cluster/metrics_relay.hpp>

using namespace troupe;

namespace {

// What a fake sink got; its flush answers `flushed`.
struct sink_probe {
  std::vector<batch_report> batches;
  std::vector<phase_report> phases;
  int flushes = 0;
  bool flushed = false;
};

metrics_sink_actor::behavior_type fake_sink(metrics_sink_actor::pointer,
                                            std::shared_ptr<sink_probe> probe) {
  return {
    [=](batch_report& r) { probe->batches.push_back(r); },
    [=](phase_report& r) { probe->phases.push_back(r); },
    [=](flush_atom) {
      ++probe->flushes;
      return probe->flushed;
    },
  };
}

batch_report batch_at(std::int64_t index) {
  batch_report r;
  r.rank = 1;
  r.epoch = 2;
  r.index = index;
  r.batches = 10;
  return r;
}

struct metrics_relay_fixture : test_coordinator_fixture<> {
  std::shared_ptr<sink_probe> first = std::make_shared<sink_probe>();
  std::shared_ptr<sink_probe> second = std::make_shared<sink_probe>();
  metrics_sink_actor first_sink = sys.spawn(fake_sink, first);
  metrics_sink_actor second_sink = sys.spawn(fake_sink, second);
  std::shared_ptr<std::vector<std::int64_t>> said_dropped =
    std::make_shared<std::vector<std::int64_t>>();
  metrics_relay_actor relay = spawn_metrics_relay(
    sys, first_sink, [said = said_dropped](std::int64_t n) { said->push_back(n); });

  ~metrics_relay_fixture() override { caf::anon_send_exit(relay, caf::exit_reason::kill); }

  void repoint(const metrics_sink_actor& to) {
    self->send(relay, repoint_atom::value, to);
    consume_messages();
  }

  void report(std::int64_t index) {
    self->send(relay, batch_at(index));
    consume_messages();
  }

  // The relay's answer to a flush (none: it failed).
  std::optional<bool> flush() {
    std::optional<bool> answer;
    auto asked = self->request(relay, caf::infinite, flush_atom::value);
    consume_messages();
    asked.receive([&](bool ok) { answer = ok; },
                  [&](caf::error& err) { CAF_MESSAGE("flush failed: " << sys.render(err)); });
    return answer;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(metrics_relay_tests, metrics_relay_fixture)

CAF_TEST(metrics_relay_passes_reports_and_the_flush_to_its_target) {
  report(3);
  phase_report phase;
  phase.epoch = 2;
  phase.samples = 640;
  self->send(relay, phase);
  consume_messages();
  CAF_REQUIRE_EQUAL(first->batches.size(), 1u);
  CAF_CHECK_EQUAL(first->batches[0].index, 3);
  CAF_CHECK_EQUAL(first->batches[0].rank, 1);
  CAF_REQUIRE_EQUAL(first->phases.size(), 1u);
  CAF_CHECK_EQUAL(first->phases[0].samples, 640);
  // The target's flush answers false: that answer, not the relay's own, comes back.
  first->flushed = false;
  const auto flushed = flush();
  CAF_REQUIRE(flushed.has_value());
  CAF_CHECK(!*flushed);
  CAF_CHECK_EQUAL(first->flushes, 1);
  CAF_CHECK(said_dropped->empty());
}

CAF_TEST(metrics_relay_drops_reports_while_it_points_nowhere_and_says_how_many_once_repointed) {
  repoint(metrics_sink_actor{});
  report(1);
  report(2);
  self->send(relay, phase_report{});
  consume_messages();
  // Lost again before a new target came: the count goes on.
  repoint(metrics_sink_actor{});
  report(3);
  CAF_CHECK(first->batches.empty());
  CAF_CHECK(first->phases.empty());
  // Nobody to flush to: answered at once, asking nobody.
  first->flushed = false;
  const auto flushed = flush();
  CAF_REQUIRE(flushed.has_value());
  CAF_CHECK(*flushed);
  CAF_CHECK_EQUAL(first->flushes, 0);
  CAF_CHECK(said_dropped->empty()); // said when a target comes, not while there is none
  repoint(second_sink);
  CAF_CHECK_EQUAL(*said_dropped, std::vector<std::int64_t>{4});
  report(4);
  CAF_REQUIRE_EQUAL(second->batches.size(), 1u);
  CAF_CHECK_EQUAL(second->batches[0].index, 4);
  CAF_CHECK(first->batches.empty());
  // Moved from one target to another, nothing went nowhere: nothing more is said.
  repoint(first_sink);
  CAF_CHECK_EQUAL(said_dropped->size(), 1u);
  // A second absence is counted from its own start.
  repoint(metrics_sink_actor{});
  report(5);
  repoint(second_sink);
  CAF_CHECK_EQUAL(*said_dropped, (std::vector<std::int64_t>{4, 1}));
}

CAF_TEST(metrics_relay_says_nothing_of_an_absence_in_which_no_report_came) {
  repoint(metrics_sink_actor{});
  repoint(second_sink);
  CAF_CHECK(said_dropped->empty());
  report(1);
  CAF_CHECK_EQUAL(second->batches.size(), 1u);
}

CAF_TEST(metrics_relay_without_a_listener_drops_and_goes_on) {
  auto quiet = spawn_metrics_relay(sys, metrics_sink_actor{});
  self->send(quiet, batch_at(1));
  self->send(quiet, repoint_atom::value, first_sink);
  self->send(quiet, batch_at(2));
  consume_messages();
  CAF_REQUIRE_EQUAL(first->batches.size(), 1u);
  CAF_CHECK_EQUAL(first->batches[0].index, 2);
  caf::anon_send_exit(quiet, caf::exit_reason::kill);
}

CAF_TEST_FIXTURE_SCOPE_END()
