// The per-key call: names both ways, the state each rule keeps, SGD bit for bit as
// sgd_update, the step count, and the refusals (a state of another rule, mismatched shapes).
#include <catch2/catch.hpp>

#include <cstring>

#include "../test_util.hpp"
#include <troupe/kernels/optimizers/update_rule.hpp>

using namespace troupe;
using namespace troupe::test;

TEST_CASE("optimizer names read back as their kinds", "[optimizers]") {
  for (const auto& name : optimizer_names()) {
    const auto kind = optimizer_of_name(name);
    REQUIRE(kind.has_value());
    CHECK(optimizer_name(*kind) == name);
  }
  CHECK_FALSE(optimizer_of_name("adadelta").has_value());
  CHECK(optimizer_state_names(optimizer_kind::sgd) == std::vector<std::string>{"momentum"});
  CHECK(optimizer_state_names(optimizer_kind::adam).size() == 2);
  CHECK(initial_optimizer_state(optimizer_kind::adagrad, {2, 3}).tensors.at(0).shape()
        == shape_t{2, 3});
}

TEST_CASE("sgd through optimizer_update is sgd_update bit for bit", "[optimizers]") {
  update_rule r;
  r.sgd = sgd_options{0.9f, 1e-3f, true};
  tensor w1 = random_tensor({41}, 1), w2 = w1.clone(), v({41});
  auto state = initial_optimizer_state(r.kind, w1.shape());
  for (int s = 0; s < 3; ++s) {
    tensor g = random_tensor({41}, 10 + static_cast<std::uint64_t>(s));
    optimizer_update(r, 0.05f, w1, g, state, w1);
    sgd_update(r.sgd, 0.05f, w2, g, v, w2);
  }
  CHECK(state.steps == 3);
  CHECK(std::memcmp(w1.data(), w2.data(), w1.bytes()) == 0);
  CHECK(std::memcmp(state.tensors[0].data(), v.data(), v.bytes()) == 0);
}

TEST_CASE("optimizer_update refuses a state not its rule's or of another shape", "[optimizers]") {
  update_rule r;
  r.kind = optimizer_kind::adam;
  tensor w({4}), g({4});
  SECTION("sgd's state given to adam") {
    auto state = initial_optimizer_state(optimizer_kind::sgd, w.shape());
    REQUIRE_THROWS_WITH(optimizer_update(r, 0.1f, w, g, state, w),
                        Catch::Contains("adam keeps 2 state tensors, the state holds 1"));
  }
  SECTION("a moment of another shape") {
    auto state = initial_optimizer_state(r.kind, w.shape());
    state.tensors[1] = tensor({5});
    REQUIRE_THROWS_WITH(optimizer_update(r, 0.1f, w, g, state, w),
                        Catch::Contains("exp_avg_sq [5] and weights [4]"));
    CHECK(state.steps == 0);
  }
  SECTION("a gradient of another shape") {
    auto state = initial_optimizer_state(r.kind, w.shape());
    tensor bad({2, 2});
    REQUIRE_THROWS_WITH(optimizer_update(r, 0.1f, w, bad, state, w),
                        Catch::Contains("grad [2, 2]"));
  }
}
