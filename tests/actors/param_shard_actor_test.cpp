// The parameter shard at the message level: push -> weights, pull, bad pushes rejected
// without changing state, and old weight handles never overwritten (copy-on-write).
#include <catch2/catch.hpp>

#include <set>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/local_node.hpp>

#include "tests/io/trace_events.hpp"

using namespace troupe;

namespace {

shard_options plain_sgd(float lr, float momentum, float wd) {
  shard_options o;
  o.optimizer.sgd = sgd_options{momentum, wd, false};
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = lr;
  return o;
}

std::vector<shard_key> two_keys() {
  return {shard_key{"fc.weight", tensor::from_values({2, 2}, {1, 2, 3, 4}), true},
          shard_key{"fc.bias", tensor::from_values({2}, {0.5f, -0.5f}), false}};
}

template <class T, class Handle>
T ask(caf::scoped_actor& self, const Handle& to, caf::message msg, caf::error* err = nullptr) {
  T out{};
  auto a = caf::actor_cast<caf::actor>(to);
  self->request(a, std::chrono::seconds(10), std::move(msg))
    .receive([&](T& x) { out = std::move(x); },
             [&](caf::error& e) {
               if (err)
                 *err = e;
               else
                 FAIL("unexpected error: " << error_text(e));
             });
  return out;
}

} // namespace

TEST_CASE("param shard applies SGD with momentum and exempts keys from weight decay") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto shard = spawn_param_shard(sys, two_keys(), plain_sgd(0.1f, 0.9f, 0.01f));
  gradient_push push;
  push.keys = {0, 1};
  push.gradients = {tensor::from_values({2, 2}, {1, 1, 1, 1}), tensor::from_values({2}, {1, 2})};
  auto ws = ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
  REQUIRE(ws.weights.size() == 2);
  REQUIRE(ws.updates == 1);
  // w = 1 - 0.1 * (1 + 0.01 * 1) = 0.899; bias has no decay: 0.5 - 0.1 * 1 = 0.4
  CHECK(ws.weights[0].data()[0] == Approx(0.899f));
  CHECK(ws.weights[0].data()[3] == Approx(4 - 0.1f * (1 + 0.04f)));
  CHECK(ws.weights[1].data()[0] == Approx(0.4f));
  CHECK(ws.weights[1].data()[1] == Approx(-0.7f));
  // second step: velocity = 0.9 * v + g
  push.step = 1;
  auto ws2 = ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
  CHECK(ws2.weights[1].data()[0] == Approx(0.4f - 0.1f * (0.9f * 1 + 1)));
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard never writes into weights a reader still holds") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto shard = spawn_param_shard(sys, two_keys(), plain_sgd(0.1f, 0.0f, 0.0f));
  auto before = ask<weight_set>(self, shard, caf::make_message(pull_atom::value, deadline{}));
  gradient_push push;
  push.keys = {0, 1};
  push.gradients = {tensor::from_values({2, 2}, {1, 1, 1, 1}), tensor::from_values({2}, {1, 1})};
  auto after = ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
  CHECK(before.weights[0].data()[0] == 1.0f); // the old handle still shows the old value
  CHECK(after.weights[0].data()[0] == Approx(0.9f));
  CHECK_FALSE(after.weights[0].shares_storage_with(before.weights[0]));
  // A reader that lets go of old weights lets the shard reuse their buffers: a handful of
  // buffers serve any number of steps.
  before = weight_set{};
  std::set<const float*> buffers;
  for (int i = 0; i < 10; ++i) {
    after = weight_set{};
    after = ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
    buffers.insert(after.weights[0].data());
  }
  CHECK(buffers.size() <= 3);
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard rejects a push with the wrong count or shape and keeps its state") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto shard = spawn_param_shard(sys, two_keys(), plain_sgd(0.1f, 0.9f, 0.0f));
  gradient_push short_push;
  short_push.keys = {0, 1};
  short_push.gradients = {tensor::from_values({2, 2}, {1, 1, 1, 1})};
  caf::error err;
  ask<weight_set>(self, shard, caf::make_message(push_atom::value, short_push), &err);
  CHECK(error_text(err) == "param_shard: push carries 1 gradients for 2 keys");

  auto rejects = [&](std::vector<std::size_t> keys, const std::string& expected) {
    gradient_push push;
    push.keys = std::move(keys);
    for (std::size_t i = 0; i < push.keys.size(); ++i)
      push.gradients.push_back(push.keys[i] == 1 ? tensor({2}) : tensor({2, 2}));
    caf::error e;
    ask<weight_set>(self, shard, caf::make_message(push_atom::value, push), &e);
    CHECK_THAT(error_text(e), Catch::Contains(expected));
  };
  rejects({}, "push names no keys");
  rejects({0, 2}, "push names key 2, the shard owns keys 0..1");
  rejects({1, 1}, "push lists key 'fc.bias' out of order or twice");
  rejects({1, 0}, "push lists key 'fc.weight' out of order or twice");

  gradient_push bad_shape;
  bad_shape.keys = {0, 1};
  bad_shape.gradients = {tensor::from_values({2, 2}, {1, 1, 1, 1}), tensor({3})};
  err = caf::error{};
  ask<weight_set>(self, shard, caf::make_message(push_atom::value, bad_shape), &err);
  CHECK_THAT(error_text(err),
             Catch::Contains("'fc.bias'") && Catch::Contains("[3]") && Catch::Contains("[2]"));

  auto now = ask<weight_set>(self, shard, caf::make_message(pull_atom::value, deadline{}));
  CHECK(now.updates == 0);
  CHECK(now.weights[0].data()[0] == 1.0f); // the valid first gradient was not applied either
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard updates and answers only the keys a push group lists") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto shard = spawn_param_shard(sys, two_keys(), plain_sgd(0.1f, 0.0f, 0.0f));
  gradient_push bias_only;
  bias_only.keys = {1};
  bias_only.gradients = {tensor::from_values({2}, {1, 1})};
  auto ws = ask<weight_set>(self, shard, caf::make_message(push_atom::value, bias_only));
  REQUIRE(ws.keys == std::vector<std::size_t>{1});
  REQUIRE(ws.weights.size() == 1);
  CHECK(ws.weights[0].data()[0] == Approx(0.4f));
  auto all = ask<weight_set>(self, shard, caf::make_message(pull_atom::value, deadline{}));
  CHECK(all.keys == std::vector<std::size_t>{0, 1});
  CHECK(all.weights[0].data()[0] == 1.0f); // the weight key was not touched
  CHECK(all.weights[1].data()[1] == Approx(-0.6f));
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard refuses to start without keys or with a bad schedule") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  CHECK_THROWS_WITH(spawn_param_shard(sys, {}, plain_sgd(0.1f, 0, 0)), Catch::Contains("no keys"));
  auto bad = plain_sgd(0.1f, 0, 0);
  bad.schedule.base_lr = -1;
  CHECK_THROWS(spawn_param_shard(sys, two_keys(), bad));
}

TEST_CASE("param shard holds a worker more than staleness steps ahead until the slowest pushes") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto opts = plain_sgd(1.0f, 0.0f, 0.0f);
  opts.staleness = 1;
  opts.workers = 2;
  auto shard = spawn_param_shard(sys, {shard_key{"w", tensor::from_values({1}, {0}), false}}, opts);
  auto push_of = [](int rank, std::int64_t step) {
    gradient_push p;
    p.source = rank;
    p.step = step;
    p.keys = {0};
    p.gradients = {tensor::from_values({1}, {-1})}; // each update adds 1 at lr 1
    return caf::make_message(push_atom::value, p);
  };
  CHECK(ask<weight_set>(self, shard, push_of(0, 0)).weights[0].data()[0] == 1.0f);
  // Step 1 of worker 0 is 2 ahead of worker 1 (nothing pushed yet): held.
  auto held =
    self->request(caf::actor_cast<caf::actor>(shard), std::chrono::seconds(10), push_of(0, 1));
  // Worker 1's step 0 brings the slowest to 0; its own answer shows 3 updates...
  CHECK(ask<weight_set>(self, shard, push_of(1, 0)).weights[0].data()[0] == 3.0f);
  // ...and the held answer was released only now, with the newest weights (3, not 2).
  float released = 0;
  held.receive([&](weight_set& ws) { released = ws.weights[0].data()[0]; },
               [&](caf::error& e) { FAIL(error_text(e)); });
  CHECK(released == 3.0f);
  caf::error err;
  ask<weight_set>(self, shard, push_of(2, 1), &err);
  CHECK(error_text(err) == "param_shard: push from source 2, expected 0..1");
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard stops waiting for forgotten workers and refuses their pushes") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto opts = plain_sgd(1.0f, 0.0f, 0.0f);
  opts.staleness = 1;
  opts.workers = 3;
  auto shard = spawn_param_shard(sys, {shard_key{"w", tensor::from_values({1}, {0}), false}}, opts);
  const auto target = caf::actor_cast<caf::actor>(shard);
  auto push_of = [](int rank, std::int64_t step) {
    gradient_push p;
    p.source = rank;
    p.step = step;
    p.keys = {0};
    p.gradients = {tensor::from_values({1}, {-1})}; // each update adds 1 at lr 1
    return caf::make_message(push_atom::value, p);
  };
  // Worker 2 never pushes, so it stays the slowest at -1: step 0 is within the bound (1),
  // step 1 of workers 0 and 1 is not, and both answers are held.
  CHECK(ask<weight_set>(self, shard, push_of(0, 0)).weights[0].data()[0] == 1.0f);
  CHECK(ask<weight_set>(self, shard, push_of(1, 0)).weights[0].data()[0] == 2.0f);
  std::vector<float> released;
  auto collect = [&](auto held) {
    // The timeout only guards against a hang: a held answer fails the check below instead.
    held.receive([&](weight_set& ws) { released.push_back(ws.weights.at(0).data()[0]); },
                 [&](caf::error& e) { FAIL_CHECK("held push failed: " << error_text(e)); });
  };
  auto held0 = self->request(target, std::chrono::seconds(30), push_of(0, 1));
  auto held1 = self->request(target, std::chrono::seconds(30), push_of(1, 1));
  // Both pushes were applied, their answers held: the pull is answered after them, and an
  // answer the shard sent before it would already be waiting here (messages keep their order).
  CHECK(ask<weight_set>(self, shard, caf::make_message(pull_atom::value, deadline{})).updates == 4);
  CHECK(self->mailbox().empty());
  self->send(shard, forget_atom::value, std::vector<std::int32_t>{2});
  collect(std::move(held0));
  collect(std::move(held1));
  REQUIRE(released.size() == 2);
  CHECK(released[0] == 4.0f); // both released with the newest weights
  CHECK(released[1] == 4.0f);
  // The slowest of the two left is now at step 1: step 2 is within the bound, at once.
  CHECK(ask<weight_set>(self, shard, push_of(0, 2)).weights[0].data()[0] == 5.0f);
  caf::error err;
  ask<weight_set>(self, shard, push_of(2, 0), &err);
  CHECK(troupe_code(err) == errc::bad_request);
  CHECK_THAT(error_text(err),
             Catch::Contains("push from source 2, which this shard was told is gone"));
  CHECK(ask<weight_set>(self, shard, caf::make_message(pull_atom::value, deadline{})).updates
        == 5); // not applied
  // Worker 0's step 3 is 2 ahead of worker 1's step 1: held. Once every worker is forgotten
  // nothing is held (the bound compares against nobody), so it is released.
  auto held3 = self->request(target, std::chrono::seconds(30), push_of(0, 3));
  CHECK(ask<weight_set>(self, shard, caf::make_message(pull_atom::value, deadline{})).updates == 6);
  CHECK(self->mailbox().empty());
  self->send(shard, forget_atom::value, std::vector<std::int32_t>{0, 1});
  collect(std::move(held3));
  REQUIRE(released.size() == 3);
  CHECK(released[2] == 6.0f);
  ask<weight_set>(self, shard, push_of(1, 5), &err);
  CHECK_THAT(error_text(err),
             Catch::Contains("push from source 1, which this shard was told is gone"));
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard refuses a step from the future and a replayed step, and keeps its state") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto opts = plain_sgd(1.0f, 0.0f, 0.0f);
  opts.step_limit = 10; // e.g. 2 epochs of 5 steps
  auto shard = spawn_param_shard(sys, {shard_key{"w", tensor::from_values({1}, {0}), false}}, opts);
  auto push_of = [](int rank, std::int64_t step) {
    gradient_push p;
    p.keys = {0};
    p.gradients = {tensor::from_values({1}, {-1})};
    p.source = rank;
    p.step = step;
    return caf::make_message(push_atom::value, p);
  };
  CHECK(ask<weight_set>(self, shard, push_of(0, 3)).weights[0].data()[0] == 1.0f);
  // The same group and step again (a retried request): answered with the weights, not applied
  // twice.
  const auto again = ask<weight_set>(self, shard, push_of(0, 3));
  CHECK(again.weights[0].data()[0] == 1.0f);
  CHECK(again.updates == 1);
  caf::error err;
  ask<weight_set>(self, shard, push_of(0, 10), &err);
  CHECK(troupe_code(err) == errc::bad_request);
  CHECK_THAT(error_text(err),
             Catch::Contains(
               "step 10 from source 0 is not a step of this run (0..9): a step from the future"));
  ask<weight_set>(self, shard, push_of(0, 2), &err);
  CHECK_THAT(error_text(err), Catch::Contains("already pushed step 3: a replay"));
  ask<weight_set>(self, shard, push_of(1, -1), &err);
  CHECK_THAT(error_text(err), Catch::Contains("a step from the future"));
  // Nothing refused was applied; another source's own order is its own.
  CHECK(ask<weight_set>(self, shard, push_of(1, 0)).weights[0].data()[0] == 2.0f);
  CHECK(ask<weight_set>(self, shard, caf::make_message(pull_atom::value, deadline{})).updates == 2);
}

namespace {

shard_options adam_at(float lr) {
  shard_options o;
  o.optimizer.kind = optimizer_kind::adam;
  o.optimizer.sgd.weight_decay = 0.01f;
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = lr;
  return o;
}

} // namespace

TEST_CASE("param shard applies Adam per key, each key with its own update count") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  const auto options = adam_at(0.01f);
  auto shard = spawn_param_shard(sys, two_keys(), options);
  // The same updates by hand: the weight key twice, the bias (no decay) once, in a push of
  // its own, so the two keys' counts differ.
  auto keys = two_keys();
  auto w = keys[0].initial.clone(), b = keys[1].initial.clone();
  auto w_state = initial_optimizer_state(optimizer_kind::adam, w.shape());
  auto b_state = initial_optimizer_state(optimizer_kind::adam, b.shape());
  const auto g = tensor::from_values({2, 2}, {1, -2, 3, -4});
  const auto gb = tensor::from_values({2}, {0.5f, 0.25f});
  gradient_push push;
  push.keys = {0};
  push.gradients = {g};
  ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
  optimizer_update(options.optimizer, 0.01f, w, g, w_state, w, true);
  push.step = 1;
  push.keys = {0, 1};
  push.gradients = {g, gb};
  auto ws = ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
  optimizer_update(options.optimizer, 0.01f, w, g, w_state, w, true);
  optimizer_update(options.optimizer, 0.01f, b, gb, b_state, b, false);
  for (int i = 0; i < 4; ++i)
    CHECK(ws.weights[0].data()[i] == w.data()[i]);
  for (int i = 0; i < 2; ++i)
    CHECK(ws.weights[1].data()[i] == b.data()[i]);
  auto snap = ask<shard_snapshot>(self, shard, caf::make_message(snapshot_atom::value));
  CHECK(snap.optimizer == optimizer_kind::adam);
  REQUIRE(snap.state.size() == 2);
  CHECK(snap.state[0].steps == 2);
  CHECK(snap.state[1].steps == 1);
  REQUIRE(snap.state[0].tensors.size() == 2);
  for (int i = 0; i < 4; ++i)
    CHECK(snap.state[0].tensors[1].data()[i] == w_state.tensors[1].data()[i]);
  // A fresh Adam shard restored from the snapshot continues where this one is.
  auto again = spawn_param_shard(sys, two_keys(), options);
  CHECK(ask<bool>(self, again, caf::make_message(restore_atom::value, snap)));
  push.step = 2;
  auto first = ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
  auto second = ask<weight_set>(self, again, caf::make_message(push_atom::value, push));
  for (int i = 0; i < 4; ++i)
    CHECK(first.weights[0].data()[i] == second.weights[0].data()[i]);
  self->send_exit(shard, caf::exit_reason::user_shutdown);
  self->send_exit(again, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard refuses to restore another optimizer's state") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto sgd_shard = spawn_param_shard(sys, two_keys(), plain_sgd(0.1f, 0.9f, 0));
  auto snap = ask<shard_snapshot>(self, sgd_shard, caf::make_message(snapshot_atom::value));
  auto adam_shard = spawn_param_shard(sys, two_keys(), adam_at(0.01f));
  caf::error err;
  ask<bool>(self, adam_shard, caf::make_message(restore_atom::value, snap), &err);
  CHECK(error_text(err).find("the snapshot holds sgd's state, the shard applies adam")
        != std::string::npos);
  self->send_exit(sgd_shard, caf::exit_reason::user_shutdown);
  self->send_exit(adam_shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard records each applied push as a span on its timeline track") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto o = plain_sgd(0.1f, 0, 0);
  o.timeline = std::make_shared<timeline_recorder>("server 0");
  o.track = "shard_3";
  auto shard = spawn_param_shard(sys, two_keys(), o);
  gradient_push push;
  push.source = 1;
  push.step = 4;
  push.keys = {1};
  push.gradients = {tensor::from_values({2}, {1, 2})};
  ask<weight_set>(self, shard, caf::make_message(push_atom::value, push));
  caf::error refused; // a wrong shape: applied nowhere, recorded nowhere
  push.step = 5;
  push.gradients = {tensor::from_values({3}, {1, 2, 3})};
  ask<weight_set>(self, shard, caf::make_message(push_atom::value, push), &refused);
  CHECK(troupe_code(refused) == errc::bad_request);
  self->send_exit(shard, caf::exit_reason::user_shutdown);
  self->wait_for(shard);
  const auto events = test::trace_events_of(*o.timeline);
  REQUIRE(events.size() == 1);
  const auto& [track, e] = events[0];
  CHECK(track == "shard_3");
  CHECK(e["ph"] == "X");
  CHECK(e["name"] == "apply");
  CHECK(e["dur"].get<std::int64_t>() >= 0);
  CHECK(e["args"]["step"] == 4);
  CHECK(e["args"]["source"] == 1);
  CHECK(e["args"]["keys"] == 1);
}

TEST_CASE("param shard takes a shard change from its step on and refuses one it passed") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto shard = spawn_param_shard(sys, {shard_key{"w", tensor::from_values({1}, {0}), true}},
                                 plain_sgd(1.0f, 0.0f, 0.0f));
  auto push_of = [](std::int64_t step) {
    gradient_push p;
    p.keys = {0};
    p.gradients = {tensor::from_values({1}, {-1})};
    p.step = step;
    return caf::make_message(push_atom::value, p);
  };
  auto change = [](shard_setting setting, double value, std::int64_t step) {
    return caf::make_message(change_atom::value, shard_change{setting, value, step});
  };
  CHECK(ask<weight_set>(self, shard, push_of(0)).weights[0].data()[0] == 1.0f);
  CHECK(ask<bool>(self, shard, change(shard_setting::lr, 0.5, 1)));
  const auto after = ask<weight_set>(self, shard, push_of(1));
  CHECK(after.weights[0].data()[0] == 1.5f);
  CHECK(after.learning_rate == 0.5f);
  // Weight decay from step 2: w = 1.5 - 0.5 * (-1 + 0.1 * 1.5).
  CHECK(ask<bool>(self, shard, change(shard_setting::wd, 0.1, 2)));
  CHECK(ask<weight_set>(self, shard, push_of(2)).weights[0].data()[0] == Approx(1.925f));
  caf::error err;
  ask<bool>(self, shard, change(shard_setting::lr, 0.1, 2), &err);
  CHECK(troupe_code(err) == errc::bad_request);
  CHECK_THAT(error_text(err), Catch::Contains("a push of step 2 was applied already"));
  ask<bool>(self, shard, change(shard_setting::momentum, 1.0, 3), &err);
  CHECK_THAT(error_text(err), Catch::Contains("momentum must be at least 0 and below 1"));
  ask<bool>(self, shard, change(shard_setting::lr, 0, 3), &err);
  CHECK_THAT(error_text(err), Catch::Contains("the rate must be above 0 and at most 100"));
  // Nothing refused changed the rate.
  CHECK(ask<weight_set>(self, shard, push_of(3)).learning_rate == 0.5f);
  // A snapshot keeps what the changes set: a shard restored from it goes on with them.
  auto snap = ask<shard_snapshot>(self, shard, caf::make_message(snapshot_atom::value));
  REQUIRE(snap.counters.base_lr.has_value());
  CHECK(*snap.counters.base_lr == 0.5f);
  CHECK(!snap.counters.momentum.has_value());
  REQUIRE(snap.counters.weight_decay.has_value());
  CHECK(*snap.counters.weight_decay == 0.1f);
  auto resumed = spawn_param_shard(sys, {shard_key{"w", tensor::from_values({1}, {0}), true}},
                                   plain_sgd(1.0f, 0.0f, 0.0f));
  CHECK(ask<bool>(self, resumed, caf::make_message(restore_atom::value, snap)));
  const auto next = ask<weight_set>(self, shard, push_of(4));
  const auto next_resumed = ask<weight_set>(self, resumed, push_of(4));
  CHECK(next_resumed.learning_rate == 0.5f);
  CHECK(next_resumed.weights[0].data()[0] == next.weights[0].data()[0]);
  // A snapshot whose change no shard would take is refused, and changes nothing.
  snap.counters.momentum = 2.0f;
  auto refusing = spawn_param_shard(sys, {shard_key{"w", tensor::from_values({1}, {0}), true}},
                                    plain_sgd(1.0f, 0.0f, 0.0f));
  ask<bool>(self, refusing, caf::make_message(restore_atom::value, snap), &err);
  CHECK_THAT(error_text(err), Catch::Contains("restore: the snapshot's param_shard: change of "
                                              "momentum"));
  CHECK(ask<weight_set>(self, refusing, push_of(0)).learning_rate == 1.0f);
  self->send_exit(resumed, caf::exit_reason::user_shutdown);
  self->send_exit(refusing, caf::exit_reason::user_shutdown);
  auto adam = spawn_param_shard(sys, two_keys(), adam_at(0.01f));
  ask<bool>(self, adam, change(shard_setting::momentum, 0.5, 0), &err);
  CHECK_THAT(error_text(err), Catch::Contains("adam has no momentum"));
  self->send_exit(shard, caf::exit_reason::user_shutdown);
  self->send_exit(adam, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard lifts or sets its staleness bound when changed") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto opts = plain_sgd(1.0f, 0.0f, 0.0f);
  opts.staleness = 0; // SSP(0): no worker may be a step ahead of the slowest
  opts.workers = 2;
  auto shard = spawn_param_shard(sys, {shard_key{"w", tensor::from_values({1}, {0}), false}}, opts);
  auto push_of = [](int source, std::int64_t step) {
    gradient_push p;
    p.keys = {0};
    p.gradients = {tensor::from_values({1}, {-1})};
    p.source = source;
    p.step = step;
    return caf::make_message(push_atom::value, p);
  };
  // Worker 0's step 0 waits for worker 1, which has not pushed.
  auto held =
    self->request(caf::actor_cast<caf::actor>(shard), std::chrono::seconds(10), push_of(0, 0));
  // Lifted (async from step 1): the held answer goes at once.
  CHECK(ask<bool>(
    self, shard,
    caf::make_message(change_atom::value, shard_change{shard_setting::staleness, -1, 1})));
  bool answered = false;
  held.receive([&](weight_set& w) { answered = w.updates == 1; },
               [&](caf::error& e) { FAIL("the held push was not answered: " << error_text(e)); });
  CHECK(answered);
  caf::error err;
  ask<bool>(self, shard,
            caf::make_message(change_atom::value, shard_change{shard_setting::staleness, 1.5, 1}),
            &err);
  CHECK_THAT(error_text(err), Catch::Contains("a whole number from -1 (none) to 1000000"));
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("param shard answers an adopted source's rewind with its step in flight") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto opts = plain_sgd(1.0f, 0.0f, 0.0f);
  opts.workers = 2;
  auto shard = spawn_param_shard(sys, two_keys(), opts);
  auto push_of = [](int source, std::int64_t step, std::size_t key) {
    gradient_push p;
    p.source = source;
    p.step = step;
    p.keys = {key};
    p.gradients = {key == 0 ? tensor::from_values({2, 2}, {-1, -1, -1, -1})
                            : tensor::from_values({2}, {-1, -1})}; // each update adds 1 at lr 1
    return caf::make_message(push_atom::value, p);
  };
  auto rewind = [](std::int64_t step, int source) {
    return caf::make_message(rewind_atom::value, step, std::int32_t{source}, deadline{});
  };
  // Nothing pushed yet: source 0 starts at step 0, from the initial weights.
  auto first = ask<weight_set>(self, shard, rewind(-1, 0));
  REQUIRE(first.weights.size() == 2);
  CHECK(first.before_step == 0);
  CHECK(first.weights[0].data()[0] == 1.0f);
  // Source 0 pushed both groups of step 0 and one of step 1: step 1 is in flight. Source 1
  // pushed both groups of steps 0 and 1: its step 2 is.
  for (auto m : {push_of(0, 0, 0), push_of(0, 0, 1), push_of(0, 1, 0), push_of(1, 0, 0),
                 push_of(1, 0, 1), push_of(1, 1, 0), push_of(1, 1, 1)})
    ask<weight_set>(self, shard, m);
  auto zero = ask<weight_set>(self, shard, rewind(-1, 0));
  REQUIRE(zero.weights.size() == 2);
  CHECK(zero.before_step == 1);
  CHECK(zero.updates == 7);
  CHECK(zero.weights[0].data()[0] == 5.0f); // the current weights: 1 + 4 updates of key 0
  CHECK(zero.weights[1].data()[0] == 3.5f); // 0.5 + 3 updates of key 1
  CHECK(ask<weight_set>(self, shard, rewind(-1, 1)).before_step == 2);
  CHECK(ask<weight_set>(self, shard, rewind(1, 0)).before_step == 1);
  // Step 0 of source 0 cannot be repeated here (its key 0 group is at step 1 already), nor can
  // a step beyond the one in flight be skipped to: both refused, naming where it stands.
  for (std::int64_t step : {0, 2}) {
    caf::error err;
    ask<weight_set>(self, shard, rewind(step, 0), &err);
    CHECK(troupe_code(err) == errc::bad_request);
    CHECK_THAT(error_text(err), Catch::Contains("rewind to step " + std::to_string(step)
                                                + " for source 0, whose step in flight here is 1"));
  }
  // Once source 1's groups are all at step 1, a route one step behind may ask for that step:
  // answered, and the repeat of its pushes is answered without being applied again.
  CHECK(ask<weight_set>(self, shard, rewind(1, 1)).before_step == 1);
  auto repeat = ask<weight_set>(self, shard, push_of(1, 1, 0));
  CHECK(repeat.updates == 7);
  CHECK(repeat.weights[0].data()[0] == 5.0f);
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}
