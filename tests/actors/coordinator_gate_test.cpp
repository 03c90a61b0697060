// The coordinator's gate between epochs (coordinator_options::between_epochs), message by
// message on CAF's deterministic test coordinator (caf/test/dsl.hpp): stand-in computes answer
// at once, a stand-in gate answers only when the test says, so "nothing happened before the
// gate answered" is a checked fact, not a matter of timing. ctest runs each case alone.
#define CAF_SUITE coordinator_gate
#define CAF_TEST_UNIT_TEST_IMPL

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <memory>
#include <string>
#include <vector>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/coordinator_actor.hpp>

using namespace troupe;

namespace {

struct compute_probe {
  std::vector<std::int64_t> trained, validated;
};

// A compute that answers every phase at once.
caf::behavior prompt_compute(caf::event_based_actor*, std::shared_ptr<compute_probe> probe) {
  phase_report part;
  part.samples = 10;
  part.correct = 5;
  part.loss_sum = 3;
  return {
    [=](train_atom, std::int64_t epoch, deadline) {
      probe->trained.push_back(epoch);
      auto p = part;
      p.epoch = epoch;
      return p;
    },
    [=](validate_atom, std::int64_t epoch, deadline) {
      probe->validated.push_back(epoch);
      auto p = part;
      p.epoch = epoch;
      p.validation = true;
      return p;
    },
    [=](end_epoch_atom, std::int64_t) {},
  };
}

using open_atom = caf::atom_constant<caf::atom("testopen")>;

struct gate_probe {
  std::vector<std::int64_t> asked;
  caf::response_promise pending;
};

// A gate that holds each question until the test opens it: (open_atom, answer) answers,
// (open_atom, error) fails the question.
caf::behavior held_gate(caf::event_based_actor* self, std::shared_ptr<gate_probe> probe) {
  return {
    [=](epoch_done_atom, std::int64_t epoch, deadline) {
      probe->asked.push_back(epoch);
      probe->pending = self->make_response_promise();
    },
    [=](open_atom, after_gate answer) { probe->pending.deliver(answer); },
    [=](open_atom, caf::error& err) { probe->pending.deliver(std::move(err)); },
  };
}

// A checkpoint that saves at once, recording which epochs (epochs done) it saved.
checkpoint_actor::behavior_type
recording_checkpoint(checkpoint_actor::pointer, std::shared_ptr<std::vector<std::int64_t>> saved) {
  return {
    [=](save_atom, std::int64_t epochs_done) {
      saved->push_back(epochs_done);
      return std::string("run-") + std::to_string(epochs_done);
    },
    [=](restore_atom) { return true; },
  };
}

struct metrics_probe {
  std::vector<phase_report> reports;
};

metrics_sink_actor::behavior_type counting_metrics(metrics_sink_actor::pointer,
                                                   std::shared_ptr<metrics_probe> probe) {
  return {
    [=](const batch_report&) {},
    [=](const phase_report& r) { probe->reports.push_back(r); },
    [=](flush_atom) { return true; },
  };
}

struct outcome {
  bool answered = false;
  std::size_t phases = 0;
  caf::error error;
};

caf::behavior host(caf::event_based_actor* self, coordinator_actor coordinator,
                   std::shared_ptr<outcome> out) {
  self->request(coordinator, caf::infinite, run_atom::value)
    .then(
      [=](training_result& r) {
        out->answered = true;
        out->phases = r.phases.size();
      },
      [=](caf::error& err) {
        out->answered = true;
        out->error = std::move(err);
      });
  return {[](const std::string&) {}};
}

struct gate_fixture : test_coordinator_fixture<> {
  std::shared_ptr<compute_probe> compute = std::make_shared<compute_probe>();
  std::shared_ptr<gate_probe> gate = std::make_shared<gate_probe>();
  std::shared_ptr<metrics_probe> metrics = std::make_shared<metrics_probe>();
  std::shared_ptr<outcome> result = std::make_shared<outcome>();
  caf::actor gate_actor;
  std::shared_ptr<std::vector<std::int64_t>> saved = std::make_shared<std::vector<std::int64_t>>();
  coordinator_options options;
  std::vector<caf::actor> spawned;

  ~gate_fixture() override {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::kill);
  }

  // Runs `epochs` epochs of one compute, validating after each, through the held gate.
  void start(std::int64_t epochs) {
    auto c = sys.spawn(prompt_compute, compute);
    gate_actor = sys.spawn(held_gate, gate);
    auto m = sys.spawn(counting_metrics, metrics);
    options.epochs = epochs;
    options.between_epochs = caf::actor_cast<epoch_gate_actor>(gate_actor);
    if (options.save_period > 0) {
      auto checkpoint = sys.spawn(recording_checkpoint, saved);
      options.checkpoint = checkpoint;
      spawned.push_back(caf::actor_cast<caf::actor>(checkpoint));
    }
    auto coordinator = spawn_coordinator(sys, {caf::actor_cast<compute_actor>(c)}, m, options);
    spawned = {c, gate_actor, caf::actor_cast<caf::actor>(m),
               caf::actor_cast<caf::actor>(coordinator)};
    spawned.push_back(sys.spawn(host, coordinator, result));
    consume_messages();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(coordinator_gate_tests, gate_fixture)

// After each epoch's training the coordinator asks the gate, and neither records the epoch's
// report nor starts the next phase (validation, the next epoch) until it has answered.
CAF_TEST(coordinator_waits_for_the_gate) {
  start(2);
  CAF_CHECK_EQUAL(compute->trained, (std::vector<std::int64_t>{0}));
  CAF_REQUIRE_EQUAL(gate->asked, (std::vector<std::int64_t>{0}));
  CAF_CHECK(compute->validated.empty());
  CAF_CHECK(metrics->reports.empty()); // epoch 0's report waits for the gate too
  caf::anon_send(gate_actor, open_atom::value, after_gate::go_on);
  consume_messages();
  CAF_REQUIRE_EQUAL(metrics->reports.size(),
                    2u); // epoch 0 trained and validated; epoch 1 trained: held
  CAF_CHECK(!metrics->reports[0].validation);
  CAF_CHECK(metrics->reports[1].validation);
  CAF_CHECK_EQUAL(compute->validated, (std::vector<std::int64_t>{0}));
  CAF_CHECK_EQUAL(gate->asked, (std::vector<std::int64_t>{0, 1}));
  CAF_CHECK(!result->answered);
  caf::anon_send(gate_actor, open_atom::value, after_gate::go_on);
  consume_messages();
  CAF_REQUIRE(result->answered);
  CAF_CHECK(!result->error);
  CAF_CHECK_EQUAL(result->phases, 4u);
}

// A gate that fails its question ends the run, which names the gate and the epoch.
CAF_TEST(coordinator_fails_when_the_gate_fails) {
  start(2);
  CAF_REQUIRE_EQUAL(gate->asked.size(), 1u);
  caf::anon_send(gate_actor, open_atom::value, make_error(errc::timeout, "scheduler: no traffic"));
  consume_messages();
  CAF_REQUIRE(result->answered);
  CAF_REQUIRE(result->error);
  CAF_CHECK(troupe_code(result->error) == errc::timeout);
  CAF_CHECK_EQUAL(
    error_text(result->error),
    "coordinator: the gate between epochs failed after epoch 0: scheduler: no traffic");
  CAF_CHECK(compute->validated.empty());
  CAF_CHECK_EQUAL(compute->trained.size(), 1u);
}

// A gate that never answers ends the run at the coordinator's deadline (the step timeout and
// the grace), naming it.
CAF_TEST(coordinator_gives_up_on_a_silent_gate) {
  options.timeouts.step = std::chrono::seconds(5);
  start(2);
  CAF_REQUIRE_EQUAL(gate->asked.size(), 1u);
  advance_time(options.timeouts.step + answer_grace);
  consume_messages();
  CAF_REQUIRE(result->answered);
  CAF_CHECK(troupe_code(result->error) == errc::timeout);
  CAF_CHECK(error_text(result->error).find("the gate between epochs failed after epoch 0")
            != std::string::npos);
}

// A gate that answers after the coordinator gave up on it changes nothing: the run failed
// naming the gate, and no phase starts, no report is recorded, no other epoch is asked.
CAF_TEST(coordinator_ignores_a_gate_answer_after_giving_up) {
  options.timeouts.step = std::chrono::seconds(5);
  start(2);
  CAF_REQUIRE_EQUAL(gate->asked.size(), 1u);
  advance_time(options.timeouts.step + answer_grace);
  consume_messages();
  CAF_REQUIRE(result->answered);
  CAF_CHECK(troupe_code(result->error) == errc::timeout);
  caf::anon_send(gate_actor, open_atom::value, after_gate::go_on);
  consume_messages();
  CAF_CHECK(compute->validated.empty());
  CAF_CHECK_EQUAL(compute->trained, (std::vector<std::int64_t>{0}));
  CAF_CHECK(metrics->reports.empty());
  CAF_CHECK_EQUAL(gate->asked.size(), 1u);
}

// A gate that makes an epoch the last (troupe ctl stop) ends the run after that epoch's
// validation, as a finished run: no later epoch is trained or asked.
CAF_TEST(coordinator_finishes_after_the_epoch_the_gate_makes_the_last) {
  options.validate_every = 2; // epoch 1 validates only as the last
  start(4);
  caf::anon_send(gate_actor, open_atom::value, after_gate::go_on);
  consume_messages();
  CAF_REQUIRE_EQUAL(gate->asked, (std::vector<std::int64_t>{0, 1}));
  CAF_CHECK(compute->validated.empty());
  caf::anon_send(gate_actor, open_atom::value, after_gate::last_epoch);
  consume_messages();
  CAF_REQUIRE(result->answered);
  CAF_CHECK(!result->error);
  CAF_CHECK_EQUAL(compute->trained, (std::vector<std::int64_t>{0, 1}));
  CAF_CHECK_EQUAL(compute->validated, (std::vector<std::int64_t>{1}));
  CAF_CHECK_EQUAL(gate->asked, (std::vector<std::int64_t>{0, 1}));
  CAF_CHECK_EQUAL(result->phases, 3u); // 2 trainings, 1 validation
}

// A gate that asks an epoch to be saved (troupe ctl checkpoint) has it saved after its
// validation although none was due; the run goes on, and saves the last epoch as planned.
CAF_TEST(coordinator_saves_the_epoch_the_gate_asks_to_save) {
  options.save_period = 10; // no save due before the last
  start(3);
  caf::anon_send(gate_actor, open_atom::value, after_gate::save_epoch);
  consume_messages();
  CAF_CHECK_EQUAL(*saved, (std::vector<std::int64_t>{1})); // after epoch 0: 1 epoch done
  CAF_REQUIRE_EQUAL(gate->asked, (std::vector<std::int64_t>{0, 1}));
  caf::anon_send(gate_actor, open_atom::value, after_gate::go_on);
  consume_messages();
  CAF_CHECK_EQUAL(*saved, (std::vector<std::int64_t>{1})); // epoch 1: nothing asked, none due
  caf::anon_send(gate_actor, open_atom::value, after_gate::go_on);
  consume_messages();
  CAF_REQUIRE(result->answered);
  CAF_CHECK(!result->error);
  CAF_CHECK_EQUAL(*saved, (std::vector<std::int64_t>{1, 3})); // and the last, as planned
}

CAF_TEST_FIXTURE_SCOPE_END()
