// A backup's mirror of a compressed hop's receiving end: fed each step the primary's shard
// applied, its end holds what the primary's holds, so the first answer it makes once promoted
// is, bit for bit, the one the primary's end would have made; a failing backup shard is the
// answer.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/backup_mirror.hpp>
#include <troupe/cluster/local_node.hpp>

using namespace troupe;

namespace {

param_shard_actor plain_shard(caf::actor_system& sys) {
  shard_options o;
  o.optimizer.sgd = sgd_options{0.9f, 0, false};
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = 0.5f;
  auto start = [](std::int64_t n, float v) {
    tensor t({n});
    t.fill(v);
    return t;
  };
  return spawn_param_shard(
    sys, {shard_key{"a", start(300, 0.5f), false}, shard_key{"b", start(7, -0.25f), false}}, o);
}

// Forwards pushes to `shard`, keeping each as the shard got it (what a primary replicates).
push_target_actor::behavior_type tap(push_target_actor::pointer self, param_shard_actor shard,
                                     std::shared_ptr<std::vector<gradient_push>> applied) {
  return {
    [=](push_atom, gradient_push& p) -> caf::result<weight_set> {
      applied->push_back(p);
      return self->delegate(shard, push_atom::value, std::move(p));
    },
    [=](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
      return caf::make_error(caf::sec::unexpected_message);
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return self->delegate(shard, pull_atom::value, due);
    },
  };
}

// A push of step `step` as a 2-bit route's sending end marks it (values already quantized).
gradient_push push_of(std::int64_t step, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.2f);
  gradient_push p;
  p.due = deadline::after(std::chrono::seconds(10));
  p.step = step;
  p.keys = {0, 1};
  p.gradients = {tensor({300}), tensor({7})};
  for (auto& g : p.gradients)
    for (std::int64_t i = 0; i < g.numel(); ++i)
      g.data()[i] = normal(rng);
  p.samples = 1;
  p.encoding = value_encoding::two_bit;
  return p;
}

template <class Handle, class... Ts>
caf::expected<weight_set> ask(caf::scoped_actor& self, const Handle& to, Ts&&... xs) {
  caf::expected<weight_set> out = caf::error{};
  self->request(to, std::chrono::seconds(10), std::forward<Ts>(xs)...)
    .receive([&](weight_set& ws) { out = std::move(ws); }, [&](caf::error& e) { out = e; });
  return out;
}

caf::expected<std::int64_t> replicate(caf::scoped_actor& self, const shard_backup_actor& to,
                                      gradient_push p) {
  caf::expected<std::int64_t> out = caf::error{};
  self->request(to, std::chrono::seconds(10), replicate_atom::value, std::move(p))
    .receive([&](std::int64_t n) { out = n; }, [&](caf::error& e) { out = e; });
  return out;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && a.numel() > 0 && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

compression_spec two_bit_both_ways() {
  std::string why;
  auto spec = parse_compression("2bit:fit", why);
  REQUIRE(spec);
  REQUIRE(spec->answers == value_encoding::two_bit);
  return *spec;
}

struct fixture {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::vector<caf::actor> spawned;
  template <class Handle> Handle keep(Handle h) {
    spawned.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }
  ~fixture() {
    for (auto& a : spawned)
      self->send_exit(a, caf::exit_reason::user_shutdown);
  }
};

} // namespace

TEST_CASE("a promoted backup's receiving end answers the delta the primary's would have") {
  fixture f;
  const auto spec = two_bit_both_ways();
  auto applied = std::make_shared<std::vector<gradient_push>>();
  auto primary = f.keep(plain_shard(f.sys));
  auto backup = f.keep(plain_shard(f.sys));
  auto primary_end = f.keep(spawn_compressing_receiver(
    f.sys, f.keep(f.sys.spawn(tap, primary, applied)), spec, "the hop into aggregator_0"));
  auto backup_end =
    f.keep(spawn_compressing_receiver(f.sys, backup, spec, "the hop into aggregator_0 (backup)"));
  auto mirror = f.keep(spawn_backup_mirror(f.sys, backup, backup_end));
  REQUIRE(ask(f.self, primary_end, pull_atom::value, deadline::after(std::chrono::seconds(10))));
  std::mt19937 rng(7);
  for (std::int64_t step = 0; step < 5; ++step) {
    REQUIRE(ask(f.self, primary_end, push_atom::value, push_of(step, rng)));
    REQUIRE(applied->size() == static_cast<std::size_t>(step + 1));
    auto copied = replicate(f.self, mirror, applied->back());
    REQUIRE(copied);
    CHECK(*copied == step + 1);
  }
  // The primary lost: step 5 is pushed to the backup, promoted, as it would have been to it.
  auto next = push_of(5, rng);
  auto from_primary = ask(f.self, primary_end, push_atom::value, next);
  auto from_backup = ask(f.self, backup_end, push_atom::value, next);
  REQUIRE(from_primary);
  REQUIRE(from_backup);
  REQUIRE(from_primary->weights.size() == 2);
  REQUIRE(from_backup->weights.size() == 2);
  CHECK(from_backup->encoding == value_encoding::two_bit);
  CHECK(from_backup->scales == from_primary->scales);
  for (std::size_t k = 0; k < 2; ++k)
    CHECK(same_bits(from_backup->weights[k], from_primary->weights[k]));
  // Without the mirror the backup's end holds nothing, and could not answer at all.
  auto unfed = f.keep(spawn_compressing_receiver(f.sys, f.keep(plain_shard(f.sys)), spec, "hop"));
  auto refused = ask(f.self, unfed, push_atom::value, next);
  REQUIRE_FALSE(refused);
  CHECK(error_text(refused.error()).find("no weights are held for key 0") != std::string::npos);
}

TEST_CASE("a backup mirror whose shard refuses the push answers with the refusal") {
  fixture f;
  const auto spec = two_bit_both_ways();
  auto backup = f.keep(plain_shard(f.sys));
  auto end = f.keep(spawn_compressing_receiver(f.sys, backup, spec, "hop"));
  auto mirror = f.keep(spawn_backup_mirror(f.sys, backup, end));
  std::mt19937 rng(3);
  auto bad = push_of(0, rng);
  bad.encoding = value_encoding::none;
  bad.keys = {0, 9}; // the shard owns keys 0..1
  auto copied = replicate(f.self, mirror, bad);
  REQUIRE_FALSE(copied);
  CHECK(error_text(copied.error()).find("the shard owns keys 0..1") != std::string::npos);
}
