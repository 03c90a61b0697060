// A shard's backup across processes (cluster/remote/shard_backup_remote.cpp), message by
// message on CAF's deterministic test coordinator: the skeleton inside a real channel, the
// proxy over a fake one (remote_fixture.hpp). The backup is a fake that records the pushes it
// was passed, so each case checks what crossed the wire both ways.
#define CAF_SUITE remote

#include "tests/cluster/remote_fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace {

// What a fake backup was passed, and how it answers: with `updates`, with `failure` when that
// is set, or, while `silent` is set, never.
struct backup_probe {
  std::vector<gradient_push> pushes;
  std::int64_t updates = 12;
  caf::error failure;
  bool silent = false;
  std::vector<caf::typed_response_promise<std::int64_t>> unanswered;
};

shard_backup_actor::behavior_type fake_backup(shard_backup_actor::pointer self,
                                              std::shared_ptr<backup_probe> probe) {
  return {
    [=](replicate_atom, gradient_push& push) -> caf::result<std::int64_t> {
      probe->pushes.push_back(push);
      if (probe->silent) {
        probe->unanswered.push_back(self->make_response_promise<std::int64_t>());
        return probe->unanswered.back();
      }
      if (probe->failure)
        return probe->failure;
      return probe->updates;
    },
  };
}

// A push of step 4 to one key of 2 values, as four_shards() has every shard.
gradient_push applied_push() {
  gradient_push push;
  push.step = 4;
  push.epoch_position = 0.5;
  push.keys = {0};
  push.gradients = {tensor::from_values({2}, {0.25f, -0.5f})};
  push.source = 1;
  push.samples = 32;
  return push;
}

std::vector<float> values_of(const tensor& t) {
  return std::vector<float>(t.data(), t.data() + t.numel());
}

struct backup_skeleton_fixture : channel_fixture {
  std::shared_ptr<backup_probe> backup = std::make_shared<backup_probe>();
  shard_backup_actor backup_actor;

  // A silent backup's promises keep it alive: it is ended before the channel's fixture is.
  ~backup_skeleton_fixture() override {
    if (backup_actor)
      caf::anon_send_exit(backup_actor, caf::exit_reason::kill);
  }

  void serve_backup_of(std::uint32_t shard) {
    backup_actor = sys.spawn(fake_backup, backup);
    serving->set<remote_interface::shard_backup>(shard, backup_actor);
  }

  // Lines that say the backup refused a replicated push.
  std::size_t refusals_logged() const {
    return static_cast<std::size_t>(std::count_if(lines->begin(), lines->end(), [](auto& l) {
      return contains(l, "refused a replicated push");
    }));
  }
};

} // namespace

// ---------------------------------------------------------------------------------------------
// The skeleton, inside a real channel.

CAF_TEST_FIXTURE_SCOPE(shard_backup_skeleton_tests, backup_skeleton_fixture)

CAF_TEST(shard_backup_skeleton_passes_the_push_to_the_registered_backup_and_answers_its_count) {
  serve_backup_of(1);
  // The backup waits for the deadline the frame carried, made local: one minute from when the
  // frame arrived, so between one minute from before and one minute from after.
  const auto earliest = deadline::after(1min);
  arrive(replicate_message{{31, 1, applied_push(), 60000}});
  const auto latest = deadline::after(1min);
  CAF_REQUIRE_EQUAL(backup->pushes.size(), 1u);
  const auto& got = backup->pushes[0];
  CAF_CHECK_EQUAL(got.step, 4);
  CAF_CHECK_EQUAL(got.epoch_position, 0.5);
  CAF_CHECK_EQUAL(got.source, 1);
  CAF_CHECK_EQUAL(got.samples, 32);
  CAF_CHECK_EQUAL(got.keys, std::vector<std::size_t>{0});
  CAF_REQUIRE_EQUAL(got.gradients.size(), 1u);
  CAF_CHECK_EQUAL(values_of(got.gradients[0]), (std::vector<float>{0.25f, -0.5f}));
  CAF_CHECK(got.due.at >= earliest.at);
  CAF_CHECK(got.due.at <= latest.at);
  auto answer = written();
  CAF_REQUIRE(std::holds_alternative<replicated_message>(answer));
  CAF_CHECK_EQUAL(std::get<replicated_message>(answer).request, 31u);
  CAF_CHECK_EQUAL(std::get<replicated_message>(answer).updates, 12);
  CAF_CHECK_EQUAL(refusals_logged(), 0u);
}

CAF_TEST(shard_backup_skeleton_refuses_a_shard_it_holds_no_backup_of) {
  serve_backup_of(1);
  arrive(replicate_message{{32, 2, applied_push(), 60000}});
  auto refusal = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(refusal));
  CAF_CHECK_EQUAL(std::get<failure_message>(refusal).request, 32u);
  CAF_CHECK(std::get<failure_message>(refusal).code == errc::bad_request);
  CAF_CHECK(contains(std::get<failure_message>(refusal).text, "serves no shard backup 2"));
  CAF_CHECK(logged("shard backup 2, which this node does not serve"));
  CAF_CHECK(backup->pushes.empty());
  // The refusal is the request's alone: the channel stays, and shard 1's backup still serves.
  arrive(replicate_message{{33, 1, applied_push(), 60000}});
  auto answer = written();
  CAF_REQUIRE(std::holds_alternative<replicated_message>(answer));
  CAF_CHECK_EQUAL(std::get<replicated_message>(answer).request, 33u);
  CAF_CHECK_EQUAL(backup->pushes.size(), 1u);
}

CAF_TEST(shard_backup_skeleton_logs_a_refused_push_and_passes_every_failure_back) {
  serve_backup_of(1);
  // A push the backup refuses is the primary's fault: logged here, naming the shard.
  backup->failure = make_error(errc::bad_request, "step 4 is ahead of the backup's step 2");
  arrive(replicate_message{{34, 1, applied_push(), 60000}});
  auto refused = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(refused));
  CAF_CHECK_EQUAL(std::get<failure_message>(refused).request, 34u);
  CAF_CHECK(std::get<failure_message>(refused).code == errc::bad_request);
  CAF_CHECK(contains(std::get<failure_message>(refused).text, "ahead of the backup's step 2"));
  CAF_CHECK(logged("the backup of shard 1 refused a replicated push: step 4 is ahead"));
  CAF_CHECK_EQUAL(refusals_logged(), 1u);
  // Any other failure is the backup's own: passed back as it is, and not logged as a refusal.
  backup->failure = make_error(errc::internal, "the backup's optimizer state is missing");
  arrive(replicate_message{{35, 1, applied_push(), 60000}});
  auto failed = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(failed));
  CAF_CHECK_EQUAL(std::get<failure_message>(failed).request, 35u);
  CAF_CHECK(std::get<failure_message>(failed).code == errc::internal);
  CAF_CHECK(contains(std::get<failure_message>(failed).text, "optimizer state is missing"));
  CAF_CHECK_EQUAL(refusals_logged(), 1u);
}

CAF_TEST(shard_backup_skeleton_fails_a_push_the_backup_does_not_answer_by_its_deadline) {
  serve_backup_of(1);
  backup->silent = true;
  arrive(replicate_message{{36, 1, applied_push(), 1000}});
  CAF_REQUIRE_EQUAL(backup->pushes.size(), 1u);
  // The skeleton's request to the backup times out on the coordinator's clock: the frame's
  // second and the grace an originator gives the hop that names what it waited for.
  advance_time(1s + answer_grace + 1ms);
  consume_messages();
  auto timed_out = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(timed_out));
  CAF_CHECK_EQUAL(std::get<failure_message>(timed_out).request, 36u);
  CAF_CHECK(std::get<failure_message>(timed_out).code == errc::timeout);
  CAF_CHECK(contains(std::get<failure_message>(timed_out).text,
                     "the backup of shard 1 on worker 0 did not answer by its deadline"));
  CAF_CHECK_EQUAL(refusals_logged(), 0u);
}

CAF_TEST(replicate_to_a_shard_outside_the_plan_ends_the_channel_before_a_backup_is_asked) {
  serve_backup_of(1);
  arrive(replicate_message{{37, 9, applied_push(), 60000}});
  auto goodbye = written();
  CAF_REQUIRE(std::holds_alternative<shutdown_message>(goodbye));
  CAF_CHECK(contains(std::get<shutdown_message>(goodbye).reason,
                     "shard 9 is not a shard of the plan (4 shards)"));
  CAF_CHECK(backup->pushes.empty());
}

CAF_TEST_FIXTURE_SCOPE_END()

// ---------------------------------------------------------------------------------------------
// The proxy, over a fake channel.

CAF_TEST_FIXTURE_SCOPE(shard_backup_proxy_tests, proxy_fixture)

CAF_TEST(shard_backup_proxy_forwards_the_push_and_delivers_the_backups_count) {
  auto proxy = spawn_shard_backup_proxy(sys, channel, 1);
  probe->answer = replicated_message{0, 12};
  auto push = applied_push();
  push.due = deadline::after(1min);
  auto replicated = self->request(proxy, caf::infinite, replicate_atom::value, push);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 1u);
  CAF_REQUIRE(std::holds_alternative<replicate_message>(probe->calls[0]));
  const auto& asked = std::get<replicate_message>(probe->calls[0]);
  CAF_CHECK_EQUAL(asked.shard, 1u);
  CAF_CHECK_EQUAL(asked.push.step, 4);
  CAF_CHECK_EQUAL(asked.push.keys, std::vector<std::size_t>{0});
  CAF_REQUIRE_EQUAL(asked.push.gradients.size(), 1u);
  CAF_CHECK_EQUAL(values_of(asked.push.gradients[0]), (std::vector<float>{0.25f, -0.5f}));
  CAF_CHECK(probe->deadlines[0].at == push.due.at); // the pusher's deadline, no new clock
  bool answered = false;
  replicated.receive(
    [&](std::int64_t updates) {
      answered = true;
      CAF_CHECK_EQUAL(updates, 12);
    },
    [&](caf::error& err) { CAF_FAIL("replicate failed: " << text_of(err)); });
  CAF_CHECK(answered);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(shard_backup_proxy_refuses_an_answer_with_no_count) {
  auto proxy = spawn_shard_backup_proxy(sys, channel, 1);
  weight_set ws;
  ws.updates = 12;
  probe->answer = weights_message{0, 1, ws};
  auto push = applied_push();
  push.due = deadline::after(1min);
  auto replicated = self->request(proxy, caf::infinite, replicate_atom::value, push);
  consume_messages();
  CAF_CHECK_EQUAL(probe->calls.size(), 1u);
  bool refused = false;
  replicated.receive([&](std::int64_t) { CAF_FAIL("weights were taken as the backup's count"); },
                     [&](caf::error& err) {
                       refused = true;
                       CAF_CHECK(troupe_code(err) == errc::bad_request);
                       CAF_CHECK(contains(text_of(err), "answered with no count"));
                     });
  CAF_CHECK(refused);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(shard_backup_proxy_delivers_the_channels_failure) {
  auto proxy = spawn_shard_backup_proxy(sys, channel, 1);
  probe->failure = make_error(errc::bad_request, "step 4 is ahead of the backup's step 2");
  auto push = applied_push();
  push.due = deadline::after(1min);
  auto replicated = self->request(proxy, caf::infinite, replicate_atom::value, push);
  consume_messages();
  CAF_CHECK_EQUAL(probe->calls.size(), 1u);
  bool failed = false;
  replicated.receive([&](std::int64_t) { CAF_FAIL("a failed replicate was answered"); },
                     [&](caf::error& err) {
                       failed = true;
                       CAF_CHECK(troupe_code(err) == errc::bad_request);
                       CAF_CHECK(contains(text_of(err), "ahead of the backup's step 2"));
                     });
  CAF_CHECK(failed);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(shard_backup_proxy_fails_the_waiting_and_later_pushes_once_its_channel_ends) {
  auto proxy = spawn_shard_backup_proxy(sys, channel, 1);
  probe->hold = true;
  auto push = applied_push();
  push.due = deadline::after(1min);
  auto waiting = self->request(proxy, caf::infinite, replicate_atom::value, push);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->held.size(), 1u);
  // The channel ends without a reason of its own: the proxy names the backup it stood for.
  caf::anon_send_exit(channel, caf::exit_reason::kill);
  consume_messages();
  const auto expect_lost = [&](auto& asked) {
    bool failed = false;
    asked.receive([&](std::int64_t) { CAF_FAIL("a push over an ended channel was answered"); },
                  [&](caf::error& err) {
                    failed = true;
                    CAF_CHECK(troupe_code(err) == errc::peer_down);
                    CAF_CHECK(contains(text_of(err), "the channel to the backup of shard 1 ended"));
                  });
    CAF_CHECK(failed);
  };
  expect_lost(waiting);
  auto later = self->request(proxy, caf::infinite, replicate_atom::value, push);
  consume_messages();
  expect_lost(later);
  CAF_CHECK_EQUAL(probe->calls.size(), 1u); // the later one never reached the ended channel
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST_FIXTURE_SCOPE_END()
