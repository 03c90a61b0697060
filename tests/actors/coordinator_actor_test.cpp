// The coordinator's merge of the workers' epoch reports, driven by stand-in compute actors
// whose replies the test releases in a chosen order.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/coordinator_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/cluster/local_node.hpp>

using namespace troupe;

namespace {

using release_atom = caf::atom_constant<caf::atom("release")>;

struct held_reply_state {
  caf::response_promise pending;
  bool asked = false;
};

// Answers an epoch with `part`, but only when the test says (release_atom); the release is
// answered after the report went out, so the test fixes the order the coordinator sees them in.
caf::behavior held_reply(caf::stateful_actor<held_reply_state>* self, phase_report part) {
  return {
    [=](train_atom, std::int64_t epoch, deadline) {
      self->state.asked = true;
      self->state.pending = self->make_response_promise();
      (void)epoch;
    },
    [=](release_atom) -> caf::result<bool> {
      if (!self->state.asked)
        return false;
      self->state.pending.deliver(part);
      return true;
    },
    [=](end_epoch_atom, std::int64_t) {},
  };
}

phase_report part_with_loss(double loss_sum) {
  phase_report p;
  p.samples = 10;
  p.correct = 5;
  p.loss_sum = loss_sum;
  p.seconds = 1.0;
  return p;
}

// Runs one epoch over three stand-ins whose losses do not sum associatively in doubles and
// releases their replies in `order`; returns the merged train report.
phase_report run_epoch_released_in(const std::array<int, 3>& order) {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  const std::array<double, 3> losses{1e16, 1.0, -1e16};
  std::vector<caf::actor> stand_ins;
  std::vector<compute_actor> computes;
  for (double loss : losses) {
    stand_ins.push_back(sys.spawn(held_reply, part_with_loss(loss)));
    computes.push_back(caf::actor_cast<compute_actor>(stand_ins.back()));
  }
  coordinator_options o;
  o.epochs = 1;
  o.validate = false;
  auto coordinator = spawn_coordinator(sys, computes, metrics_sink_actor{}, o);
  self->send(coordinator, run_atom::value);
  for (int index : order) {
    bool released = false;
    while (!released) // the coordinator's request may not have arrived yet
      self->request(stand_ins[index], std::chrono::seconds(10), release_atom::value)
        .receive([&](bool ok) { released = ok; }, [&](caf::error& err) { FAIL(sys.render(err)); });
  }
  training_result result;
  self->receive([&](training_result& r) { result = std::move(r); },
                [&](caf::error& err) { FAIL(sys.render(err)); },
                caf::after(std::chrono::seconds(30)) >> [] { FAIL("no training_result"); });
  for (auto& a : stand_ins)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  REQUIRE(result.phases.size() == 1);
  return result.phases.front();
}

} // namespace

TEST_CASE("the coordinator's epoch report does not depend on the order replies arrive in") {
  // Summed as they arrive, 0,2,1 gives (1e16 - 1e16) + 1 = 1 and 0,1,2 gives 0.
  auto first = run_epoch_released_in({0, 2, 1});
  auto second = run_epoch_released_in({0, 1, 2});
  CHECK(first.samples == 30);
  CHECK(first.correct == 15);
  CHECK(second.samples == first.samples);
  CHECK(second.loss_sum == first.loss_sum);
}

namespace {

// Answers every epoch and validation at once with `part`.
caf::behavior prompt_reply(caf::event_based_actor*, phase_report part) {
  return {
    [=](train_atom, std::int64_t, deadline) { return part; },
    [=](validate_atom, std::int64_t, deadline) {
      auto p = part;
      p.validation = true;
      return p;
    },
    [=](end_epoch_atom, std::int64_t) {},
  };
}

} // namespace

TEST_CASE("every validator validates its part and the parts are merged") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::vector<compute_actor> computes;
  for (int samples : {10, 20, 40})
    computes.push_back(caf::actor_cast<compute_actor>(sys.spawn(prompt_reply, [&] {
      auto p = part_with_loss(samples);
      p.samples = samples;
      return p;
    }())));
  coordinator_options o;
  o.epochs = 1;
  o.validators = {0, 2}; // two parts of the validation set; compute 1 shares compute 0's
  auto coordinator = spawn_coordinator(sys, computes, metrics_sink_actor{}, o);
  training_result result;
  self->request(coordinator, std::chrono::seconds(30), run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { FAIL(sys.render(err)); });
  REQUIRE(result.phases.size() == 2);
  CHECK(result.phases[0].samples == 70); // training: every compute
  CHECK(result.phases[1].validation);
  CHECK(result.phases[1].samples == 50); // validation: computes 0 and 2
  CHECK(result.phases[1].loss_sum == 50.0);
  for (auto& c : computes)
    self->send_exit(c, caf::exit_reason::user_shutdown);

  o.validators = {3};
  CHECK_THROWS_WITH(spawn_coordinator(sys, computes, metrics_sink_actor{}, o),
                    Catch::Contains("validator 3 is not one of the 3 compute actors"));
  o.validators.clear();
  CHECK_THROWS_WITH(spawn_coordinator(sys, computes, metrics_sink_actor{}, o),
                    Catch::Contains("no compute actor to validate"));
}
