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
  std::int64_t steps = 0; // the plan's steps per epoch, known before start
  void cluster_job_steps_known() {
    steps = plan_placement(cluster_job(1, 2), facts).steps_per_epoch;
  }
  std::shared_ptr<command_answer> command(const std::string& verb,
                                          std::vector<std::string> args = {}) {
    auto out = std::make_shared<command_answer>();
    spawned.push_back(
      sys.spawn(ask_command, run_control_actor{node}, command_message{0, verb, args, 0}, out));
    settle();
    return out;
  }
  // Joins a server and two workers on channels that answer requests (the server's takes shard
  // changes) and makes them ready: the session trains.
  members answering_training() {
    members m;
    m.server = holding(m.server_sent);
    m.w0 = holding(m.w0_sent);
    m.w1 = holding(m.w1_sent);
    to_training(m.server, m.server_sent, {m.w0, m.w1}, {m.w0_sent, m.w1_sent});
    return m;
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
  CAF_CHECK(logged("scheduler: after epoch 1's training (step "
                   + std::to_string(2 * plan.steps_per_epoch) + "), as troupe ctl asked"));
  CAF_CHECK(logged(": stopping: epoch 1 is the run's last"));
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
  CAF_CHECK(logged("scheduler: after epoch 0's training (step "
                   + std::to_string(plan.steps_per_epoch) + "), as troupe ctl asked"));
  CAF_CHECK(logged(": saving a checkpoint: epoch 0 is saved once validated"));
  auto next = answered_gate(1, m); // asked once: the next gate goes on
  CAF_REQUIRE(next->answered);
  CAF_CHECK(!next->save);
  CAF_CHECK(!next->last);
  CAF_CHECK(!result->answered);
}

// Asked once the gate after the epoch's training has passed (its validation runs), a verb's
// change comes at the next gate, and the answers say so.
CAF_TEST(ctl_verbs_asked_after_the_gate_say_the_next_epoch) {
  setup_output.checkpoint.prefix = "runs/m";
  setup_output.position = std::make_shared<run_position>();
  start(1, 2);
  auto m = answering_training();
  const auto answer = [&](const std::string& verb, std::vector<std::string> args = {}) {
    auto a = command(verb, std::move(args));
    CAF_REQUIRE(a->answered);
    CAF_CHECK_EQUAL(a->error, "");
    return a->result.text;
  };
  CAF_CHECK(contains(answer("checkpoint"), "this epoch is saved after its training"));
  auto gate = answered_gate(0, m); // saves epoch 0; its validation follows
  CAF_REQUIRE(gate->save);
  setup_output.position->validating = true; // as the metrics actor marks it once e's report is in
  CAF_CHECK(contains(answer("checkpoint"), "the next epoch is saved after its training"));
  CAF_CHECK(contains(answer("set", {"lr=0.01"}), "from the first step after the next epoch's"));
  CAF_CHECK(contains(answer("stop"), "the run stops after the next epoch's training"));
  CAF_CHECK(logged("troupe ctl asks the run to stop after the next epoch's training"));
  auto next = answered_gate(1, m);
  CAF_REQUIRE(next->answered);
  CAF_CHECK(next->last);
  CAF_CHECK_EQUAL(count_of<change_message>(m.server_sent), 1);
}

CAF_TEST(ctl_unknown_verb_is_refused_naming_the_verbs) {
  start(1, 2);
  auto a = command("resize", {"4"});
  CAF_REQUIRE(a->answered);
  CAF_CHECK(contains(
    a->error, "no verb resize (troupe ctl runs status, drain, set, balance, checkpoint, stop)"));
  CAF_CHECK(!result->answered);
}

// The change waits for the gate after the epoch in training; there every server's shards take
// it from that gate's step on, and only then does the gate answer; the epoch's metrics line
// records it with the step.
CAF_TEST(ctl_set_changes_every_servers_shards_at_the_next_gate) {
  start(1, 2);
  auto m = answering_training();
  auto a = command("set", {"lr=0.05"});
  CAF_REQUIRE(a->answered);
  CAF_CHECK_EQUAL(a->error, "");
  CAF_CHECK(contains(a->result.text, "optimizer.lr=0.05 from the first step after this epoch's"));
  CAF_CHECK_EQUAL(count_of<change_message>(m.server_sent), 0); // not before the gate
  // Asked again before the gate: the later value counts, once.
  auto again = command("set", {"optimizer.lr=0.02"});
  CAF_REQUIRE(again->answered);
  CAF_CHECK_EQUAL(again->error, "");
  auto gate = answered_gate(0, m);
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(gate->yes);
  CAF_CHECK(!gate->last);
  CAF_REQUIRE_EQUAL(count_of<change_message>(m.server_sent), 1);
  const auto change = last_of<change_message>(m.server_sent)->change;
  CAF_CHECK(change.setting == shard_setting::lr);
  CAF_CHECK_EQUAL(change.value, 0.02);
  CAF_CHECK_EQUAL(change.step, plan.steps_per_epoch);
  CAF_CHECK_EQUAL(count_of<change_message>(m.w0_sent), 0); // workers hold no shards
  CAF_CHECK(logged("scheduler: after epoch 0's training (step "
                   + std::to_string(plan.steps_per_epoch) + "), as troupe ctl asked"));
  CAF_CHECK(logged(": optimizer.lr=0.02 from now on in every server's shards"));
  const auto changes = std::find_if(metrics->annotations.begin(), metrics->annotations.end(),
                                    [](const auto& n) { return n.first == "changes"; });
  CAF_REQUIRE(changes != metrics->annotations.end());
  CAF_CHECK(contains(changes->second, R"("change":"set optimizer.lr=0.02")"));
  CAF_CHECK(contains(changes->second, R"("step":)" + std::to_string(plan.steps_per_epoch)));
  CAF_CHECK(contains(changes->second, R"("by":"troupe ctl")"));
  // Made once: the next gate sends nothing.
  auto next = answered_gate(1, m);
  CAF_REQUIRE(next->answered);
  CAF_CHECK_EQUAL(count_of<change_message>(m.server_sent), 1);
  CAF_CHECK(!result->answered);
}

// Checked against the key table before anything is asked: the key, its range, the number.
CAF_TEST(ctl_set_out_of_range_or_unknown_is_refused_naming_why) {
  start(1, 2);
  auto early = command("set", {"lr=0.05"});
  CAF_REQUIRE(early->answered);
  CAF_CHECK(contains(early->error, "the run is not training"));
  auto m = answering_training();
  const auto refusal = [&](const std::string& arg) {
    auto a = command("set", {arg});
    CAF_REQUIRE(a->answered);
    CAF_CHECK(a->code == errc::bad_request);
    return a->error;
  };
  CAF_CHECK(contains(refusal("lr=200"),
                     "set optimizer.lr=200: out of range: optimizer.lr must be above 0 and at "
                     "most 100"));
  CAF_CHECK(contains(refusal("optimizer.momentum=1"), "optimizer.momentum must be at least 0 and "
                                                      "below 1"));
  CAF_CHECK(contains(refusal("wd=-0.1"), "optimizer.wd must be between 0 and 1"));
  CAF_CHECK(contains(refusal("lr=fast"), "set optimizer.lr: 'fast' is not a number"));
  CAF_CHECK(contains(refusal("lr=nan"), "'nan' is not a number"));
  CAF_CHECK(contains(refusal("batch_size=64"),
                     "set batch_size: no key a running job can change (it changes optimizer.lr, "
                     "optimizer.momentum, optimizer.wd, topology.staleness)"));
  CAF_CHECK(contains(refusal("lr"), "set takes KEY=VALUE (it was given 'lr')"));
  auto two = command("set", {"lr=0.1", "wd=0"});
  CAF_REQUIRE(two->answered);
  CAF_CHECK(contains(two->error, "set takes one KEY=VALUE (it was given 2)"));
  auto gate = answered_gate(0, m);
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(gate->yes);
  CAF_CHECK_EQUAL(count_of<change_message>(m.server_sent), 0); // nothing refused is made
}

// A server that cannot take the change fails the run, naming it: some shards would run with
// the change and some without.
CAF_TEST(ctl_set_a_server_cannot_take_fails_the_gate_naming_it) {
  start(1, 2);
  auto m = answering_training();
  auto a = command("set", {"wd=0.001"});
  CAF_REQUIRE(a->answered);
  *down.at(m.server.address()) = true;
  auto gate = answered_gate(0, m);
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(!gate->yes);
  CAF_CHECK(contains(gate->error, "scheduler: server 0 (pid 100 on 10.0.0.1) did not take set "
                                  "optimizer.wd=0.001: "));
}

// --replay-changes: the recorded changes are asked at their steps, as troupe ctl would ask them,
// and recorded as the replay's.
CAF_TEST(replayed_changes_are_made_at_their_recorded_steps) {
  cluster_job_steps_known();
  options.replay_changes = {
    run_change{
      run_change_kind::set, {shard_setting::lr, 0.02, steps}, "set optimizer.lr=0.02", steps},
    run_change{run_change_kind::stop, {}, "stop", 2 * steps}};
  start(1, 2);
  auto m = answering_training();
  auto first = answered_gate(0, m);
  CAF_REQUIRE(first->answered);
  CAF_CHECK(first->yes);
  CAF_CHECK(!first->last);
  CAF_REQUIRE_EQUAL(count_of<change_message>(m.server_sent), 1);
  CAF_CHECK_EQUAL(last_of<change_message>(m.server_sent)->change.value, 0.02);
  CAF_CHECK(logged("as --replay-changes asked: optimizer.lr=0.02 from now on"));
  auto second = answered_gate(1, m);
  CAF_REQUIRE(second->answered);
  CAF_CHECK(second->last);
  CAF_CHECK(logged("as --replay-changes asked: stopping: epoch 1 is the run's last"));
}

// Recorded changes that fit no epoch of this run (here: past its end) are refused as training
// would start, and no session trains.
CAF_TEST(replayed_changes_of_another_run_are_refused_before_training) {
  cluster_job_steps_known();
  options.replay_changes = {
    run_change{run_change_kind::checkpoint, {}, "checkpoint", 3 * steps}}; // 2 epochs
  start(1, 2);
  auto m = to_training();
  CAF_CHECK(session->runs == 0); // no session trains
  lost(m.server, "");
  lost(m.w0, "");
  lost(m.w1, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "--replay-changes: 'checkpoint' took effect at step "
                                      + std::to_string(3 * steps) + ", past this run's last ("
                                      + std::to_string(2 * steps) + ")"));
}

// ctl balance: refused where ranks cannot move (no adoption), else the ranks are weighed once at
// the next gate, which says why nothing moved where nothing does; asked twice before it, refused.
CAF_TEST(ctl_balance_is_refused_without_adopt) {
  start(1, 2);
  answering_training();
  const auto a = command("balance");
  CAF_REQUIRE(a->answered);
  CAF_CHECK(contains(a->error, "balance moves compute ranks between worker processes as an "
                               "adoption does: it needs on_worker_loss = adopt, and this run's is "
                               "stop"));
  CAF_CHECK_EQUAL(a->code, errc::bad_request);
}

CAF_TEST(ctl_balance_weighs_the_ranks_once_at_the_next_gate) {
  epochs = 4;
  start(1, 2, false, true);
  auto m = answering_training();
  const auto a = command("balance");
  CAF_REQUIRE(a->answered);
  CAF_CHECK_EQUAL(a->error, "");
  CAF_CHECK(contains(a->result.text, "the ranks are weighed after this epoch's training"));
  CAF_CHECK(logged("scheduler: troupe ctl asks for a balance after this epoch's training"));
  const auto again = command("balance");
  CAF_CHECK(contains(again->error, "balance was asked already"));
  answered_gate(0, m);
  CAF_CHECK(logged("scheduler: balance asked by troupe ctl, after epoch 0's training: no move "
                   "(compute_0's time in this epoch is not known)"));
  answered_gate(1, m);
  CAF_CHECK(!logged("after epoch 1's training: no move"));
  CAF_CHECK_EQUAL(count_of<adopt_message>(m.w0_sent) + count_of<adopt_message>(m.w1_sent), 0);
  CAF_CHECK(!result->answered);
}

CAF_TEST_FIXTURE_SCOPE_END()
