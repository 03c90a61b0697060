// A whole single-process run through the actors on small synthetic data: it learns, it is
// deterministic, the number of shards does not change the result, and top-k counts reach the
// phase reports.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <algorithm>

#include "apps/bench/host_ticker.hpp"
#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/kernels/threading.hpp>

using namespace troupe;

namespace {

training_job small_job() {
  training_job o;
  o.model.network = "mlp";
  o.train_data.name = "synthetic";
  o.train_data.synthetic_shape = {1, 8, 8};
  o.train_data.synthetic_size = 512;
  o.train_data.synthetic_classes = 4;
  o.validation_data = o.train_data;
  o.validation_data.which = split::test;
  o.validation_data.synthetic_size = 768; // the test split is a sixth: 128
  o.train_batches.batch_size = 32;
  o.validation_batches.batch_size = 64;
  o.validation_batches.shuffle = false;
  o.optimizer.sgd = sgd_options{0.9f, 1e-4f, false};
  o.optimizer.schedule.policy = lr_policy::constant;
  o.optimizer.schedule.base_lr = 0.05f;
  o.epochs = 3;
  return o;
}

double accuracy(const phase_report& r) {
  return static_cast<double>(r.correct) / static_cast<double>(r.samples);
}

} // namespace

TEST_CASE("a run through the actors trains, reports every phase and repeats exactly") {
  set_compute_threads(2);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  auto first = run_training(sys, job);
  REQUIRE(first.phases.size() == 6); // train + validation per epoch
  for (std::size_t i = 0; i < first.phases.size(); ++i) {
    CHECK(first.phases[i].epoch == static_cast<std::int64_t>(i / 2));
    CHECK(first.phases[i].validation == (i % 2 == 1));
  }
  CHECK(first.phases[0].samples == 512);
  CHECK(first.phases[1].samples == 128);
  CHECK(first.phases[4].loss_sum / 512 < first.phases[0].loss_sum / 512);
  CHECK(accuracy(first.phases[5]) > 0.5); // 4 classes: chance is 0.25

  auto second = run_training(sys, job);
  for (std::size_t i = 0; i < first.phases.size(); ++i) {
    CHECK(second.phases[i].correct == first.phases[i].correct);
    CHECK(second.phases[i].loss_sum == first.phases[i].loss_sum);
  }

  job.shards = 3;
  auto sharded = run_training(sys, job);
  for (std::size_t i = 0; i < first.phases.size(); ++i)
    CHECK(sharded.phases[i].loss_sum == first.phases[i].loss_sum);
}

TEST_CASE("a run with missing data fails before any actor starts, naming the file") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.train_data.name = "fashion-mnist";
  job.train_data.dir = "/nonexistent/fmnist";
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("/nonexistent/fmnist"));
}

TEST_CASE("a run with an unknown network fails with the list of networks") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.model.network = "alexnet";
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("alexnet") && Catch::Contains("lenet"));
}

TEST_CASE("a failure inside a running actor ends the run with its message") {
  // Validation data with more classes than the model has logits: the compute actor's
  // evaluate throws on the first validation batch, after a full training epoch.
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.epochs = 1;
  job.validation_data.synthetic_classes = 10;
  CHECK_THROWS_WITH(run_training(sys, job),
                    Catch::Contains("compute: ") && Catch::Contains("label"));
}

TEST_CASE("validate_every 2 validates after epochs 2 and 4 and after the last one") {
  set_compute_threads(2);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.epochs = 5;
  job.validate_every = 2;
  auto r = run_training(sys, job);
  std::vector<std::string> kinds;
  for (const auto& p : r.phases)
    kinds.push_back((p.validation ? "V" : "T") + std::to_string(p.epoch));
  CHECK(kinds == std::vector<std::string>{"T0", "T1", "V1", "T2", "T3", "V3", "T4", "V4"});
  job.validate_every = 0;
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("validate_every must be at least 1"));
}

TEST_CASE("top-k reaches every phase report, merged over workers, and changes nothing else") {
  set_compute_threads(2);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.epochs = 2;
  job.topology.workers = 2; // the coordinator merges two workers' reports
  const auto plain = run_training(sys, job);
  job.top_k = 2; // of 4 classes
  const auto counted = run_training(sys, job);
  REQUIRE(counted.phases.size() == plain.phases.size());
  for (std::size_t i = 0; i < counted.phases.size(); ++i) {
    const auto& p = counted.phases[i];
    INFO("phase " << i);
    CHECK(p.top_k == 2);
    CHECK(p.top_k_correct >= p.correct); // the arg-max is always in the top 2
    CHECK(p.top_k_correct <= p.samples);
    CHECK(p.correct == plain.phases[i].correct);
    CHECK(p.loss_sum == plain.phases[i].loss_sum);
    CHECK(plain.phases[i].top_k == 0);
    CHECK(plain.phases[i].top_k_correct == 0);
  }
  // The first epoch's training starts from random weights: some of its misses are runners-up.
  CHECK(counted.phases[0].top_k_correct > counted.phases[0].correct);
  job.top_k = 4;
  for (const auto& p : run_training(sys, job).phases)
    CHECK(p.top_k_correct == p.samples);
  job.top_k = 5;
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("top_k 5 is above the 4 classes"));
  job.top_k = -1;
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("top_k must not be negative"));
}

// ---- the session as an actor a host embeds -------------------------------------------------

namespace {

using ask_atom = caf::atom_constant<caf::atom("ask")>;

// A host actor: asks the session to run from inside its own handler and answers its asker
// once the result is in. Nothing blocks: on a one-thread scheduler any wait would deadlock.
caf::behavior host(caf::event_based_actor* self, training_session_actor session) {
  return {
    [=](ask_atom) -> caf::result<training_result> {
      auto promise = self->make_response_promise<training_result>();
      self->request(session, std::chrono::minutes(5), run_atom::value)
        .then([=](training_result& r) mutable { promise.deliver(std::move(r)); },
              [=](caf::error& e) mutable { promise.deliver(e); });
      return promise;
    },
  };
}

struct sink_state {
  std::int64_t batches = 0, phases = 0, flushes = 0;
  static inline const char* name = "host_sink";
};

using counting_sink = metrics_sink_actor::extend<
  caf::replies_to<ask_atom>::with<std::int64_t, std::int64_t, std::int64_t>>;

counting_sink::behavior_type sink(counting_sink::stateful_pointer<sink_state> self) {
  return {
    [=](const batch_report&) { ++self->state.batches; },
    [=](const phase_report&) { ++self->state.phases; },
    [=](flush_atom) -> caf::result<bool> {
      ++self->state.flushes;
      return true;
    },
    [=](ask_atom) -> caf::result<std::int64_t, std::int64_t, std::int64_t> {
      return {self->state.batches, self->state.phases, self->state.flushes};
    },
  };
}

// A gradient tap: counts pushes and forwards them; `swallow` keeps them unanswered forever,
// `kill_after` kills the downstream shard once that many pushes went through.
struct tap_state {
  std::int64_t pushes = 0;
  std::vector<caf::typed_response_promise<weight_set>> swallowed;
  static inline const char* name = "host_tap";
};

using counting_tap = push_target_actor::extend<caf::replies_to<ask_atom>::with<std::int64_t>>;

counting_tap::behavior_type tap(counting_tap::stateful_pointer<tap_state> self,
                                push_target_actor downstream, bool swallow, int kill_after) {
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      if (++self->state.pushes == kill_after)
        self->send_exit(downstream, caf::exit_reason::kill);
      if (swallow) {
        self->state.swallowed.push_back(self->make_response_promise<weight_set>());
        return self->state.swallowed.back();
      }
      return self->delegate(downstream, push_atom::value, std::move(push));
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return self->delegate(downstream, pull_atom::value, due);
    },
    [=](rewind_atom, std::int64_t step, std::int32_t source,
        deadline due) -> caf::result<weight_set> {
      return self->delegate(downstream, rewind_atom::value, step, source, due);
    },
    [=](ask_atom) -> caf::result<std::int64_t> { return self->state.pushes; },
  };
}

caf::error run_and_fail(caf::actor_system& sys, const training_job& job, session_sinks sinks) {
  auto session = spawn_training_session(sys, job, std::move(sinks));
  caf::scoped_actor self{sys};
  caf::error failure;
  self->request(session, std::chrono::minutes(2), run_atom::value)
    .receive([&](training_result&) { FAIL("the run should have failed"); },
             [&](caf::error& e) { failure = e; });
  self->send_exit(session, caf::exit_reason::user_shutdown);
  return failure;
}

// Runs small_job with a tap in front of every shard route (swallowing pushes, or killing its
// shard at push `kill_after`), expects the run to fail, stops the taps, returns the error.
caf::error fail_through_taps(caf::actor_system& sys, session_sinks sinks, bool swallow,
                             int kill_after) {
  std::vector<counting_tap> taps;
  sinks.tap = [&](push_target_actor downstream, const tap_point&) -> push_target_actor {
    taps.push_back(sys.spawn(tap, downstream, swallow, kill_after));
    return taps.back();
  };
  auto err = run_and_fail(sys, small_job(), std::move(sinks));
  for (auto& t : taps)
    caf::anon_send_exit(t, caf::exit_reason::user_shutdown);
  return err;
}

} // namespace

TEST_CASE("a host actor on a one-thread scheduler runs a session without blocking") {
  caf::actor_system_config cfg; // the host's own settings, not Troupe's
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.epochs = 1;
  auto session = spawn_training_session(sys, job);
  auto h = sys.spawn(host, session);
  caf::scoped_actor self{sys};
  training_result result;
  self->request(h, std::chrono::minutes(5), ask_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& e) { FAIL(error_text(e)); });
  REQUIRE(result.phases.size() == 2);
  CHECK(result.phases[0].samples == 512);
  REQUIRE(result.final_weights.size() == result.parameter_names.size());
  REQUIRE_FALSE(result.final_weights.empty());
  self->send_exit(h, caf::exit_reason::user_shutdown);
  self->send_exit(session, caf::exit_reason::user_shutdown);
}

TEST_CASE("a host's metrics sink gets every report and its gradient tap every push") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto job = small_job();
  job.epochs = 2;
  job.shards = 2;
  session_sinks sinks;
  auto host_sink = sys.spawn(sink);
  sinks.metrics = host_sink;
  std::vector<counting_tap> taps;
  sinks.tap = [&](push_target_actor downstream, const tap_point&) -> push_target_actor {
    taps.push_back(sys.spawn(tap, downstream, false, 0));
    return taps.back();
  };
  auto session = spawn_training_session(sys, job, sinks);
  training_result plain;
  self->request(session, std::chrono::minutes(2), run_atom::value)
    .receive([&](training_result& r) { plain = std::move(r); },
             [&](caf::error& e) { FAIL(error_text(e)); });
  REQUIRE(plain.phases.size() == 4);
  self->request(host_sink, std::chrono::seconds(10), ask_atom::value)
    .receive(
      [&](std::int64_t batches, std::int64_t phases, std::int64_t flushes) {
        CHECK(batches == 2 * 512 / 32);
        CHECK(phases == 4);
        CHECK(flushes == 1);
      },
      [&](caf::error& e) { FAIL(error_text(e)); });
  REQUIRE(taps.size() == 2); // one worker, two shards
  std::int64_t pushes = 0;
  for (auto& t : taps)
    self->request(t, std::chrono::seconds(10), ask_atom::value)
      .receive([&](std::int64_t n) { pushes += n; }, [&](caf::error& e) { FAIL(error_text(e)); });
  CHECK(pushes >= 2 * 512 / 32 * 2); // every step pushes to both shards
  // The tap changes nothing: the same job without it ends with the same weights.
  auto untapped = run_training(sys, job);
  REQUIRE(untapped.final_weights.size() == plain.final_weights.size());
  for (std::size_t i = 0; i < plain.final_weights.size(); ++i) {
    REQUIRE(plain.final_weights[i].numel() == untapped.final_weights[i].numel());
    CHECK(std::equal(plain.final_weights[i].data(),
                     plain.final_weights[i].data() + plain.final_weights[i].numel(),
                     untapped.final_weights[i].data()));
  }
  for (auto& t : taps)
    self->send_exit(t, caf::exit_reason::user_shutdown);
  self->send_exit(host_sink, caf::exit_reason::user_shutdown);
  self->send_exit(session, caf::exit_reason::user_shutdown);
}

TEST_CASE("a shard that dies mid-run ends the session with peer_down, not a hang") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto err = fail_through_taps(sys, {}, false, 5);
  CHECK(troupe_code(err) == errc::peer_down);
  CHECK_THAT(error_text(err), Catch::Contains("terminated"));
}

TEST_CASE("a route that never answers ends the session with a timeout, not a hang") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  session_sinks sinks;
  sinks.timeouts.step = std::chrono::milliseconds(300);
  auto err = fail_through_taps(sys, sinks, true, 0);
  CHECK(troupe_code(err) == errc::timeout);
  CHECK_THAT(error_text(err), Catch::Contains("waiting for the weights of route 0"));
  CHECK_THAT(error_text(err), Catch::Contains("timeout 300 ms"));
}

TEST_CASE("bad data is reported by run as bad_data, naming the file") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.train_data.name = "fashion-mnist";
  job.train_data.dir = "/nonexistent/fmnist";
  auto err = run_and_fail(sys, job, {});
  CHECK(troupe_code(err) == errc::bad_data);
  CHECK_THAT(error_text(err), Catch::Contains("/nonexistent/fmnist"));
}

TEST_CASE("a host actor ticking every 2 ms keeps ticking while LeNet trains beside it") {
  // CAF's default scheduler settings: the host's, not Troupe's. A compute step is one long
  // handler; run on the shared workers it starved the host for 91 ms (3 workers) to 13 s (1).
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.model.network = "lenet";
  job.train_data.synthetic_shape = {1, 28, 28};
  job.validation_data.synthetic_shape = {1, 28, 28};
  job.epochs = 1;
  auto tick = sys.spawn(bench::host_ticker);
  auto result = run_training(sys, job);
  REQUIRE(result.phases.size() == 2);
  caf::scoped_actor self{sys};
  std::vector<double> gaps;
  self->request(tick, std::chrono::seconds(10), bench::stop_atom::value)
    .receive([&](std::vector<double>& g) { gaps = std::move(g); },
             [&](caf::error& e) { FAIL(error_text(e)); });
  REQUIRE(gaps.size() > 10); // it did tick during the run
  const double longest = *std::max_element(gaps.begin(), gaps.end());
  INFO("longest gap between 2 ms ticks: " << longest << " ms");
  CHECK(longest <= 1000.0); // a loose bound: starvation must never come back
  self->send_exit(tick, caf::exit_reason::user_shutdown);
}

TEST_CASE("an actor system renders troupe errors with their category") {
  local_node_config cfg; // registers the category, as a host can with add_error_category
  caf::actor_system sys{cfg};
  auto text = sys.render(make_error(errc::peer_down, "compute 0: shard_1 terminated"));
  CHECK(text == "troupe.peer_down: compute 0: shard_1 terminated");
  CHECK(troupe_code(make_error(errc::timeout, "x")) == errc::timeout);
  CHECK(troupe_code(caf::make_error(caf::sec::request_timeout)) == errc::timeout);
  CHECK(troupe_code(caf::make_error(caf::sec::request_receiver_down)) == errc::peer_down);
}
