// The aggregator at the message level: sample-weighted means, push groups summed on their own,
// first-k-of-n with late pushes dropped and answered, and every malformed push rejected.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/local_node.hpp>

#include "tests/io/trace_events.hpp"

using namespace troupe;

namespace {

// Two keys at 0, plain SGD at lr 1: the weights after one update are minus the pushed mean.
push_target_actor plain_shard(caf::actor_system& sys) {
  shard_options o;
  o.optimizer.sgd = sgd_options{0, 0, false};
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = 1;
  return spawn_param_shard(
    sys, {shard_key{"a", tensor({2}), false}, shard_key{"b", tensor({1}), false}}, o);
}

caf::message push_of(int source, std::int64_t step, std::vector<std::size_t> keys,
                     std::vector<tensor> grads, std::int64_t samples = 1, deadline due = {}) {
  gradient_push p;
  p.due = due;
  p.source = source;
  p.step = step;
  p.keys = std::move(keys);
  p.gradients = std::move(grads);
  p.samples = samples;
  return caf::make_message(push_atom::value, std::move(p));
}

template <class Handle>
weight_set answer(caf::scoped_actor& self, const Handle& to_typed, caf::message msg) {
  auto to = caf::actor_cast<caf::actor>(to_typed);
  weight_set out;
  self->request(to, std::chrono::seconds(10), std::move(msg))
    .receive([&](weight_set& ws) { out = std::move(ws); },
             [&](caf::error& e) { FAIL(error_text(e)); });
  return out;
}

template <class Handle>
std::string refusal(caf::scoped_actor& self, const Handle& to_typed, caf::message msg) {
  auto to = caf::actor_cast<caf::actor>(to_typed);
  std::string out = "(answered)";
  self->request(to, std::chrono::seconds(10), std::move(msg))
    .receive([&](weight_set&) {}, [&](caf::error& e) { out = error_text(e); });
  return out;
}

struct fixture {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  push_target_actor shard = plain_shard(sys);
  ~fixture() { self->send_exit(shard, caf::exit_reason::user_shutdown); }
};

} // namespace

TEST_CASE("aggregator answers both sources with the sample-weighted mean applied once") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 0, true, 0});
  auto first = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                               push_of(1, 0, {0}, {tensor::from_values({2}, {4, 8})}, 3));
  auto second = answer(f.self, agg, push_of(0, 0, {0}, {tensor::from_values({2}, {8, 4})}, 1));
  // (1 * [8, 4] + 3 * [4, 8]) / 4 = [5, 7]; lr 1 from 0
  REQUIRE(second.keys == std::vector<std::size_t>{0});
  CHECK(second.weights[0].data()[0] == -5.0f);
  CHECK(second.weights[0].data()[1] == -7.0f);
  first.receive([&](weight_set& ws) { CHECK(ws.weights[0].data()[0] == -5.0f); },
                [&](caf::error& e) { FAIL(error_text(e)); });
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

TEST_CASE("aggregator sums each push group on its own, whatever order groups arrive in") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 0, true, 0});
  auto a0 = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                            push_of(0, 0, {0}, {tensor::from_values({2}, {1, 1})}));
  auto b1 = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                            push_of(1, 0, {1}, {tensor::from_values({1}, {4})}));
  auto b0 = answer(f.self, agg, push_of(0, 0, {1}, {tensor::from_values({1}, {2})}));
  CHECK(b0.keys == std::vector<std::size_t>{1});
  CHECK(b0.weights[0].data()[0] == -3.0f);
  auto a1 = answer(f.self, agg, push_of(1, 0, {0}, {tensor::from_values({2}, {3, 3})}));
  CHECK(a1.keys == std::vector<std::size_t>{0});
  CHECK(a1.weights[0].data()[0] == -2.0f);
  a0.receive([](weight_set&) {}, [&](caf::error& e) { FAIL(error_text(e)); });
  b1.receive([](weight_set&) {}, [&](caf::error& e) { FAIL(error_text(e)); });
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

TEST_CASE("aggregator with need 1 of 2 forwards the first push and drops the late one") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 1, true, 0});
  auto fast = answer(f.self, agg, push_of(0, 0, {0}, {tensor::from_values({2}, {1, 1})}));
  CHECK(fast.weights[0].data()[0] == -1.0f);
  // The straggler's step 0 arrives after it was forwarded: dropped, answered with the newest.
  auto late = answer(f.self, agg, push_of(1, 0, {0}, {tensor::from_values({2}, {100, 100})}));
  CHECK(late.keys == std::vector<std::size_t>{0});
  CHECK(late.weights[0].data()[0] == -1.0f);
  // Another group of the same step is a sum of its own, forwarded on its first push.
  auto other = answer(f.self, agg, push_of(0, 0, {1}, {tensor::from_values({1}, {1})}));
  CHECK(other.weights[0].data()[0] == -1.0f);
  std::int64_t forwarded = -1, dropped = -1;
  f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10), stats_atom::value)
    .receive([&](std::int64_t fw, std::int64_t dr) { forwarded = fw, dropped = dr; },
             [&](caf::error& e) { FAIL(error_text(e)); });
  CHECK(forwarded == 2);
  CHECK(dropped == 1);
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

TEST_CASE("aggregator rejects malformed pushes with the source and keys named") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 0, true, 0});
  auto g = [] { return std::vector<tensor>{tensor::from_values({2}, {1, 1})}; };
  CHECK(refusal(f.self, agg, push_of(2, 0, {0}, g()))
        == "aggregator: push from source 2, expected 0..1");
  CHECK(refusal(f.self, agg, push_of(0, 0, {0}, g(), 0))
        == "aggregator: push from source 0 carries 0 samples");
  CHECK(refusal(f.self, agg, push_of(0, 0, {0, 1}, g()))
        == "aggregator: push from source 0 carries 1 gradients for 2 keys");
  auto pending = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                                 push_of(0, 0, {0}, g()));
  // A repeat of (source 0, step 0, group 0) is no error: it waits for the same sum (below).
  auto repeat = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                                push_of(0, 0, {0}, g()));
  CHECK(refusal(f.self, agg, push_of(1, 0, {0, 1}, {tensor({2}), tensor({1})}))
        == "aggregator: source 1 pushed keys [0, 1] for step 0, others pushed [0]");
  CHECK(refusal(f.self, agg, push_of(1, 0, {0}, {tensor({3})}))
        == "aggregator: source 1 pushed key 0 with shape [3], others [2]");
  // None of that disturbed the pending step: the right push completes it.
  auto done = answer(f.self, agg, push_of(1, 0, {0}, g()));
  CHECK(done.weights[0].data()[0] == -1.0f);
  pending.receive([](weight_set&) {}, [&](caf::error& e) { FAIL(error_text(e)); });
  repeat.receive([](weight_set& ws) { CHECK(ws.weights[0].data()[0] == -1.0f); },
                 [&](caf::error& e) { FAIL(error_text(e)); });
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

TEST_CASE("aggregator refuses impossible options before spawning") {
  fixture f;
  CHECK_THROWS_WITH(spawn_aggregator(f.sys, f.shard, aggregator_options{0, 0, true, 0}),
                    Catch::Contains("at least one source"));
  CHECK_THROWS_WITH(spawn_aggregator(f.sys, f.shard, aggregator_options{2, 3, true, 0}),
                    Catch::Contains("need 3 is outside [0, 2] (0: all sources)"));
  CHECK_THROWS_WITH(spawn_aggregator(f.sys, push_target_actor{}, aggregator_options{1, 0, true, 0}),
                    Catch::Contains("no downstream"));
}

TEST_CASE(
  "a sum is due when its earliest contribution is: a silent downstream fails both pushes then") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  // A downstream that keeps every push unanswered, and records the deadline it was given.
  auto seen = std::make_shared<std::vector<deadline>>();
  push_target_actor silent = sys.spawn([=]() -> push_target_actor::behavior_type {
    return {
      [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
        seen->push_back(push.due);
        return caf::delegated<weight_set>();
      },
      [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
        return caf::make_error(caf::sec::unexpected_message);
      },
      [=](pull_atom, deadline) -> caf::result<weight_set> { return weight_set{}; },
    };
  });
  auto agg = spawn_aggregator(sys, silent, aggregator_options{2, 0, true, 0});
  const auto near = deadline::after(std::chrono::milliseconds(200));
  const auto far = deadline::after(std::chrono::hours(1));
  auto to = caf::actor_cast<caf::actor>(agg);
  std::vector<std::string> errors;
  // The test's own wait is generous: the aggregator, not the test, must give up first.
  auto first =
    self->request(to, std::chrono::seconds(30), push_of(0, 0, {0}, {tensor({2})}, 1, far));
  auto second =
    self->request(to, std::chrono::seconds(30), push_of(1, 0, {0}, {tensor({2})}, 1, near));
  for (auto* pending : {&first, &second})
    pending->receive([&](weight_set&) { errors.push_back("(answered)"); },
                     [&](caf::error& e) { errors.push_back(error_text(e)); });
  REQUIRE(errors.size() == 2);
  for (const auto& e : errors) {
    CHECK_THAT(e, Catch::Contains("step 0's sum got no answer from downstream by its deadline"));
  }
  REQUIRE(seen->size() == 1);
  CHECK(seen->front().at == near.at); // the earlier deadline went downstream
  CHECK(deadline::after(std::chrono::minutes(1)).at > seen->front().at);
  self->send_exit(agg, caf::exit_reason::user_shutdown);
  self->send_exit(silent, caf::exit_reason::user_shutdown);
}

// Adopted workers: a rank's contribution to (step, group) is taken once. The lost process's
// push arrived; the adopter's repeat of it (equal gradients) is dropped and waits for the same
// sum; a repeat after the sum went downstream gets the weights after that step.
TEST_CASE("aggregator takes a source contribution to a step once, a repeat gets the same weights") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 0, true, 0});
  auto to = caf::actor_cast<caf::actor>(agg);
  auto first = f.self->request(to, std::chrono::seconds(10),
                               push_of(1, 0, {0}, {tensor::from_values({2}, {4, 4})}));
  auto repeat = f.self->request(to, std::chrono::seconds(10),
                                push_of(1, 0, {0}, {tensor::from_values({2}, {4, 4})}));
  auto other = answer(f.self, agg, push_of(0, 0, {0}, {tensor::from_values({2}, {2, 2})}));
  CHECK(other.weights[0].data()[0] == -3.0f); // (2 + 4) / 2 once, not (2 + 4 + 4) / 3
  for (auto* pending : {&first, &repeat})
    pending->receive([](weight_set& ws) { CHECK(ws.weights[0].data()[0] == -3.0f); },
                     [&](caf::error& e) { FAIL(error_text(e)); });
  auto late = answer(f.self, agg, push_of(1, 0, {0}, {tensor::from_values({2}, {4, 4})}));
  CHECK(late.weights[0].data()[0] == -3.0f);
  std::int64_t repeats = -1;
  f.self->request(to, std::chrono::seconds(10), repeats_atom::value)
    .receive([&](std::int64_t n) { repeats = n; }, [&](caf::error& e) { FAIL(error_text(e)); });
  CHECK(repeats == 1);
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

// Rewind: the weights before the step in flight, one step back where a group has summed it.
TEST_CASE("aggregator rewinds to the weights before the step in flight") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{1, 0, true, 0, true});
  auto to = caf::actor_cast<caf::actor>(agg);
  auto rewind_to = [&](std::int64_t step) {
    weight_set out;
    f.self
      ->request(to, std::chrono::seconds(10), rewind_atom::value, step, std::int32_t{0},
                deadline::after(std::chrono::seconds(10)))
      .receive([&](weight_set& ws) { out = std::move(ws); },
               [&](caf::error& e) { FAIL(error_text(e)); });
    return out;
  };
  auto start = rewind_to(-1); // nothing summed: step 0, the initial weights
  CHECK(start.before_step == 0);
  REQUIRE(start.keys.size() == 2);
  CHECK(start.weights[0].data()[0] == 0.0f);
  answer(f.self, agg,
         push_of(0, 0, {0}, {tensor::from_values({2}, {1, 1})})); // group of key 0: step 0
  answer(f.self, agg,
         push_of(0, 0, {1}, {tensor::from_values({1}, {1})})); // group of key 1: step 0
  answer(f.self, agg,
         push_of(0, 1, {0}, {tensor::from_values({2}, {1, 1})})); // key 0 alone: step 1
  // Step 1 is in flight (key 1's group has not summed it); key 0 is rewound one step.
  auto in_flight = rewind_to(-1);
  CHECK(in_flight.before_step == 1);
  CHECK(in_flight.weights[0].data()[0] == -1.0f); // after step 0, not -2 after step 1
  CHECK(in_flight.weights[1].data()[0] == -1.0f);
  auto two_back = f.self->request(to, std::chrono::seconds(10), rewind_atom::value, std::int64_t{0},
                                  std::int32_t{0}, deadline::after(std::chrono::seconds(10)));
  std::string refused;
  two_back.receive([](weight_set&) {}, [&](caf::error& e) { refused = error_text(e); });
  CHECK_THAT(refused, Catch::Contains("cannot give the weights before step 0"));
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

// A machine's aggregator spawned again by the worker that adopted the lost machine has summed
// nothing: its rewind is downstream's answer for it as a source, here a shard the machines push
// straight to (local_sync), where this machine (source 1) had pushed steps 0 and 1 whole.
TEST_CASE("aggregator that has summed nothing asks downstream where it stands") {
  fixture f;
  for (std::int64_t step : {0, 1})
    for (std::size_t key : {0, 1})
      answer(
        f.self, f.shard,
        push_of(1, step, {key},
                {key == 0 ? tensor::from_values({2}, {1, 1}) : tensor::from_values({1}, {1})}));
  answer(f.self, f.shard, push_of(0, 0, {0}, {tensor::from_values({2}, {1, 1})})); // source 0
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 0, true, 1, true});
  auto rewound = answer(f.self, agg,
                        caf::make_message(rewind_atom::value, std::int64_t{-1}, std::int32_t{0},
                                          deadline::after(std::chrono::seconds(10))));
  CHECK(rewound.before_step == 2); // source 1's, not the asker's source 0 (at 0 there)
  REQUIRE(rewound.keys.size() == 2);
  CHECK(rewound.weights[0].data()[0] == -3.0f); // the shard's current weights: 3 updates of key 0
  CHECK(rewound.weights[1].data()[0] == -2.0f);
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

// Without keep_previous (every run but on_worker_loss = adopt) no weights are kept one step
// back: a rewind that needs them is refused, saying why; once every group summed the step, the
// weights before the next are downstream's own and are given.
TEST_CASE("aggregator without keep_previous refuses a rewind one step back, naming why") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{1, 0, true, 0});
  auto to = caf::actor_cast<caf::actor>(agg);
  answer(f.self, agg, push_of(0, 0, {0}, {tensor::from_values({2}, {1, 1})}));
  answer(f.self, agg, push_of(0, 0, {1}, {tensor::from_values({1}, {1})}));
  answer(f.self, agg, push_of(0, 1, {0}, {tensor::from_values({2}, {1, 1})}));
  std::string refused;
  f.self
    ->request(to, std::chrono::seconds(10), rewind_atom::value, std::int64_t{-1}, std::int32_t{0},
              deadline::after(std::chrono::seconds(10)))
    .receive([](weight_set&) {}, [&](caf::error& e) { refused = error_text(e); });
  CHECK_THAT(refused,
             Catch::Contains("are not kept here (it keeps none: on_worker_loss is not adopt)"));
  answer(f.self, agg,
         push_of(0, 1, {1}, {tensor::from_values({1}, {1})})); // step 1 whole: nothing to rewind
  weight_set after;
  f.self
    ->request(to, std::chrono::seconds(10), rewind_atom::value, std::int64_t{-1}, std::int32_t{0},
              deadline::after(std::chrono::seconds(10)))
    .receive([&](weight_set& ws) { after = std::move(ws); },
             [&](caf::error& e) { FAIL(error_text(e)); });
  CHECK(after.before_step == 2);
  REQUIRE(after.weights.size() == 2);
  CHECK(after.weights[0].data()[0] == -2.0f);
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

// Stragglers: the barrier counts, by source, the steps it came last in (its first contribution
// to the step after every other source's) and the time it waited for it then; a source's
// second group of a step, and a late repeat, change nothing.
TEST_CASE("aggregator counts who it waited for last, step by step") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 0, true, 0});
  auto waits = [&] {
    std::pair<std::vector<double>, std::vector<std::int64_t>> out;
    f.self->request(agg, std::chrono::seconds(10), waits_atom::value)
      .receive(
        [&](std::vector<double>& s, std::vector<std::int64_t>& n) {
          out = {s, n};
        },
        [&](caf::error& e) { FAIL(error_text(e)); });
    return out;
  };
  auto before = waits();
  REQUIRE(before.first.size() == 2);
  REQUIRE(before.second.size() == 2);
  CHECK(before.second == std::vector<std::int64_t>{0, 0});
  // Step 0: source 0 first (both groups), source 1 last.
  auto a = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                           push_of(0, 0, {0}, {tensor({2})}));
  auto b = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                           push_of(0, 0, {1}, {tensor({1})}));
  answer(f.self, agg, push_of(1, 0, {0}, {tensor({2})}));
  answer(f.self, agg, push_of(1, 0, {1}, {tensor({1})}));
  for (auto* r : {&a, &b})
    r->receive([](weight_set&) {}, [](caf::error& e) { FAIL(error_text(e)); });
  // Step 1: source 1 first, source 0 last.
  auto c = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                           push_of(1, 1, {0}, {tensor({2})}));
  answer(f.self, agg, push_of(0, 1, {0}, {tensor({2})}));
  c.receive([](weight_set&) {}, [](caf::error& e) { FAIL(error_text(e)); });
  // Step 2: source 1 last again.
  auto d = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                           push_of(0, 2, {0}, {tensor({2})}));
  answer(f.self, agg, push_of(1, 2, {0}, {tensor({2})}));
  d.receive([](weight_set&) {}, [](caf::error& e) { FAIL(error_text(e)); });
  auto after = waits();
  REQUIRE(after.second.size() == 2);
  CHECK(after.second == std::vector<std::int64_t>{1, 2});
  CHECK(after.first[0] >= 0);
  CHECK(after.first[1] >= 0);
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

TEST_CASE("an aggregator of one source waits for no one") {
  fixture f;
  auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{1, 0, true, 0});
  answer(f.self, agg, push_of(0, 0, {0}, {tensor({2})}));
  f.self->request(agg, std::chrono::seconds(10), waits_atom::value)
    .receive(
      [&](std::vector<double>& s, std::vector<std::int64_t>& n) {
        REQUIRE(n.size() == 1);
        CHECK(n[0] == 0);
        CHECK(s[0] == 0.0);
      },
      [&](caf::error& e) { FAIL(error_text(e)); });
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
}

TEST_CASE("aggregator records each step's barrier and sum on its group's timeline track") {
  fixture f;
  aggregator_options o{2, 0, true, 0};
  o.timeline = std::make_shared<timeline_recorder>("server 0");
  o.track = "aggregator_1";
  auto agg = spawn_aggregator(f.sys, f.shard, o);
  for (std::int64_t step = 0; step < 2; ++step) {
    auto first = f.self->request(caf::actor_cast<caf::actor>(agg), std::chrono::seconds(10),
                                 push_of(1, step, {1}, {tensor::from_values({1}, {4})}));
    answer(f.self, agg, push_of(0, step, {1}, {tensor::from_values({1}, {2})}));
    first.receive([](weight_set&) {}, [&](caf::error& e) { FAIL(error_text(e)); });
  }
  f.self->send_exit(agg, caf::exit_reason::user_shutdown);
  f.self->wait_for(agg);
  const auto events = test::trace_events_of(*o.timeline);
  REQUIRE(events.size() == 4); // a barrier and a sum per step
  std::map<std::pair<std::string, std::int64_t>, nlohmann::json> by_step;
  for (const auto& [track, e] : events) {
    CHECK(track == "aggregator_1 group 1");
    CHECK(e["args"]["group"] == 1);
    by_step[{e["name"].get<std::string>(), e["args"]["step"].get<std::int64_t>()}] = e;
  }
  REQUIRE(by_step.size() == 4);
  auto at = [&](const char* name, std::int64_t step) { return by_step.at({name, step}); };
  auto end = [](const nlohmann::json& e) {
    return e["ts"].get<std::int64_t>() + e["dur"].get<std::int64_t>();
  };
  for (std::int64_t step = 0; step < 2; ++step) {
    CHECK(at("barrier", step)["args"]["contributions"] == 2);
    CHECK(end(at("barrier", step)) <= at("sum", step)["ts"].get<std::int64_t>());
  }
  // the next step's first contribution comes once the last sum is answered
  CHECK(end(at("sum", 0)) <= at("barrier", 1)["ts"].get<std::int64_t>());
}
