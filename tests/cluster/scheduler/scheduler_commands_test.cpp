// troupe ctl's verbs as the scheduler node runs them, message by message (scheduler_fixture.hpp):
// status answers the status document it was given, or is refused without one; stop makes the
// epoch in training the last (the gate after it says so); drain asks the
// named worker to leave (its leave then granted as a SIGTERM's is), or is refused naming why
// (no adoption, an unknown worker, the wrong arguments) with nothing sent; an unknown verb is
// refused naming the verbs.
//
// Built on CAF's own test framework (its test coordinator needs it); ctest runs each case
// alone (tests/cluster/CMakeLists.txt).
#define CAF_SUITE node_control

#include "tests/cluster/scheduler_fixture.hpp"

namespace {

struct command_answer {
  bool answered = false;
  command_result_message result;
  std::string error;
  errc code = errc::internal;
};

caf::behavior ask_command(caf::event_based_actor* self, run_control_actor scheduler,
                          command_message c, std::shared_ptr<command_answer> out) {
  self
    ->request(scheduler, caf::infinite, command_atom::value, std::move(c),
              deadline::after(std::chrono::hours(1)))
    .then(
      [=](command_result_message& r) {
        out->answered = true;
        out->result = std::move(r);
      },
      [=](caf::error& err) {
        out->answered = true;
        out->code = troupe_code(err);
        out->error = err.category() == error_category ? error_text(err) : std::string("caf error");
      });
  return {};
}

struct commanding : scheduler_fixture {
  std::shared_ptr<command_answer> command(const std::string& verb,
                                          std::vector<std::string> args = {}) {
    auto out = std::make_shared<command_answer>();
    spawned.push_back(
      sys.spawn(ask_command, run_control_actor{node}, command_message{0, verb, args, 0}, out));
    settle();
    return out;
  }
  // The gate after epoch `epoch`'s training, every member's traffic answered.
  std::shared_ptr<gate_answer> answered_gate(std::int64_t epoch, const members& m) {
    auto gate = epoch_done(epoch);
    traffic(m.server, epoch);
    traffic(m.w0, epoch);
    traffic(m.w1, epoch);
    return gate;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(command_tests, commanding)

CAF_TEST(ctl_status_answers_the_schedulers_status_document) {
  options.status_document = [] { return std::string(R"({"schema":1,"state":"training"})"); };
  start(1, 2);
  auto a = command("status");
  CAF_REQUIRE(a->answered);
  CAF_CHECK_EQUAL(a->error, "");
  CAF_CHECK_EQUAL(a->result.json, R"({"schema":1,"state":"training"})");
  auto extra = command("status", {"now"});
  CAF_REQUIRE(extra->answered);
  CAF_CHECK(contains(extra->error, "status takes no arguments (it was given 1)"));
}

CAF_TEST(ctl_status_without_a_status_is_refused) {
  start(1, 2);
  auto a = command("status");
  CAF_REQUIRE(a->answered);
  CAF_CHECK(a->code == errc::bad_request);
  CAF_CHECK(contains(a->error, "this scheduler keeps no status"));
}

// The named worker is asked to leave; its leave (as on SIGTERM) is then granted, and the run
// never hears of a loss.
CAF_TEST(ctl_drain_asks_the_named_worker_to_leave_and_its_leave_is_granted) {
  start(1, 2, false, true);
  auto m = to_training();
  auto a = command("drain", {"worker_1"});
  CAF_REQUIRE(a->answered);
  CAF_CHECK_EQUAL(a->error, "");
  CAF_CHECK(contains(a->result.text, "asked worker 1 (pid 201 on 10.0.0.1) to leave"));
  CAF_REQUIRE_EQUAL(count_of<drain_message>(m.w1_sent), 1);
  CAF_CHECK_EQUAL(last_of<drain_message>(m.w1_sent)->reason, "troupe ctl drain");
  CAF_CHECK_EQUAL(count_of<drain_message>(m.w0_sent), 0);
  CAF_CHECK(logged("scheduler: troupe ctl asks worker 1 (pid 201 on 10.0.0.1) to leave"));
  caf::anon_send(node, leave_atom::value, m.w1, leave_message{"troupe ctl drain"});
  settle();
  CAF_REQUIRE_EQUAL(count_of<release_message>(m.w1_sent), 1);
  CAF_CHECK(last_of<release_message>(m.w1_sent)->granted);
  // The log's name for it works as well as the plan node's.
  auto again = command("drain", {"worker 0"});
  CAF_REQUIRE(again->answered);
  CAF_CHECK(contains(again->error, "no other worker is left to take its computes"));
  CAF_CHECK_EQUAL(count_of<drain_message>(m.w0_sent), 0);
  CAF_CHECK(!result->answered);
}

CAF_TEST(ctl_drain_is_refused_naming_why_and_nothing_is_sent) {
  start(1, 2);
  auto m = to_training();
  auto a = command("drain", {"worker_1"});
  CAF_REQUIRE(a->answered);
  CAF_CHECK(contains(a->error, "drain worker_1 refused: its computes move to other workers only "
                               "under on_worker_loss = adopt, and this run's is stop"));
  CAF_CHECK(logged("troupe ctl asked worker 1 (pid 201 on 10.0.0.1) to leave; refused: "));
  CAF_CHECK_EQUAL(count_of<drain_message>(m.w1_sent), 0);
  auto unknown = command("drain", {"worker_7"});
  CAF_REQUIRE(unknown->answered);
  CAF_CHECK(contains(unknown->error, "drain worker_7: no worker of this run is named so (its "
                                     "workers: worker_0, worker_1)"));
  auto bare = command("drain");
  CAF_REQUIRE(bare->answered);
  CAF_CHECK(contains(bare->error, "drain takes one worker, as NODE (it was given 0)"));
  auto server = command("drain", {"server_0"});
  CAF_REQUIRE(server->answered);
  CAF_CHECK(contains(server->error, "no worker of this run is named so"));
  CAF_CHECK_EQUAL(count_of<drain_message>(m.server_sent), 0);
  CAF_CHECK(!result->answered);
}

// The epoch in training becomes the run's last: the gate after it says so (the coordinator then
// validates it, saves it as the last where the run saves, and finishes); asked again, or before
// training, it is refused.
CAF_TEST(ctl_stop_makes_the_epoch_in_training_the_last) {
  start(1, 2);
  auto early = command("stop");
  CAF_REQUIRE(early->answered);
  CAF_CHECK(contains(early->error, "the run is not training"));
  auto m = to_training();
  auto first = answered_gate(0, m);
  CAF_REQUIRE(first->answered);
  CAF_CHECK(first->yes);
  CAF_CHECK(!first->last);
  auto a = command("stop");
  CAF_REQUIRE(a->answered);
  CAF_CHECK_EQUAL(a->error, "");
  CAF_CHECK(contains(a->result.text, "the run stops after this epoch's training"));
  CAF_CHECK(logged("scheduler: troupe ctl asks the run to stop after this epoch's training"));
  auto again = command("stop");
  CAF_REQUIRE(again->answered);
  CAF_CHECK(contains(again->error, "stop was asked already"));
  auto gate = answered_gate(1, m);
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(gate->yes);
  CAF_CHECK(gate->last);
  CAF_CHECK(logged("scheduler: stopping after epoch 1's training (step "
                   + std::to_string(2 * plan.steps_per_epoch) + "), as troupe ctl asked"));
  // Epoch 1's metrics line records the change (before the gate answered: before the line).
  CAF_REQUIRE(!metrics->annotations.empty());
  CAF_CHECK_EQUAL(metrics->annotations.front().first, "traffic"); // epoch 0's
  CAF_CHECK_EQUAL(std::count_if(metrics->annotations.begin(), metrics->annotations.end(),
                                [](const auto& a) { return a.first == "changes"; }),
                  1);
  CAF_CHECK(!result->answered); // the run finishes as the coordinator ends it
}

// Refused where the run saves no checkpoints: nothing would be saved.
CAF_TEST(ctl_checkpoint_without_a_prefix_is_refused) {
  start(1, 2);
  auto m = to_training();
  auto none = command("checkpoint");
  CAF_REQUIRE(none->answered);
  CAF_CHECK(contains(none->error, "this run saves no checkpoints (start it with --model-prefix"));
  CAF_CHECK(!result->answered);
}

// The epoch in training is saved although no save is due: the gate after it says so, once;
// refused while one is asked already.
CAF_TEST(ctl_checkpoint_with_a_prefix_saves_once) {
  setup_output.checkpoint.prefix = "runs/m";
  start(1, 2);
  auto m = to_training();
  auto a = command("checkpoint");
  CAF_REQUIRE(a->answered);
  CAF_CHECK_EQUAL(a->error, "");
  CAF_CHECK(contains(a->result.text, "this epoch is saved after its training and validation"));
  CAF_CHECK(contains(a->result.text, "under runs/m; the run goes on"));
  auto again = command("checkpoint");
  CAF_REQUIRE(again->answered);
  CAF_CHECK(contains(again->error, "checkpoint was asked already"));
  auto gate = answered_gate(0, m);
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(gate->save);
  CAF_CHECK(!gate->last);
  CAF_CHECK(logged("scheduler: saving a checkpoint after epoch 0's training (step "
                   + std::to_string(plan.steps_per_epoch)
                   + "), as troupe ctl asked: epoch 0 is saved once validated"));
  auto next = answered_gate(1, m); // asked once: the next gate goes on
  CAF_REQUIRE(next->answered);
  CAF_CHECK(!next->save);
  CAF_CHECK(!next->last);
  CAF_CHECK(!result->answered);
}

CAF_TEST(ctl_unknown_verb_is_refused_naming_the_verbs) {
  start(1, 2);
  auto a = command("resize", {"4"});
  CAF_REQUIRE(a->answered);
  CAF_CHECK(contains(a->error, "no verb resize (troupe ctl runs status, drain, stop, checkpoint)"));
  CAF_CHECK(!result->answered);
}

CAF_TEST_FIXTURE_SCOPE_END()
