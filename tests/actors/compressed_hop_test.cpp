// Both ends of a compressed hop at the message level: pushes quantized with their residual
// kept (what a shard applies is exactly what was sent), compressed answers summed into what
// each sender holds so every replica holds the same weights, bit for bit, and the refusals: a
// push in another encoding, an answer in another encoding, an answer before any pull.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/compressed_hop.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/local_node.hpp>

using namespace troupe;

namespace {

// Two keys at 0.5, plain SGD at lr 1 (no momentum, no decay): after one update the weights are
// 0.5 minus the pushed mean.
push_target_actor plain_shard(caf::actor_system& sys) {
  shard_options o;
  o.optimizer.sgd = sgd_options{0, 0, false};
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = 1;
  auto start = [](std::int64_t n) {
    tensor t({n});
    t.fill(0.5f);
    return t;
  };
  return spawn_param_shard(sys, {shard_key{"a", start(6), false}, shard_key{"b", start(3), false}},
                           o);
}

caf::message push_of(int source, std::int64_t step, std::vector<tensor> grads) {
  gradient_push p;
  p.due = deadline::after(std::chrono::seconds(10));
  p.source = source;
  p.step = step;
  p.keys = {0, 1};
  p.gradients = std::move(grads);
  p.samples = 1;
  return caf::make_message(push_atom::value, std::move(p));
}

caf::message pull() {
  return caf::make_message(pull_atom::value, deadline::after(std::chrono::seconds(10)));
}

std::vector<tensor> random_gradients(std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<tensor> out{tensor({6}), tensor({3})};
  for (auto& t : out)
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.data()[i] = normal(rng);
  return out;
}

template <class Handle>
caf::expected<weight_set> ask(caf::scoped_actor& self, const Handle& to, caf::message msg) {
  caf::expected<weight_set> out = caf::error{};
  self->request(caf::actor_cast<caf::actor>(to), std::chrono::seconds(10), std::move(msg))
    .receive([&](weight_set& ws) { out = std::move(ws); }, [&](caf::error& e) { out = e; });
  return out;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// An answer that hands a push's gradients back as its weights, key for key.
weight_set echo_of(const gradient_push& p) {
  weight_set ws;
  ws.keys = p.keys;
  ws.weights = p.gradients;
  return ws;
}

// A target that answers every push with deltas encoded fp16, whatever the route says.
push_target_actor::behavior_type fp16_answerer() {
  return {
    [](push_atom, gradient_push& p) {
      auto ws = echo_of(p);
      ws.encoding = value_encoding::fp16;
      return ws;
    },
    [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
      return caf::make_error(caf::sec::unexpected_message);
    },
    [](pull_atom, deadline) {
      weight_set ws;
      ws.keys = {0, 1};
      ws.weights = {tensor({6}), tensor({3})};
      return ws;
    },
  };
}

// A target that answers every push with what it received, scales included (weights whole:
// the route compresses pushes only), so a test sees the push as the sending end sent it.
push_target_actor::behavior_type echo_target() {
  return {
    [](push_atom, gradient_push& p) {
      auto ws = echo_of(p);
      ws.scales = p.scales;
      return ws;
    },
    [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
      return caf::make_error(caf::sec::unexpected_message);
    },
    [](pull_atom, deadline) { return weight_set{}; },
  };
}

struct fixture {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  push_target_actor shard = plain_shard(sys);
  ~fixture() { self->send_exit(shard, caf::exit_reason::user_shutdown); }
};

compression_spec spec_of(const char* text) {
  std::string why;
  auto spec = parse_compression(text, why);
  REQUIRE(spec);
  return *spec;
}

} // namespace

TEST_CASE("a compressed push reaches the shard quantized, and its residual goes with the next") {
  fixture f;
  auto spec = spec_of("push:2bit:0.5");
  auto receiver = spawn_compressing_receiver(f.sys, f.shard, spec, "test hop");
  auto sender = spawn_compressing_sender(f.sys, receiver, spec, "test hop");
  // 0.3 stays below the threshold once; twice it is 0.6: 0.5 goes, 0.1 stays.
  auto g = [] {
    return std::vector<tensor>{tensor::from_values({6}, {0.3f, -0.3f, 0.7f, -1.2f, 0, 0.49f}),
                               tensor::from_values({3}, {0.5f, -0.5f, 0.1f})};
  };
  auto first = ask(f.self, sender, push_of(0, 0, g()));
  REQUIRE(first);
  REQUIRE(first->weights.size() == 2);
  REQUIRE(first->encoding == value_encoding::none); // pushes only: the weights come whole
  // The answer says what the push sent: 2 of key a's 6 values and 2 of b's 3.
  CHECK(first->values_pushed == 9);
  CHECK(first->values_sent == 4);
  // The shard applied {0, 0, 0.5, -0.5, 0, 0} and {0.5, -0.5, 0}: 0.5 minus that.
  CHECK(first->weights[0].to_host().data()[0] == 0.5f);
  CHECK(first->weights[0].data()[2] == 0.0f);
  CHECK(first->weights[0].data()[3] == 1.0f);
  CHECK(first->weights[1].data()[0] == 0.0f);
  CHECK(first->weights[1].data()[1] == 1.0f);
  CHECK(first->weights[1].data()[2] == 0.5f);
  auto second = ask(f.self, sender, push_of(0, 1, g()));
  REQUIRE(second);
  // Key a: 0.3 + 0.3 = 0.6 sends 0.5; -1.2 + residual -0.7 = -1.9 sends -0.5; 0.49 + 0.49 sends
  // 0.5.
  CHECK(second->weights[0].data()[0] == 0.0f);
  CHECK(second->weights[0].data()[1] == 1.0f);
  CHECK(second->weights[0].data()[3] == 1.5f);
  CHECK(second->weights[0].data()[5] == 0.0f);
  CHECK(second->values_pushed == 9); // all of a but its 0; b's 0.1 + 0.1 stays below
  CHECK(second->values_sent == 7);
  f.self->send_exit(sender, caf::exit_reason::user_shutdown);
}

TEST_CASE(
  "a fitted 2-bit push carries a scale per block, and over steps sends what the gradients add to") {
  fixture f;
  auto spec = spec_of("push:2bit:fit");
  auto sender = spawn_compressing_sender(f.sys, f.sys.spawn(echo_target), spec, "test hop");
  // Key 0 of 600 values (blocks of 256, 256, 88), each block at its own size; key 1 of 5.
  tensor big({600}), small({5});
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::int64_t i = 0; i < 600; ++i)
    big.data()[i] = normal(rng) * (i < 256 ? 1e-3f : (i < 512 ? 1.0f : 30.0f));
  for (std::int64_t i = 0; i < 5; ++i)
    small.data()[i] = normal(rng);
  const int steps = 20;
  std::vector<double> total(605, 0.0);
  float largest_scale = 0;
  for (int step = 0; step < steps; ++step) {
    auto echoed = ask(f.self, sender, push_of(0, step, {big, small}));
    REQUIRE(echoed);
    REQUIRE(echoed->weights.size() == 2);
    REQUIRE(echoed->scales.size() == 4); // 3 blocks of key 0, 1 of key 1
    if (step == 0) {
      CHECK(echoed->scales[0] < 0.01f); // each block's scale is of its own size
      CHECK(echoed->scales[1] > 0.1f);
      CHECK(echoed->scales[2] > 3.0f);
    }
    for (std::size_t k = 0; k < 2; ++k)
      for (std::int64_t i = 0; i < echoed->weights[k].numel(); ++i) {
        const float v = echoed->weights[k].data()[i];
        const float s = echoed->scales[k == 0 ? static_cast<std::size_t>(i) / two_bit_block : 3];
        REQUIRE((v == 0 || v == s || v == -s));
        total[k * 600 + static_cast<std::size_t>(i)] += v;
        largest_scale = std::max(largest_scale, s);
      }
  }
  // What was sent trails steps x the gradient by what the residual holds: less than a few of
  // its block's scales, against a total of 20 gradients.
  for (int block = 0; block < 3; ++block) {
    double owed = 0, added = 0;
    for (std::int64_t i = block * 256; i < std::min<std::int64_t>(600, (block + 1) * 256); ++i) {
      owed +=
        std::fabs(steps * static_cast<double>(big.data()[i]) - total[static_cast<std::size_t>(i)]);
      added += std::fabs(steps * static_cast<double>(big.data()[i]));
    }
    INFO("block " << block << ": owed " << owed << " of " << added);
    CHECK(owed < 0.1 * added); // sending nothing would owe all of it
  }
  CHECK(largest_scale > 0);
  f.self->send_exit(sender, caf::exit_reason::user_shutdown);
}

TEST_CASE("compressed answers leave every sender with the same weights, close to the shard's") {
  for (const char* text : {"fp16", "bf16", "2bit:0.25", "2bit:fit"}) {
    INFO(text);
    fixture f;
    const auto spec = spec_of(text);
    auto agg = spawn_aggregator(f.sys, f.shard, aggregator_options{2, 0, true, 0});
    auto receiver = spawn_compressing_receiver(f.sys, agg, spec, "test hop");
    auto s0 = spawn_compressing_sender(f.sys, receiver, spec, "compute 0 hop");
    auto s1 = spawn_compressing_sender(f.sys, receiver, spec, "compute 1 hop");
    auto start0 = ask(f.self, s0, pull()), start1 = ask(f.self, s1, pull());
    REQUIRE(start0);
    REQUIRE(start1);
    std::mt19937 rng(5);
    weight_set last0, last1;
    for (std::int64_t step = 0; step < 30; ++step) {
      auto g0 = random_gradients(rng), g1 = random_gradients(rng);
      auto pending = f.self->request(caf::actor_cast<caf::actor>(s1), std::chrono::seconds(10),
                                     push_of(1, step, g1));
      auto a0 = ask(f.self, s0, push_of(0, step, g0));
      REQUIRE(a0);
      pending.receive([&](weight_set& ws) { last1 = std::move(ws); },
                      [&](caf::error& e) { FAIL(error_text(e)); });
      last0 = std::move(*a0);
      REQUIRE(last0.weights.size() == 2);
      REQUIRE(last1.weights.size() == 2);
      for (std::size_t k = 0; k < 2; ++k)
        REQUIRE(same_bits(last0.weights[k], last1.weights[k]));
    }
    // The shard's own weights: what the senders hold trails them by at most the unsent delta.
    auto truth = ask(f.self, f.shard, pull());
    REQUIRE(truth);
    double gap = 0, size = 0;
    for (std::size_t k = 0; k < 2; ++k)
      for (std::int64_t i = 0; i < truth->weights[k].numel(); ++i) {
        gap += std::fabs(truth->weights[k].data()[i] - last0.weights[k].data()[i]);
        size += std::fabs(truth->weights[k].data()[i]);
      }
    CHECK(size > 0.5);
    CHECK(gap < 0.25 * size);
    f.self->send_exit(s0, caf::exit_reason::user_shutdown);
    f.self->send_exit(s1, caf::exit_reason::user_shutdown);
    f.self->send_exit(agg, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("the receiving end refuses a push in another encoding, naming both") {
  fixture f;
  auto receiver =
    spawn_compressing_receiver(f.sys, f.shard, spec_of("2bit:0.5"), "the hop into aggregator_0");
  auto plain = ask(f.self, receiver, push_of(3, 0, {tensor({6}), tensor({3})}));
  REQUIRE_FALSE(plain);
  CHECK(troupe_code(plain.error()) == errc::bad_request);
  CHECK(error_text(plain.error())
          .find("the hop into aggregator_0: a push of source 3 for keys 0, 1 came encoded "
                "none, and this route's pushes are 2bit")
        != std::string::npos);
}

TEST_CASE("neither end of a compressed hop answers a rewind, nor a shard one past its source's "
          "step, and each says why") {
  fixture f;
  auto spec = spec_of("fp16");
  auto receiver = spawn_compressing_receiver(f.sys, f.shard, spec, "the hop into aggregator_0");
  auto sender = spawn_compressing_sender(f.sys, receiver, spec, "compute 0 -> aggregator_0");
  auto rewind = caf::make_message(rewind_atom::value, std::int64_t{4}, std::int32_t{0},
                                  deadline::after(std::chrono::seconds(10)));
  for (const auto& [target, name] :
       {std::pair{push_target_actor{sender}, "compute 0 -> aggregator_0"},
        std::pair{push_target_actor{receiver}, "the hop into aggregator_0"}}) {
    INFO(name);
    auto answer = ask(f.self, target, rewind);
    REQUIRE_FALSE(answer);
    CHECK(troupe_code(answer.error()) == errc::bad_request);
    CHECK(error_text(answer.error())
          == std::string(name)
               + " is compressed and keeps no weights from before step 4: adopting a lost "
                 "worker's computes needs routes without compression");
  }
  auto from_shard = ask(f.self, f.shard, rewind);
  REQUIRE_FALSE(from_shard);
  CHECK(troupe_code(from_shard.error()) == errc::bad_request);
  CHECK(error_text(from_shard.error())
          .find("rewind to step 4 for source 0, whose step in flight here is 0")
        != std::string::npos);
}

TEST_CASE("compressed answers need a pull first, and the sending end refuses another encoding") {
  fixture f;
  auto spec = spec_of("2bit:0.5");
  SECTION("no pull passed the receiving end") {
    auto receiver = spawn_compressing_receiver(f.sys, f.shard, spec, "hop");
    auto sender = spawn_compressing_sender(f.sys, receiver, spec, "hop");
    auto a = ask(f.self, sender, push_of(0, 0, {tensor({6}), tensor({3})}));
    REQUIRE_FALSE(a);
    CHECK(troupe_code(a.error()) == errc::bad_request);
    CHECK(error_text(a.error()).find("no weights are held for key 0") != std::string::npos);
  }
  SECTION("an answer in fp16 on a 2bit route") {
    auto odd = f.sys.spawn(fp16_answerer);
    auto sender = spawn_compressing_sender(f.sys, odd, spec, "compute 0 -> aggregator_0");
    REQUIRE(ask(f.self, sender, pull()));
    auto a = ask(f.self, sender, push_of(0, 0, {tensor({6}), tensor({3})}));
    REQUIRE_FALSE(a);
    CHECK(troupe_code(a.error()) == errc::bad_data);
    CHECK(error_text(a.error()).find("came encoded fp16, and this route's answers are 2bit")
          != std::string::npos);
    f.self->send_exit(odd, caf::exit_reason::user_shutdown);
  }
  CHECK_THROWS_WITH(spawn_compressing_sender(f.sys, f.shard, compression_spec{}, "hop"),
                    Catch::Contains("nothing to compress"));
}
