// fully_connected_op against a triple loop (forward, dx, dw, db), including a conv-shaped
// input that is flattened implicitly and a changing batch size; finite differences; errors.
#include <catch2/catch.hpp>

#include "test_util.hpp"
#include <troupe/kernels/fully_connected.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

struct fc_reference {
  std::vector<double> y, dx, dw, db;
};

fc_reference reference_fc(const tensor& x, const tensor& w, const tensor* b, const tensor& dy) {
  std::int64_t n = x.dim(0), in = w.dim(1), out = w.dim(0);
  fc_reference r{std::vector<double>(n * out), std::vector<double>(n * in),
                 std::vector<double>(out * in), std::vector<double>(out)};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t o = 0; o < out; ++o) {
      double acc = b ? b->data()[o] : 0.0, g = dy.data()[i * out + o];
      for (std::int64_t k = 0; k < in; ++k) {
        acc += static_cast<double>(x.data()[i * in + k]) * w.data()[o * in + k];
        r.dx[i * in + k] += g * w.data()[o * in + k];
        r.dw[o * in + k] += g * x.data()[i * in + k];
      }
      r.y[i * out + o] = acc;
      r.db[o] += g;
    }
  return r;
}

void check_against_reference(const shape_t& xs, std::int64_t out, bool bias, std::uint64_t seed,
                             fully_connected_op& op) {
  std::int64_t in = shape_numel(xs) / xs[0];
  tensor x = random_tensor(xs, seed), w = random_tensor({out, in}, seed + 1);
  tensor b = random_tensor({out}, seed + 2), dy = random_tensor({xs[0], out}, seed + 3);
  tensor y({xs[0], out}), dx(xs), dw({out, in}), db({out});
  op.forward(x, w, bias ? &b : nullptr, y);
  op.backward(x, w, dy, &dx, dw, bias ? &db : nullptr);
  auto ref = reference_fc(x, w, bias ? &b : nullptr, dy);
  require_close(y, ref.y, 1e-4, 1e-4);
  require_close(dx, ref.dx, 1e-4, 1e-4);
  require_close(dw, ref.dw, 1e-4, 1e-4);
  if (bias)
    require_close(db, ref.db, 1e-4, 1e-4);
}

} // namespace

TEST_CASE("fully_connected matches a triple loop", "[fully_connected]") {
  fully_connected_op op;
  SECTION("MLP layer") {
    check_against_reference({16, 784}, 128, true, 1, op);
  }
  SECTION("conv output flattened, odd sizes, no bias") {
    check_against_reference({3, 5, 3, 3}, 7, false, 2, op);
  }
  SECTION("batch 1") {
    check_against_reference({1, 10}, 3, true, 3, op);
  }
  SECTION("changing batch size on one op") {
    check_against_reference({8, 20}, 6, true, 4, op);
    check_against_reference({5, 20}, 6, true, 5, op);
    check_against_reference({8, 20}, 6, true, 6, op);
  }
}

TEST_CASE("fully_connected without dx or db", "[fully_connected]") {
  fully_connected_op op;
  tensor x = random_tensor({4, 6}, 1), w = random_tensor({3, 6}, 2), dy = random_tensor({4, 3}, 3);
  tensor y({4, 3}), dw({3, 6});
  op.forward(x, w, nullptr, y);
  op.backward(x, w, dy, nullptr, dw, nullptr);
  require_close(dw, reference_fc(x, w, nullptr, dy).dw);
  CHECK(op.output_shape({4, 2, 3}, {3, 6}) == shape_t{4, 3});
}

TEST_CASE("fully_connected gradients match finite differences", "[fully_connected][gradient]") {
  fully_connected_op op;
  tensor x = random_tensor({3, 2, 2, 2}, 11), w = random_tensor({5, 8}, 12);
  tensor b = random_tensor({5}, 13), y({3, 5}), r = random_tensor({3, 5}, 14);
  tensor dx(x.shape()), dw(w.shape()), db({5});
  auto objective = [&] {
    op.forward(x, w, &b, y);
    return weighted_sum(y, r);
  };
  objective();
  op.backward(x, w, r, &dx, dw, &db);
  check_gradient("x", x, dx, objective);
  check_gradient("w", w, dw, objective);
  check_gradient("b", b, db, objective);
}

TEST_CASE("fully_connected rejects bad shapes with the shapes in the message",
          "[fully_connected][errors]") {
  fully_connected_op op;
  REQUIRE_THROWS_WITH(op.output_shape({4, 3, 3}, {10, 8}),
                      Catch::Contains("[4, 3, 3]") && Catch::Contains("[10, 8]"));
  REQUIRE_THROWS_WITH(op.output_shape({4}, {10, 4}), Catch::Contains("[4]"));
  tensor x({4, 8}), w({10, 8}), y_bad({4, 9}), b_bad({9});
  REQUIRE_THROWS_WITH(op.forward(x, w, nullptr, y_bad),
                      Catch::Contains("[4, 9]") && Catch::Contains("[4, 10]"));
  tensor y({4, 10});
  REQUIRE_THROWS_WITH(op.forward(x, w, &b_bad, y), Catch::Contains("[9]"));
  tensor dw_bad({8, 10});
  REQUIRE_THROWS_WITH(op.backward(x, w, y, nullptr, dw_bad, nullptr),
                      Catch::Contains("dw") && Catch::Contains("[8, 10]"));
}
