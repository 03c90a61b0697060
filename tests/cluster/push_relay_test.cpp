// The push relay (cluster/push_relay.cpp), message by message on CAF's deterministic test
// coordinator: fake targets record what they were asked and answer, fail or stay silent as a
// case says, and each request is made by a small actor that keeps its outcome, so a case can
// see that a held request has not been answered yet.
#define CAF_SUITE relay

#include <caf/test/dsl.hpp>

#include <memory>
#include <string>
#include <vector>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/push_relay.hpp>

#include "tests/actors/recorded_answer.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

// Fails the requests a silent fake target holds (a promise is delivered by its own actor).
using fail_held_atom = caf::atom_constant<caf::atom("failheld")>;

using fake_target_actor = push_target_actor::extend<caf::reacts_to<fail_held_atom, caf::error>>;

// What a fake target was asked ("push", "pull", "rewind", with the step a push or rewind
// named, the source a rewind named and the deadline it carried), and how it answers: weights after
// `updates` updates, `failure` when that is set, or, while `silent` is set, not until the test
// fails them.
struct target_probe {
  struct asked {
    std::string what;
    std::int64_t step;
    deadline due;
    std::int32_t source = -1;
  };
  std::vector<asked> asks;
  std::int64_t updates = 0;
  caf::error failure;
  bool silent = false;
  std::vector<caf::typed_response_promise<weight_set>> unanswered;
};

fake_target_actor::behavior_type fake_target(fake_target_actor::pointer self,
                                             std::shared_ptr<target_probe> probe) {
  auto answer = [=](std::string what, std::int64_t step, deadline due,
                    std::int32_t source = -1) -> caf::result<weight_set> {
    probe->asks.push_back({std::move(what), step, due, source});
    if (probe->silent) {
      probe->unanswered.push_back(self->make_response_promise<weight_set>());
      return probe->unanswered.back();
    }
    if (probe->failure)
      return probe->failure;
    weight_set ws;
    ws.updates = probe->updates;
    return ws;
  };
  return {
    [=](push_atom, gradient_push& push) { return answer("push", push.step, push.due); },
    [=](pull_atom, deadline due) { return answer("pull", -1, due); },
    [=](rewind_atom, std::int64_t step, std::int32_t source, deadline due) {
      return answer("rewind", step, due, source);
    },
    [=](fail_held_atom, caf::error& err) {
      for (auto& promise : probe->unanswered)
        promise.deliver(err);
      probe->unanswered.clear();
    },
  };
}

using relay_answer = test::recorded_answer<weight_set>;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct relay_fixture : test_coordinator_fixture<> {
  std::shared_ptr<target_probe> first = std::make_shared<target_probe>();
  std::shared_ptr<target_probe> second = std::make_shared<target_probe>();
  fake_target_actor first_target = sys.spawn(fake_target, first);
  fake_target_actor second_target = sys.spawn(fake_target, second);
  push_relay_actor relay = spawn_push_relay(sys, first_target, "shard 0");
  std::vector<caf::actor> askers;

  relay_fixture() {
    first->updates = 5;
    second->updates = 7;
  }

  // A silent target's promises keep it alive: every actor here is ended with the fixture.
  ~relay_fixture() override {
    for (auto& a : askers)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    caf::anon_send_exit(relay, caf::exit_reason::kill);
    caf::anon_send_exit(first_target, caf::exit_reason::kill);
    caf::anon_send_exit(second_target, caf::exit_reason::kill);
  }

  template <class... Ts> std::shared_ptr<relay_answer> ask(Ts... request) {
    auto out = test::ask_and_record<weight_set>(
      sys, relay, [this](caf::actor a) { askers.push_back(a); }, request...);
    consume_messages();
    return out;
  }

  std::shared_ptr<relay_answer> pull(deadline due) { return ask(pull_atom::value, due); }

  void repoint(const fake_target_actor& to) {
    self->send(relay, repoint_atom::value, push_target_actor{to});
    consume_messages();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(push_relay_tests, relay_fixture)

CAF_TEST(push_relay_passes_each_request_to_its_target_with_the_originators_deadline) {
  gradient_push push;
  push.step = 3;
  push.due = deadline::after(1min);
  auto pushed = ask(push_atom::value, push);
  const auto pull_due = deadline::after(2min);
  auto pulled = pull(pull_due);
  const auto rewind_due = deadline::after(3min);
  auto rewound = ask(rewind_atom::value, std::int64_t{9}, std::int32_t{2}, rewind_due);
  CAF_REQUIRE_EQUAL(first->asks.size(), 3u);
  CAF_CHECK_EQUAL(first->asks[0].what, "push");
  CAF_CHECK_EQUAL(first->asks[0].step, 3);
  CAF_CHECK(first->asks[0].due.at == push.due.at);
  CAF_CHECK_EQUAL(first->asks[1].what, "pull");
  CAF_CHECK(first->asks[1].due.at == pull_due.at);
  CAF_CHECK_EQUAL(first->asks[2].what, "rewind");
  CAF_CHECK_EQUAL(first->asks[2].step, 9);
  CAF_CHECK_EQUAL(first->asks[2].source, 2);
  CAF_CHECK(first->asks[2].due.at == rewind_due.at);
  for (const auto& got : {pushed, pulled, rewound}) {
    CAF_REQUIRE(got->answered);
    CAF_REQUIRE(!got->error);
    CAF_CHECK_EQUAL(got->value.updates, 5);
  }
  CAF_CHECK(second->asks.empty());
}

CAF_TEST(push_relay_passes_a_failure_other_than_a_lost_channel_on_at_once) {
  first->failure = make_error(errc::bad_request, "shard 0: key 4 is not one of its keys");
  auto pulled = pull(deadline::after(1min));
  CAF_REQUIRE(pulled->answered);
  CAF_REQUIRE(pulled->error); // troupe_code reads no empty error
  CAF_CHECK(troupe_code(pulled->error) == errc::bad_request);
  CAF_CHECK(contains(error_text(pulled->error), "key 4 is not one of its keys"));
  // Nothing is held: re-pointing asks nobody again.
  repoint(second_target);
  CAF_CHECK_EQUAL(first->asks.size(), 1u);
  CAF_CHECK(second->asks.empty());
}

CAF_TEST(push_relay_holds_a_request_whose_channel_was_lost_until_it_is_repointed) {
  first->failure = make_error(errc::peer_down, "the channel to shard 0 ended");
  const auto due = deadline::after(1min);
  gradient_push push;
  push.step = 3;
  push.due = due;
  auto pushed = ask(push_atom::value, push);
  auto pulled = pull(due);
  CAF_CHECK_EQUAL(first->asks.size(), 2u);
  CAF_CHECK(!pushed->answered);
  CAF_CHECK(!pulled->answered);
  // The backup was promoted: both are asked there, with the deadlines they had.
  repoint(second_target);
  CAF_REQUIRE_EQUAL(second->asks.size(), 2u);
  CAF_CHECK_EQUAL(second->asks[0].what, "push");
  CAF_CHECK_EQUAL(second->asks[0].step, 3);
  CAF_CHECK(second->asks[0].due.at == due.at);
  CAF_CHECK_EQUAL(second->asks[1].what, "pull");
  CAF_CHECK(second->asks[1].due.at == due.at);
  for (const auto& got : {pushed, pulled}) {
    CAF_REQUIRE(got->answered);
    CAF_REQUIRE(!got->error);
    CAF_CHECK_EQUAL(got->value.updates, 7);
  }
  // A later request goes to the new target alone.
  auto later = pull(due);
  CAF_CHECK_EQUAL(first->asks.size(), 2u);
  CAF_CHECK_EQUAL(second->asks.size(), 3u);
  CAF_REQUIRE(!later->error);
  CAF_CHECK_EQUAL(later->value.updates, 7);
}

CAF_TEST(push_relay_holds_a_request_to_a_target_that_has_ended) {
  caf::anon_send_exit(first_target, caf::exit_reason::kill);
  consume_messages();
  auto pulled = pull(deadline::after(1min));
  CAF_CHECK(!pulled->answered);
  repoint(second_target);
  CAF_CHECK_EQUAL(second->asks.size(), 1u);
  CAF_REQUIRE(pulled->answered);
  CAF_REQUIRE(!pulled->error);
  CAF_CHECK_EQUAL(pulled->value.updates, 7);
}

CAF_TEST(push_relay_fails_a_held_request_whose_deadline_passed_before_it_was_repointed) {
  first->failure = make_error(errc::peer_down, "the channel to shard 0 ended");
  auto pulled = pull(deadline{deadline::clock::now() - 1ms});
  CAF_CHECK(!pulled->answered);
  repoint(second_target);
  CAF_CHECK(second->asks.empty()); // nobody is asked for an answer that nobody waits for
  CAF_REQUIRE(pulled->answered);
  CAF_REQUIRE(pulled->error); // troupe_code reads no empty error
  CAF_CHECK(troupe_code(pulled->error) == errc::timeout);
  CAF_CHECK(contains(error_text(pulled->error),
                     "shard 0: its process was lost and no backup took its place"));
}

CAF_TEST(push_relay_asks_the_new_target_when_the_old_one_fails_after_the_repointing) {
  first->silent = true;
  const auto due = deadline::after(1min);
  auto pulled = pull(due);
  CAF_REQUIRE_EQUAL(first->unanswered.size(), 1u);
  repoint(second_target);
  CAF_CHECK(second->asks.empty()); // nothing was held yet
  // The old target's channel ends now: the request goes to where the shard lives at once.
  self->send(first_target, fail_held_atom::value,
             make_error(errc::peer_down, "the channel to shard 0 ended"));
  consume_messages();
  CAF_REQUIRE_EQUAL(second->asks.size(), 1u);
  CAF_CHECK(second->asks[0].due.at == due.at);
  CAF_REQUIRE(pulled->answered);
  CAF_REQUIRE(!pulled->error);
  CAF_CHECK_EQUAL(pulled->value.updates, 7);
}

CAF_TEST_FIXTURE_SCOPE_END()
