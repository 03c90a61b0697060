// The compute stand-in (compute_stand_in, compute_actor.hpp; actors/compute_stand_in.cpp)
// message by message on CAF's deterministic test coordinator (caf/test/dsl.hpp): the clock moves
// only when the test says, so "no push before its timer" and "every push once the step's time
// is up" are checked facts. It answers the compute actor's whole protocol as the compute actor
// does: position, validation (at once, no samples), snapshot and restore between phases only, a
// phase asked again answered once, another refused, an epoch ended after the step in flight.
// A recording shard answers pushes and pulls; a recording loader shows it is never asked (no
// batch, so no forward pass and no activation). The gradients pushed have the model's shapes,
// are not constant, change with the step and equal what stand_in_gradients gives for (seed,
// worker, step, slot). The next step's forward waits, segment by segment, for the weights of
// the layers it runs (a shard that holds its answers shows it). ctest runs each case alone.
#define CAF_SUITE compute_stand_in
#define CAF_TEST_UNIT_TEST_IMPL

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/stand_in_gradients.hpp>
#include <troupe/actors/stand_in_timing.hpp>
#include <troupe/graph/zoo.hpp>

#include "tests/actors/recorded_answer.hpp"

using namespace troupe;

namespace {

struct shard_probe {
  std::vector<gradient_push> pushes;
  int pulls = 0;
  bool wrong_shape = false; // answer pushes with weights of the wrong shape
  bool hold = false;        // keep push answers until the test delivers them
  struct held_answer {
    std::size_t key;
    caf::typed_response_promise<weight_set> promise;
    weight_set weights;
  };
  std::vector<held_answer> held;
};

// A recording shard also takes (release_atom, key): it answers the held push of that key.
using release_atom = caf::atom_constant<caf::atom("release")>;
using recording_shard_actor = push_target_actor::extend<caf::reacts_to<release_atom, std::size_t>>;

// Answers a pull with every key's weights (the model's shapes, zeros) and a push with the
// pushed keys' weights; records the pushes.
recording_shard_actor::behavior_type recording_shard(recording_shard_actor::pointer self,
                                                     std::shared_ptr<shard_probe> probe,
                                                     std::vector<shape_t> shapes) {
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      weight_set ws;
      ws.keys = push.keys;
      for (auto k : push.keys)
        ws.weights.push_back(tensor(probe->wrong_shape ? shape_t{1, 2, 3} : shapes[k]));
      const auto key = push.keys.front();
      probe->pushes.push_back(std::move(push));
      if (!probe->hold)
        return ws;
      probe->held.push_back({key, self->make_response_promise<weight_set>(), std::move(ws)});
      return caf::delegated<weight_set>(); // the test delivers it (deliver_held)
    },
    [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
      return caf::make_error(caf::sec::unexpected_message);
    },
    [=](pull_atom, deadline) {
      ++probe->pulls;
      weight_set ws;
      for (std::size_t k = 0; k < shapes.size(); ++k) {
        ws.keys.push_back(k);
        ws.weights.push_back(tensor(shapes[k]));
      }
      return ws;
    },
    [=](release_atom, std::size_t key) {
      auto at = std::find_if(probe->held.begin(), probe->held.end(),
                             [&](const auto& h) { return h.key == key; });
      if (at == probe->held.end())
        return;
      at->promise.deliver(std::move(at->weights));
      probe->held.erase(at);
    },
  };
}

struct loader_probe {
  int asked = 0;
};

loader_actor::behavior_type recording_loader(loader_actor::pointer,
                                             std::shared_ptr<loader_probe> probe) {
  return {
    [=](epoch_atom, std::int64_t) { ++probe->asked; },
    [=](next_atom) -> caf::result<loader_item> {
      ++probe->asked;
      return make_error(errc::bad_request, "a stand-in asked for a batch");
    },
  };
}

struct metrics_probe {
  std::vector<batch_report> batches;
};

metrics_sink_actor::behavior_type recording_metrics(metrics_sink_actor::pointer,
                                                    std::shared_ptr<metrics_probe> probe) {
  return {
    [=](const batch_report& r) { probe->batches.push_back(r); },
    [=](const phase_report&) {},
    [=](flush_atom) { return true; },
  };
}

constexpr std::int64_t samples = 32;
constexpr std::uint64_t seed = 7;
constexpr int worker = 3;
const caf::timespan step_time = std::chrono::milliseconds(300);

struct stand_in_fixture : test_coordinator_fixture<> {
  std::shared_ptr<shard_probe> shard = std::make_shared<shard_probe>();
  std::shared_ptr<loader_probe> loader = std::make_shared<loader_probe>();
  std::shared_ptr<metrics_probe> metrics = std::make_shared<metrics_probe>();
  std::shared_ptr<test::recorded_answer<phase_report>> result =
    std::make_shared<test::recorded_answer<phase_report>>();
  std::vector<shape_t> shapes;
  std::size_t groups = 0;
  stand_in_timing timing; // the groups' shares of the step (stand_in_timing_test checks them)
  std::vector<caf::actor> spawned;
  caf::actor_clock::time_point begin = sched.clock().current_time;
  recording_shard_actor shard_actor;
  local_compute_actor compute;
  std::size_t buffers = 0; // the replica's buffers (batch-norm statistics)

  ~stand_in_fixture() override {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::kill);
  }

  // A ResNet-20 replica (CIFAR shapes), one key per parameter, one push group per key in
  // backward order (last parameter first); two steps per epoch. An actor asks it to train
  // epoch 0 (the answer goes to `result`).
  void start(bool overlap = true) {
    spawn_stand_in(overlap);
    result = test::ask_and_record<phase_report>(
      sys, compute, [this](caf::actor a) { spawned.push_back(a); }, train_atom::value,
      std::int64_t{0}, deadline{});
    consume_messages();
  }

  // The stand-in of start(), asked nothing yet.
  void spawn_stand_in(bool overlap = true) {
    model_spec spec{"resnet", 20, {3, 32, 32}, 10, 0};
    auto replica = build_model(spec);
    buffers = replica->buffers().size();
    compute_wiring w;
    w.rank = worker;
    shard_route route;
    route.source_index = worker;
    for (std::size_t slot = 0; slot < replica->parameters().size(); ++slot) {
      const auto& value = replica->parameters()[slot]->value;
      shapes.push_back(value.shape());
      route.keys.push_back(key_slice{slot, 0, value.numel(), true});
    }
    groups = shapes.size();
    for (std::size_t k = groups; k-- > 0;)
      w.groups.push_back(push_group{0, {k}, shape_numel(shapes[k])});
    timing = stand_in_timing(replica->forward_work_by_slot(), {route.keys}, w.groups);
    auto s = sys.spawn(recording_shard, shard, shapes);
    shard_actor = s;
    route.shard = caf::actor_cast<push_target_actor>(s);
    w.shards = {route};
    auto l = sys.spawn(recording_loader, loader);
    w.train_loader = w.validation_loader = l;
    auto m = sys.spawn(recording_metrics, metrics);
    w.metrics = m;
    w.batches_per_epoch = 2;
    w.overlap = overlap;
    compute_spawn_options options;
    options.detached = false; // on the test coordinator
    options.stand_in = compute_stand_in{step_time, samples, seed, nullptr};
    compute = spawn_compute(sys, std::move(replica), w, options);
    spawned = {caf::actor_cast<caf::actor>(s), caf::actor_cast<caf::actor>(l),
               caf::actor_cast<caf::actor>(m), caf::actor_cast<caf::actor>(compute)};
    consume_messages();
  }

  // Asks the stand-in `message` from an actor of its own and runs what that sets off, the
  // clock standing still; the answer is in the result once it came.
  template <class Answer, class... Ts>
  std::shared_ptr<test::recorded_answer<Answer>> ask(Ts... message) {
    auto out = test::ask_and_record<Answer>(
      sys, compute, [this](caf::actor a) { spawned.push_back(a); }, message...);
    consume_messages();
    return out;
  }

  // Runs every timer due up to `t` after the fixture started, each at its own time (timers
  // that timers set included: the forward's segments chain), then sets the clock to `t`.
  void run_until(caf::timespan t) {
    auto& clock = sched.clock();
    const auto target = begin + t;
    consume_messages();
    while (clock.has_pending_timeout() && clock.schedule().begin()->first <= target) {
      sched.trigger_timeout();
      consume_messages();
    }
    if (clock.current_time < target)
      sched.advance_time(target - clock.current_time);
    consume_messages();
  }

  // Answers the held push of `key` (the shard holds them: shard_probe::hold).
  void deliver_held(std::size_t key) {
    const auto before = shard->held.size();
    caf::anon_send(shard_actor, release_atom::value, key);
    consume_messages();
    CAF_REQUIRE_EQUAL(shard->held.size() + 1, before);
  }

  // When group g (0-based, in push order) of a step is due, from the step's start.
  caf::timespan due(std::size_t g) const {
    return step_time / 3 + timing.backward_due(step_time - step_time / 3, g);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(compute_stand_in_tests, stand_in_fixture)

// Each group leaves when its timer fires (backward's time spread by the groups' work), not
// before; the step's batch report comes with the last one; the next step's forward starts then
// (every answer is in at once here); two steps end the phase.
CAF_TEST(pushes_leave_on_their_timers_and_the_loader_is_never_asked) {
  start();
  CAF_REQUIRE_EQUAL(shard->pulls, 1); // the weights first
  CAF_CHECK_EQUAL(shard->pushes.size(), 0u);
  // groups due at the same time (a layer's parameters after its first carry no work of their
  // own) leave together
  std::size_t own_times = 0;
  for (std::size_t g = 0; g < groups; ++g)
    own_times += g == 0 || due(g) > due(g - 1) ? 1 : 0;
  CAF_REQUIRE(own_times > groups / 2);
  for (std::int64_t step = 0; step < 2; ++step) {
    const auto before = shard->pushes.size();
    for (std::size_t g = 0; g < groups; ++g) {
      if (g == 0 || due(g) > due(g - 1)) {
        run_until(step * step_time + due(g) - caf::timespan{1}); // a nanosecond early: not yet
        CAF_REQUIRE_EQUAL(shard->pushes.size(), before + g);
      }
      run_until(step * step_time + due(g));
      CAF_REQUIRE(shard->pushes.size() >= before + g + 1);
      CAF_CHECK_EQUAL(shard->pushes[before + g].step, step);
      CAF_CHECK_EQUAL(shard->pushes[before + g].keys, (std::vector<std::size_t>{groups - 1 - g}));
      CAF_CHECK_EQUAL(metrics->batches.size(),
                      static_cast<std::size_t>(step + (g + 1 == groups ? 1 : 0)));
    }
    CAF_CHECK_EQUAL(due(groups - 1), step_time);
  }
  CAF_REQUIRE(result->answered);
  CAF_REQUIRE(!result->error);
  CAF_CHECK_EQUAL(result->value.samples, 2 * samples);
  CAF_CHECK_EQUAL(metrics->batches.back().samples, samples);
  CAF_CHECK_EQUAL(loader->asked, 0);
  CAF_CHECK_EQUAL(shard->pushes.size(), 2 * groups);
}

// A timer that fires late makes no later one late: with the clock moving in jumps of a
// millisecond (every timer fires up to that late, as on a busy host), step 1's first push
// leaves within a jump of when the device would push it. Timing each segment of the forward
// from when the last one's timer fired would add up to a jump per segment.
CAF_TEST(timers_that_fire_late_do_not_make_the_step_longer) {
  start();
  auto& clock = sched.clock();
  const auto jump = caf::timespan{std::chrono::milliseconds(1)};
  CAF_REQUIRE(groups > 20); // the forward has that many segments, most of them under a jump
  const auto target = begin + step_time + due(0);
  while (shard->pushes.size() <= groups && clock.current_time < begin + 3 * step_time) {
    sched.advance_time(jump);
    consume_messages();
  }
  CAF_REQUIRE(shard->pushes.size() > groups); // with step 1's first: groups due with it leave too
  CAF_CHECK_EQUAL(shard->pushes[groups].step, 1);
  CAF_CHECK_EQUAL(shard->pushes[groups].keys, (std::vector<std::size_t>{groups - 1}));
  CAF_CHECK(clock.current_time >= target);
  CAF_CHECK(clock.current_time <= target + jump);
}

// Without overlap nothing leaves before the step's time is up, and then every group at once.
CAF_TEST(without_overlap_every_push_leaves_when_the_step_time_is_up) {
  start(false);
  run_until(step_time - caf::timespan{1});
  CAF_CHECK_EQUAL(shard->pushes.size(), 0u);
  CAF_CHECK(metrics->batches.empty());
  run_until(step_time);
  CAF_CHECK_EQUAL(shard->pushes.size(), groups);
  CAF_CHECK_EQUAL(metrics->batches.size(), 1u);
  run_until(2 * step_time);
  CAF_REQUIRE(result->answered);
  CAF_CHECK(!result->error);
  CAF_CHECK_EQUAL(shard->pushes.size(), 2 * groups);
}

// The next step's forward waits for the first layers' weights (key 0, pushed last by backward):
// with every other answer in, nothing of step 1 leaves however long it waits; once key 0 is
// answered, the whole forward runs and step 1's first push leaves a step's due(0) later.
CAF_TEST(the_next_forward_waits_for_the_first_layers_weights) {
  shard->hold = true;
  start();
  run_until(step_time);
  CAF_REQUIRE_EQUAL(shard->pushes.size(), groups);
  CAF_REQUIRE_EQUAL(shard->held.size(), groups);
  for (std::size_t k = 1; k < groups; ++k)
    deliver_held(k);
  run_until(10 * step_time);
  CAF_CHECK_EQUAL(shard->pushes.size(), groups); // step 1's forward waits on key 0
  deliver_held(0);
  run_until(10 * step_time + due(0) - caf::timespan{1});
  CAF_CHECK_EQUAL(shard->pushes.size(), groups);
  run_until(10 * step_time + due(0));
  CAF_REQUIRE_EQUAL(shard->pushes.size(), groups + 1);
  CAF_CHECK_EQUAL(shard->pushes.back().step, 1);
  // the phase ends only once step 1's answers are in
  run_until(12 * step_time);
  CAF_CHECK_EQUAL(shard->pushes.size(), 2 * groups);
  CAF_CHECK(!result->answered);
  for (std::size_t k = 0; k < groups; ++k)
    deliver_held(k);
  CAF_REQUIRE(result->answered);
  CAF_REQUIRE(!result->error);
  CAF_CHECK_EQUAL(result->value.samples, 2 * samples);
}

// The forward runs the segments whose weights are in before waiting: with only key 1 (the
// second layers) missing, the first segment runs at once, and the rest of the forward, once
// key 1 is answered, takes what is left of the forward's time.
CAF_TEST(the_forward_runs_up_to_the_first_layer_still_missing) {
  shard->hold = true;
  start();
  run_until(step_time);
  CAF_REQUIRE_EQUAL(shard->held.size(), groups);
  for (std::size_t k = 0; k < groups; ++k)
    if (k != 1)
      deliver_held(k);
  run_until(10 * step_time);
  CAF_CHECK_EQUAL(shard->pushes.size(), groups);
  deliver_held(1);
  const auto forward = step_time / 3;
  // segments 1.. (segment 0 runs key 0's layers) and backward's first share
  const auto first_push =
    forward - timing.forward_end(forward, 0) + timing.backward_due(step_time - forward, 0);
  run_until(10 * step_time + first_push - caf::timespan{1});
  CAF_CHECK_EQUAL(shard->pushes.size(), groups);
  run_until(10 * step_time + first_push);
  CAF_REQUIRE_EQUAL(shard->pushes.size(), groups + 1);
  CAF_CHECK(first_push < due(0)); // the first segment ran while key 1 was missing
}

// Every pushed gradient has its parameter's shape, is not constant, equals what
// stand_in_gradients gives for (seed, worker, step, slot) (so a rerun pushes the same), starts
// 64-byte aligned as a real tensor does (so a frame references it rather than copying), and
// differs between the two steps.
CAF_TEST(gradients_have_the_model_shapes_and_reproducible_varying_values) {
  start();
  run_until(4 * step_time);
  CAF_REQUIRE(result->answered);
  CAF_REQUIRE_EQUAL(shard->pushes.size(), 2 * groups);
  stand_in_gradients expected(shapes, seed, worker);
  std::int64_t elements = 0, model_elements = 0;
  for (const auto& s : shapes)
    model_elements += shape_numel(s);
  for (const auto& push : shard->pushes) {
    CAF_REQUIRE_EQUAL(push.gradients.size(), 1u);
    CAF_CHECK_EQUAL(push.samples, samples);
    CAF_CHECK_EQUAL(push.source, worker);
    const auto slot = push.keys.front();
    const auto& g = push.gradients.front();
    CAF_REQUIRE(g.shape() == shapes[slot]);
    const auto want = expected.gradient(slot, push.step);
    CAF_REQUIRE(std::equal(g.data(), g.data() + g.numel(), want.data()));
    CAF_CHECK_EQUAL(reinterpret_cast<std::uintptr_t>(g.data()) % 64, 0u);
    if (g.numel() > 1) {
      const auto [lo, hi] = std::minmax_element(g.data(), g.data() + g.numel());
      CAF_CHECK(*lo < *hi);
    }
    if (push.step == 0)
      elements += g.numel();
  }
  CAF_CHECK_EQUAL(elements, model_elements); // one step pushes the whole model once
  const auto largest =
    std::max_element(shapes.begin(), shapes.end(),
                     [](const auto& a, const auto& b) { return shape_numel(a) < shape_numel(b); })
    - shapes.begin();
  const auto a = expected.gradient(static_cast<std::size_t>(largest), 0);
  const auto b = expected.gradient(static_cast<std::size_t>(largest), 1);
  CAF_CHECK(!std::equal(a.data(), a.data() + a.numel(), b.data()));
  // Aligned starts still vary: over 64 steps the largest parameter's view takes many of them.
  std::set<std::int64_t> starts;
  for (std::int64_t step = 0; step < 64; ++step) {
    const auto at = expected.offset(static_cast<std::size_t>(largest), step);
    CAF_CHECK_EQUAL(at % stand_in_gradients::alignment, 0);
    CAF_CHECK(at >= 0 && at < stand_in_gradients::window);
    starts.insert(at);
  }
  CAF_CHECK_GREATER(starts.size(), 48u);
  stand_in_gradients other_worker(shapes, seed, worker + 1);
  CAF_CHECK(expected.offset(static_cast<std::size_t>(largest), 0)
              != other_worker.offset(static_cast<std::size_t>(largest), 0)
            || expected.offset(0, 0) != other_worker.offset(0, 0));
}

// The weights a shard answers are installed as in training: an answer of the wrong shape
// fails the phase naming it (the install check of a real compute).
CAF_TEST(answered_weights_are_installed_and_checked) {
  shard->wrong_shape = true;
  start();
  run_until(step_time);
  CAF_REQUIRE(result->answered);
  CAF_REQUIRE(result->error);
  CAF_CHECK(troupe_code(result->error) == errc::bad_request);
  CAF_CHECK(error_text(result->error).find("compute: shard answered 6 elements for key")
            != std::string::npos);
}

// Between phases it answers as a compute actor does: the latest epoch asked (-1 before any), a
// validation at once with no samples and no loader asked, a snapshot of its replica's buffers
// that restore takes back, and a restore with fewer buffers than the model has refused.
CAF_TEST(between_phases_it_answers_position_validation_snapshot_and_restore) {
  spawn_stand_in();
  auto position = ask<std::int64_t>(position_atom::value);
  CAF_REQUIRE(position->answered);
  CAF_CHECK_EQUAL(position->value, -1);
  auto validated = ask<phase_report>(validate_atom::value, std::int64_t{0}, deadline{});
  CAF_REQUIRE(validated->answered);
  CAF_REQUIRE(!validated->error);
  CAF_CHECK(validated->value.validation);
  CAF_CHECK_EQUAL(validated->value.epoch, 0);
  CAF_CHECK_EQUAL(validated->value.samples, 0);
  CAF_CHECK_EQUAL(loader->asked, 0);
  CAF_CHECK_EQUAL(shard->pulls, 0); // nothing to evaluate, so no weights needed
  auto snapshot = ask<replica_state>(snapshot_atom::value);
  CAF_REQUIRE(snapshot->answered);
  CAF_REQUIRE(!snapshot->error);
  CAF_REQUIRE(buffers > 0);
  CAF_CHECK_EQUAL(snapshot->value.buffers.size(), buffers);
  auto restored = ask<bool>(restore_atom::value, snapshot->value);
  CAF_REQUIRE(restored->answered);
  CAF_CHECK(!restored->error);
  CAF_CHECK(restored->value);
  auto short_state = snapshot->value;
  short_state.buffers.pop_back();
  auto refused = ask<bool>(restore_atom::value, short_state);
  CAF_REQUIRE(refused->answered);
  CAF_CHECK(troupe_code(refused->error) == errc::bad_request);
  CAF_CHECK(error_text(refused->error).find("restore") != std::string::npos);
  auto trained = ask<phase_report>(train_atom::value, std::int64_t{0}, deadline{});
  run_until(2 * step_time);
  CAF_REQUIRE(trained->answered);
  CAF_REQUIRE(!trained->error);
  CAF_CHECK_EQUAL(trained->value.samples, 2 * samples);
  CAF_CHECK_EQUAL(ask<std::int64_t>(position_atom::value)->value, 0);
}

// While a phase runs, the same phase asked again is answered with it, once it ends, and asked
// once more afterwards with the same report at once (nothing pushed again); another phase,
// a snapshot and a restore are refused as a compute actor refuses them.
CAF_TEST(a_phase_asked_again_is_answered_once_and_the_rest_is_refused_while_it_runs) {
  spawn_stand_in();
  auto first = ask<phase_report>(train_atom::value, std::int64_t{0}, deadline{});
  run_until(step_time / 2);
  auto again = ask<phase_report>(train_atom::value, std::int64_t{0}, deadline{});
  CAF_CHECK(!first->answered);
  CAF_CHECK(!again->answered);
  auto other = ask<phase_report>(train_atom::value, std::int64_t{1}, deadline{});
  CAF_REQUIRE(other->answered);
  CAF_CHECK(troupe_code(other->error) == errc::bad_request);
  CAF_CHECK(error_text(other->error).find("a phase is already running") != std::string::npos);
  auto snapshot = ask<replica_state>(snapshot_atom::value);
  CAF_REQUIRE(snapshot->answered);
  CAF_CHECK(troupe_code(snapshot->error) == errc::bad_request);
  auto restored = ask<bool>(restore_atom::value, replica_state{});
  CAF_REQUIRE(restored->answered);
  CAF_CHECK(troupe_code(restored->error) == errc::bad_request);
  run_until(2 * step_time);
  CAF_REQUIRE(first->answered);
  CAF_REQUIRE(again->answered);
  CAF_REQUIRE(!first->error);
  CAF_REQUIRE(!again->error);
  CAF_CHECK_EQUAL(first->value.samples, 2 * samples);
  CAF_CHECK_EQUAL(again->value.samples, first->value.samples);
  CAF_CHECK_EQUAL(again->value.seconds, first->value.seconds);
  CAF_CHECK_EQUAL(shard->pushes.size(), 2 * groups);
  auto later = ask<phase_report>(train_atom::value, std::int64_t{0}, deadline{});
  CAF_REQUIRE(later->answered);
  CAF_CHECK_EQUAL(later->value.samples, first->value.samples);
  CAF_CHECK_EQUAL(later->value.seconds, first->value.seconds);
  run_until(4 * step_time);
  CAF_CHECK_EQUAL(shard->pushes.size(), 2 * groups);
}

// An epoch ended by the coordinator ends after the step in flight: its pushes leave, the
// phase is answered with that step's samples, and no step after it starts.
CAF_TEST(an_ended_epoch_stops_after_the_step_in_flight) {
  spawn_stand_in();
  auto trained = ask<phase_report>(train_atom::value, std::int64_t{0}, deadline{});
  run_until(step_time / 2);
  caf::anon_send(compute, end_epoch_atom::value, std::int64_t{0});
  run_until(4 * step_time);
  CAF_REQUIRE(trained->answered);
  CAF_REQUIRE(!trained->error);
  CAF_CHECK_EQUAL(trained->value.samples, samples);
  CAF_CHECK_EQUAL(shard->pushes.size(), groups);
  CAF_CHECK_EQUAL(metrics->batches.size(), 1u);
}

CAF_TEST_FIXTURE_SCOPE_END()
