// Frame ranks (frame_priority.hpp) and what they do on a real channel: an MLP's keys get their
// places in forward order (slot, then slice offset); control frames rank before every tensor
// frame, pushes, pushes passed to backups and weights by their first key; and the pushes of a step,
// queued in backward's order on a worker's channel, reach the server first layers first with
// priority on, in backward's order with it off.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/frame_codec.hpp>
#include <troupe/cluster/frame_priority.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/graph/placement.hpp>

#include "cluster/frame_socket.hpp"
#include "tests/actors/synthetic_job.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

const data_facts facts{{1, 28, 28}, 10, 64, 64};

// An MLP on one server, its first weight cut into slices and no key bundled with another:
// each key is a push group of its own, so a step is several pushes over one channel.
placement_plan sliced_mlp(int shards) {
  auto job = test::synthetic_job("mlp", 64);
  job.shards = shards;
  job.nodes.servers = 1;
  job.nodes.workers = 1;
  job.topology.keys = key_plan_options{64 << 10, 0};
  return plan_placement(job, facts);
}

const key_slice& key_at(const placement_plan& plan, std::size_t shard, std::size_t key) {
  return plan.keys.shards.at(shard).at(key);
}

gradient_push push_of(const placement_plan& plan, const push_group& group) {
  gradient_push push;
  push.step = 0;
  push.samples = 1;
  push.keys = group.keys;
  for (auto k : group.keys)
    push.gradients.push_back(tensor(shape_t{key_at(plan, group.shard, k).length}));
  return push;
}

} // namespace

TEST_CASE("forward order sorts every key by slot, then slice offset", "[cluster][priority]") {
  const auto plan = sliced_mlp(2);
  REQUIRE(plan.keys.shards.size() == 2);
  REQUIRE_FALSE(plan.sliced.empty());
  const auto order = forward_order_of(plan);
  REQUIRE(order.position.size() == plan.keys.shards.size());
  std::vector<std::tuple<std::uint64_t, std::size_t, std::int64_t>> by_position;
  for (std::size_t s = 0; s < plan.keys.shards.size(); ++s) {
    REQUIRE(order.position[s].size() == plan.keys.shards[s].size());
    for (std::size_t k = 0; k < plan.keys.shards[s].size(); ++k)
      by_position.emplace_back(order.position[s][k], key_at(plan, s, k).slot,
                               key_at(plan, s, k).offset);
  }
  std::sort(by_position.begin(), by_position.end());
  for (std::size_t i = 0; i < by_position.size(); ++i) {
    CHECK(std::get<0>(by_position[i]) == i); // every place once
    if (i > 0)
      CHECK(std::make_pair(std::get<1>(by_position[i - 1]), std::get<2>(by_position[i - 1]))
            < std::make_pair(std::get<1>(by_position[i]), std::get<2>(by_position[i])));
  }
}

TEST_CASE("control frames rank first, tensor frames by their first key in forward order",
          "[cluster][priority]") {
  const auto plan = sliced_mlp(2);
  const auto order = forward_order_of(plan);
  CHECK(frame_rank(heartbeat_message{7}, order) == control_rank);
  CHECK(frame_rank(pull_message{1, 0}, order) == control_rank);
  CHECK(frame_rank(failure_message{1, errc::timeout, "late"}, order) == control_rank);
  CHECK(frame_rank(shutdown_message{"done", true}, order) == control_rank);
  // A push of two keys ranks by the earlier of them; a replicate and a weights frame alike.
  REQUIRE(plan.keys.shards[1].size() >= 2);
  const std::uint64_t a = order.position[1][0], b = order.position[1][1];
  push_message push;
  push.shard = 1;
  push.push.keys = {0, 1};
  CHECK(frame_rank(push, order) == 1 + std::min(a, b));
  replicate_message replicate;
  static_cast<push_message&>(replicate) = push;
  CHECK(frame_rank(replicate, order) == 1 + std::min(a, b));
  weights_message weights;
  weights.shard = 1;
  weights.weights.keys = {1};
  CHECK(frame_rank(weights, order) == 1 + b);
  // Keys the order does not know (a channel without the plan's order) rank after all others.
  push.shard = 2;
  CHECK(frame_rank(push, order) == unranked);
  push.shard = 1;
  push.push.keys = {plan.keys.shards[1].size()};
  CHECK(frame_rank(push, order) == unranked);
  CHECK(frame_rank(push, forward_order{}) == unranked);
}

namespace {

// A shard that notes the first key of every push in the order pushes reach it, and answers
// with the pushed values.
struct arrivals {
  std::mutex mutex;
  std::vector<std::size_t> first_keys;
};

push_target_actor::behavior_type noting_shard(std::shared_ptr<arrivals> seen) {
  return {
    [seen](push_atom, const gradient_push& push) {
      {
        std::lock_guard<std::mutex> lock(seen->mutex);
        seen->first_keys.push_back(push.keys.front());
      }
      weight_set w;
      w.keys = push.keys;
      w.weights = push.gradients;
      return w;
    },
    [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
      return caf::make_error(caf::sec::unexpected_message);
    },
    [](pull_atom, deadline) { return weight_set{}; },
  };
}

// The first keys of a step's pushes as they reach the server when the worker's channel is
// `priority`: the pushes are queued in backward's order while the channel waits for admission (the
// server has not accepted yet), so the writer sees them all before it writes the first.
std::vector<std::size_t> arrival_order(const placement_plan& plan, bool priority) {
  const cluster_secret secret("the secret of the test cluster!!");
  auto options_of = [&](node_kind role, const std::string& name) {
    channel_options o(secret);
    o.role = role;
    o.name = name;
    o.plan_hash = plan.hash;
    o.keys = wire_keys_of(plan);
    o.priority = priority;
    o.order = forward_order_of(plan);
    o.log = [](const std::string&) {}; // the channels' ends at the test's end are no news
    return o;
  };
  auto seen = std::make_shared<arrivals>();
  local_node_config server_config{local_node_options{}}, worker_config{local_node_options{}};
  caf::actor_system server_system{server_config}, worker_system{worker_config};
  auto bound = listening_socket::bind("127.0.0.1", 0);
  REQUIRE(bound);
  const auto port = (*bound)->port();
  std::shared_ptr<listening_socket> listening = std::move(*bound);
  auto connected =
    connect_channel(worker_system, "127.0.0.1", port, options_of(node_kind::worker, "worker 0"));
  REQUIRE(connected);
  const auto channel = caf::actor_cast<caf::actor>(*connected);
  caf::scoped_actor self{worker_system};
  const auto due = deadline::after(60s);
  for (const auto& group : plan.keys.groups)
    self->send(channel, call_atom::value, wire_message{push_message{0, 0, push_of(plan, group)}},
               due);
  // The channel has taken every push (one sender's messages arrive in order) before it can be
  // admitted: the server starts accepting only now.
  self->request(channel, 10s, stats_atom::value)
    .receive([](channel_traffic&) {}, [](caf::error& e) { FAIL(error_text(e)); });
  auto shard = server_system.spawn(noting_shard, seen);
  auto server_options = options_of(node_kind::server, "server 0");
  server_options.serving->set<remote_interface::push_target>(0, push_target_actor{shard});
  auto listener = spawn_listener(server_system, listening, server_options);
  // Every push answered: the shard has seen them all.
  for (std::size_t i = 0; i < plan.keys.groups.size(); ++i)
    self->receive(
      [](wire_message& answer) { CHECK(std::holds_alternative<weights_message>(answer)); },
      [](caf::error& e) { FAIL(error_text(e)); },
      caf::after(20s) >> [] { FAIL("a push was not answered"); });
  caf::anon_send_exit(channel, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
  std::lock_guard<std::mutex> lock(seen->mutex);
  return seen->first_keys;
}

} // namespace

TEST_CASE(
  "a step's pushes reach the server first layers first, or in backward's order without priority",
  "[cluster][priority]") {
  const auto plan = sliced_mlp(1);
  const auto& groups = plan.keys.groups;
  REQUIRE(groups.size() >= 4);
  // Backward's order is not forward order, so the two runs below can tell them apart.
  std::vector<std::size_t> backward;
  for (const auto& g : groups) {
    REQUIRE(g.shard == 0);
    backward.push_back(g.keys.front());
  }
  auto by_forward = [&](std::size_t a, std::size_t b) {
    const auto& x = key_at(plan, 0, a);
    const auto& y = key_at(plan, 0, b);
    return std::make_pair(x.slot, x.offset) < std::make_pair(y.slot, y.offset);
  };
  auto forward = backward;
  std::sort(forward.begin(), forward.end(), by_forward);
  REQUIRE(forward != backward);
  CHECK(key_at(plan, 0, backward.front()).slot
        > key_at(plan, 0, backward.back()).slot); // last layer first

  const auto with = arrival_order(plan, true);
  REQUIRE(with.size() == forward.size());
  CHECK(with == forward);
  const auto without = arrival_order(plan, false);
  REQUIRE(without.size() == backward.size());
  CHECK(without == backward);
}

TEST_CASE("a fixed push order: the last layers backward's bytes cover, then first layers first",
          "[cluster][priority]") {
  // Given out of order: the order depends on the ranks and bytes only.
  const std::vector<ranked_push> pushes = {{3, 300}, {1, 100}, {5, 500}, {2, 200}, {4, 400}};
  using ranks = std::vector<std::uint64_t>;
  CHECK(fixed_push_order(pushes, 0) == ranks{1, 2, 3, 4, 5});   // nothing during backward
  CHECK(fixed_push_order(pushes, 1) == ranks{5, 1, 2, 3, 4});   // one push reaches 1 byte
  CHECK(fixed_push_order(pushes, 500) == ranks{5, 1, 2, 3, 4}); // exactly the last push
  CHECK(fixed_push_order(pushes, 501) == ranks{5, 4, 1, 2, 3}); // its bytes fall short: one more
  CHECK(fixed_push_order(pushes, 1 << 30) == ranks{5, 4, 3, 2, 1}); // all of it: backward's order
  CHECK(fixed_push_order({}, 100).empty());
}

TEST_CASE("a fixed push order holds the light last layers for the end", "[cluster][priority]") {
  using ranks = std::vector<std::uint64_t>;
  // Given out of order; ranks 4 and 5 are light: they go last, first layers first.
  const std::vector<ranked_push> pushes = {
    {3, 300}, {5, 500, true}, {1, 100}, {4, 400, true}, {2, 200}};
  CHECK(fixed_push_order(pushes, 0) == ranks{1, 2, 3, 4, 5});
  CHECK(fixed_push_order(pushes, 300)
        == ranks{3, 1, 2, 4, 5}); // the backward part starts below them
  CHECK(fixed_push_order(pushes, 301) == ranks{3, 2, 1, 4, 5});
  CHECK(fixed_push_order(pushes, 1 << 30) == ranks{3, 2, 1, 4, 5});
  // Every push light: first layers first.
  const std::vector<ranked_push> all = {{2, 200, true}, {1, 100, true}};
  CHECK(fixed_push_order(all, 1 << 30) == ranks{1, 2});
}

TEST_CASE("a fixed push order holds only the light bytes the forward's time carries",
          "[cluster][priority]") {
  using ranks = std::vector<std::uint64_t>;
  // Ranks 3, 4 and 5 are light, 1200 bytes together.
  const std::vector<ranked_push> pushes = {
    {3, 300, true}, {5, 500, true}, {1, 100}, {4, 400, true}, {2, 200}};
  std::vector<ranked_push> sorted = pushes;
  std::sort(sorted.begin(), sorted.end(),
            [](const ranked_push& a, const ranked_push& b) { return a.rank < b.rank; });
  CHECK(held_pushes(sorted, 1200) == 3);
  CHECK(held_pushes(sorted, 1199) == 2); // the highest first: 5 and 4 fit, 3 does not
  CHECK(held_pushes(sorted, 900) == 2);
  CHECK(held_pushes(sorted, 899) == 1);
  CHECK(held_pushes(sorted, 499) == 0); // not even the last one fits: none held
  CHECK(held_pushes(sorted, 0) == 0);
  CHECK(fixed_push_order(pushes, 0, 1200) == ranks{1, 2, 3, 4, 5});
  // 5 and 4 held; 3 goes with the others: first in the backward part, as backward makes it first.
  CHECK(fixed_push_order(pushes, 1, 900) == ranks{3, 1, 2, 4, 5});
  CHECK(fixed_push_order(pushes, 301, 900) == ranks{3, 2, 1, 4, 5});
  // Only 5 held: 4 and 3 lead the backward part.
  CHECK(fixed_push_order(pushes, 401, 500) == ranks{4, 3, 1, 2, 5});
  // None held: backward's order where it carries everything, as if none were light.
  CHECK(fixed_push_order(pushes, 1 << 30, 0) == ranks{5, 4, 3, 2, 1});
  CHECK(fixed_push_order(pushes, 0, 0) == ranks{1, 2, 3, 4, 5});
  // The default holds them all, as before.
  CHECK(fixed_push_order(pushes, 1 << 30) == fixed_push_order(pushes, 1 << 30, 1200));
}

TEST_CASE(
  "a planned LeNet's light last layers: its classifier's, up to 1% of the work, on every server",
  "[cluster][priority]") {
  auto job = test::synthetic_job("lenet", 64);
  job.shards = 2;
  job.nodes.servers = 2;
  job.nodes.workers = 1;
  job.topology.keys = key_plan_options{64 << 10, 0};
  const auto plan = plan_placement(job, facts);
  double work = 0;
  for (const auto& parameter : plan.parameters) {
    CHECK(parameter.forward_work >= 0);
    work += parameter.forward_work;
  }
  REQUIRE(work > 0);
  const auto order = forward_order_of(plan);
  const auto light = light_ranks(plan, order);
  // The classifier (its weight, then its bias) is the last layer: one key each at 64 KiB
  // slices, the two highest ranks, together under light_forward_share of the work.
  const auto slots = plan.parameters.size();
  REQUIRE(plan.parameters[slots - 2].numel * 4 <= (64 << 10));
  const double classifier =
    (plan.parameters[slots - 2].forward_work + plan.parameters[slots - 1].forward_work) / work;
  CHECK(classifier > 0);
  CHECK(classifier <= light_forward_share);
  REQUIRE(light.size() >= 2);
  REQUIRE(light.size() < plan.keys.groups.size());
  CHECK(std::is_sorted(light.begin(), light.end()));
  CHECK(light.back() == plan.keys.groups.size()); // ranks are 1 + forward position: the last key's
  // Each server's light pushes are its highest ranks and go last; together, the plan's light ranks.
  std::vector<std::uint64_t> seen;
  int servers = 0;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n) {
    if (plan.nodes[n].kind != node_kind::server)
      continue;
    ++servers;
    const auto pushes = pushes_to_node(plan, order, static_cast<int>(n));
    REQUIRE_FALSE(pushes.empty());
    const auto sequence = fixed_push_order(pushes, 1);
    REQUIRE(sequence.size() == pushes.size());
    std::size_t held = 0;
    while (held < pushes.size() && pushes[pushes.size() - 1 - held].light)
      ++held;
    for (std::size_t k = pushes.size() - held; k < pushes.size(); ++k) {
      CHECK(sequence[k] == pushes[k].rank);
      seen.push_back(pushes[k].rank);
    }
    CHECK(std::none_of(pushes.begin(), pushes.end() - static_cast<std::ptrdiff_t>(held),
                       [](const ranked_push& p) { return p.light; }));
    if (held < pushes.size())
      CHECK(sequence.front()
            == pushes[pushes.size() - 1 - held].rank); // the backward part below them
  }
  CHECK(servers == 2);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == light);
}

TEST_CASE("a plan of given parameters without their work has no light last layers",
          "[cluster][priority]") {
  auto job = test::synthetic_job("lenet", 64);
  const auto planned = plan_placement(job, facts);
  const auto given = plan_placement(job, facts, planned.parameters);
  CHECK_FALSE(light_ranks(planned, forward_order_of(planned)).empty());
  auto unknown = planned.parameters;
  for (auto& p : unknown)
    p.forward_work = 0;
  const auto without = plan_placement(job, facts, unknown);
  REQUIRE(without.keys.groups.size() == planned.keys.groups.size());
  CHECK(light_ranks(without, forward_order_of(without)).empty());
  CHECK(light_ranks(given, forward_order_of(given))
        == light_ranks(planned, forward_order_of(planned)));
}

TEST_CASE("a fixed push order refuses a rank twice, an unranked push, negative bytes or a light "
          "push below others",
          "[cluster][priority]") {
  auto refused = [](std::vector<ranked_push> pushes) -> std::string {
    try {
      fixed_push_order(std::move(pushes), 10);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  CHECK(refused({{2, 1}, {1, 1}, {2, 5}}) == "a fixed push order lists rank 2 twice");
  CHECK(refused({{1, 1}, {unranked, 1}}).find("needs every push ranked") != std::string::npos);
  CHECK(refused({{control_rank, 1}}).find("needs every push ranked") != std::string::npos);
  CHECK(refused({{7, -1}}) == "a fixed push order's push of rank 7 has negative bytes");
  CHECK(refused({{1, 1}, {2, 1, true}, {3, 1}})
        == "a fixed push order's light push of rank 2 is below rank 3, "
           "which is not light (light pushes are the last layers')");
}

TEST_CASE("each server node's pushes are the groups of its shards, every group once",
          "[cluster][priority]") {
  auto job = test::synthetic_job("mlp", 64);
  job.shards = 4;
  job.nodes.servers = 2;
  job.nodes.workers = 2;
  job.topology.workers = 2;
  job.topology.keys = key_plan_options{64 << 10, 0};
  const auto plan = plan_placement(job, facts);
  const auto order = forward_order_of(plan);
  std::vector<int> servers;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == node_kind::server)
      servers.push_back(static_cast<int>(n));
  REQUIRE(servers.size() == 2);
  std::vector<std::uint64_t> all;
  std::int64_t bytes = 0;
  for (auto node : servers) {
    const auto pushes = pushes_to_node(plan, order, node);
    CHECK_FALSE(pushes.empty()); // four shards over two servers: each holds some
    for (std::size_t i = 0; i < pushes.size(); ++i) {
      CHECK(pushes[i].rank != unranked);
      CHECK(pushes[i].bytes > 0);
      if (i > 0)
        CHECK(pushes[i - 1].rank < pushes[i].rank);
      all.push_back(pushes[i].rank);
      bytes += pushes[i].bytes;
    }
  }
  // Together: one push per group of the plan, the model's bytes once.
  REQUIRE(all.size() == plan.keys.groups.size());
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(bytes == plan.parameter_count * 4);
  // The ranks are those a channel gives the pushes of those groups.
  for (const auto& group : plan.keys.groups) {
    push_message m;
    m.shard = static_cast<std::uint32_t>(group.shard);
    m.push = push_of(plan, group);
    CHECK(std::binary_search(all.begin(), all.end(), frame_rank(m, order)));
  }
  CHECK(pushes_to_node(plan, order, 0).empty()); // the scheduler holds no shard
}

TEST_CASE("only a plan with several worker nodes orders its pushes in a fixed order",
          "[cluster][priority]") {
  for (int workers : {1, 2, 4})
    for (int servers : {1, 2}) {
      auto job = test::synthetic_job("mlp", 64);
      job.nodes.servers = servers;
      job.nodes.workers = workers;
      job.topology.workers =
        2 * workers; // two computes on each worker node: still one node's pushes
      const auto plan = plan_placement(job, facts);
      const auto worker_nodes =
        std::count_if(plan.nodes.begin(), plan.nodes.end(),
                      [](const planned_node& n) { return n.kind == node_kind::worker; });
      REQUIRE(worker_nodes == workers);
      CAPTURE(workers, servers);
      CHECK(needs_fixed_push_order(plan) == (workers > 1));
    }
  CHECK_FALSE(needs_fixed_push_order(sliced_mlp(1)));
}
