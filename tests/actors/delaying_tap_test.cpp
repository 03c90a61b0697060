// The delaying tap the topology tests make a straggler with (delaying_tap.hpp): a held push
// still reaches its target and the target's answer reaches the pusher, pulls pass through,
// a target that is gone answers the push with an error (not silence), and only the slow
// workers' routes get a tap.
#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/local_node.hpp>

#include "tests/actors/delaying_tap.hpp"

using namespace troupe;

namespace {

// A stand-in shard: answers a push with its step as `updates`, a pull with -1.
push_target_actor::behavior_type echo_shard() {
  return {
    [](push_atom, const gradient_push& push) {
      weight_set w;
      w.updates = push.step;
      w.keys = push.keys;
      return w;
    },
    [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
      return caf::make_error(caf::sec::unexpected_message);
    },
    [](pull_atom, deadline) {
      weight_set w;
      w.updates = -1;
      return w;
    },
  };
}

gradient_push push_of_step(std::int64_t step) {
  gradient_push p;
  p.step = step;
  p.keys = {0};
  p.gradients = {tensor::from_values({1}, {1})};
  return p;
}

} // namespace

TEST_CASE("a delaying tap hands held pushes on and the answers back, and passes pulls") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto shard = sys.spawn(echo_shard);
  auto tap = sys.spawn(test::delaying_tap, push_target_actor{shard},
                       caf::timespan{std::chrono::milliseconds(5)});
  for (std::int64_t step : {7, 8})
    self->request(tap, std::chrono::seconds(10), push_atom::value, push_of_step(step))
      .receive(
        [&](const weight_set& w) {
          CHECK(w.updates == step);
          CHECK(w.keys == std::vector<std::size_t>{0});
        },
        [&](caf::error& e) { FAIL(error_text(e)); });
  self->request(tap, std::chrono::seconds(10), pull_atom::value, deadline{})
    .receive([&](const weight_set& w) { CHECK(w.updates == -1); },
             [&](caf::error& e) { FAIL(error_text(e)); });
  self->request(tap, std::chrono::seconds(10), test::taken_atom::value)
    .receive([&](std::int64_t n) { CHECK(n == 2); }, // pulls are not counted
             [&](caf::error& e) { FAIL(error_text(e)); });
  self->send_exit(tap, caf::exit_reason::user_shutdown);
  self->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("a delaying tap whose target is gone answers the held push with an error") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto shard = sys.spawn(echo_shard);
  self->send_exit(shard, caf::exit_reason::kill);
  self->wait_for(shard);
  auto tap = sys.spawn(test::delaying_tap, push_target_actor{shard},
                       caf::timespan{std::chrono::milliseconds(5)});
  caf::error failure;
  self->request(tap, std::chrono::seconds(30), push_atom::value, push_of_step(1))
    .receive([&](const weight_set&) { FAIL("a push to a dead target was answered"); },
             [&](caf::error& e) { failure = e; });
  REQUIRE(failure);
  CHECK(failure != caf::sec::request_timeout); // answered, not left to time out
  self->send_exit(tap, caf::exit_reason::user_shutdown);
}

TEST_CASE("slow_worker_tap taps only the slow workers' routes") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto shard = push_target_actor{sys.spawn(echo_shard)};
  std::vector<test::delaying_tap_actor> taps;
  auto tap = test::slow_worker_tap(sys, {1, 3}, std::chrono::milliseconds(5), taps);
  CHECK(tap(shard, tap_point{0, 0}) == shard);
  CHECK(tap(shard, tap_point{2, 1}) == shard);
  CHECK(taps.empty());
  auto a = tap(shard, tap_point{1, 0});
  auto b = tap(shard, tap_point{1, 1});
  auto c = tap(shard, tap_point{3, 0});
  REQUIRE(taps.size() == 3);
  CHECK(a != shard);
  CHECK(a == push_target_actor{taps[0]});
  CHECK(b == push_target_actor{taps[1]});
  CHECK(c == push_target_actor{taps[2]});
  for (auto& t : taps)
    caf::anon_send_exit(t, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
}
