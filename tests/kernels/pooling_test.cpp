// pool2d_op against PyTorch-convention loops: max (padding never wins), average (padding in
// the divisor, but not the part of a ceil-mode window past the padded input), global average,
// floor and ceil output sizes; finite differences of every backward; the error paths.
#include <catch2/catch.hpp>

#include <limits>

#include "test_util.hpp"
#include <troupe/kernels/pooling.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

struct pool_reference {
  std::vector<double> y, dx;
};

pool_reference reference_pool(const pool2d_params& p, const tensor& x, const tensor& dy,
                              const shape_t& ys) {
  const auto& xs = x.shape();
  bool global = p.kind == pool_kind::global_average;
  std::int64_t kh = global ? xs[2] : p.kernel_h, kw = global ? xs[3] : p.kernel_w;
  std::int64_t sh = global ? 1 : p.stride_h, sw = global ? 1 : p.stride_w;
  std::int64_t ph = global ? 0 : p.pad_h, pw = global ? 0 : p.pad_w;
  pool_reference r{std::vector<double>(shape_numel(ys)), std::vector<double>(x.numel())};
  for (std::int64_t n = 0; n < xs[0]; ++n)
    for (std::int64_t c = 0; c < xs[1]; ++c)
      for (std::int64_t oh = 0; oh < ys[2]; ++oh)
        for (std::int64_t ow = 0; ow < ys[3]; ++ow) {
          std::int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
          std::int64_t h1 = std::min(h0 + kh, xs[2] + ph), w1 = std::min(w0 + kw, xs[3] + pw);
          double divisor = static_cast<double>((h1 - h0) * (w1 - w0));
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          std::int64_t best_i = -1;
          for (std::int64_t h = std::max<std::int64_t>(h0, 0); h < std::min(h1, xs[2]); ++h)
            for (std::int64_t w = std::max<std::int64_t>(w0, 0); w < std::min(w1, xs[3]); ++w) {
              std::int64_t xi = at4(xs, n, c, h, w);
              sum += x.data()[xi];
              if (x.data()[xi] > best) {
                best = x.data()[xi];
                best_i = xi;
              }
            }
          std::int64_t yi = at4(ys, n, c, oh, ow);
          double g = dy.data()[yi];
          if (p.kind == pool_kind::max) {
            r.y[yi] = best;
            r.dx[best_i] += g;
          } else {
            r.y[yi] = sum / divisor;
            for (std::int64_t h = std::max<std::int64_t>(h0, 0); h < std::min(h1, xs[2]); ++h)
              for (std::int64_t w = std::max<std::int64_t>(w0, 0); w < std::min(w1, xs[3]); ++w)
                r.dx[at4(xs, n, c, h, w)] += g / divisor;
          }
        }
  return r;
}

pool2d_params make_params(pool_kind kind, std::int64_t k, std::int64_t s, std::int64_t pad,
                          bool ceil_mode) {
  pool2d_params p;
  p.kind = kind;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = s;
  p.pad_h = p.pad_w = pad;
  p.ceil_mode = ceil_mode;
  return p;
}

void check_against_reference(const pool2d_params& p, const shape_t& xs, std::uint64_t seed) {
  pool2d_op op(p);
  tensor x = random_distinct(xs, seed);
  shape_t ys = op.output_shape(xs);
  tensor y(ys), dy = random_tensor(ys, seed + 1), dx(xs);
  op.forward(x, y, true);
  op.backward(dy, dx);
  auto ref = reference_pool(p, x, dy, ys);
  require_close(y, ref.y, 1e-5, 1e-5);
  require_close(dx, ref.dx, 1e-5, 1e-5);
  tensor y_infer(ys);
  op.forward(x, y_infer, false);
  require_close(y_infer, ref.y, 1e-5, 1e-5);
}

} // namespace

TEST_CASE("pool2d output shapes follow PyTorch", "[pooling]") {
  CHECK(pool2d_op(make_params(pool_kind::max, 2, 2, 0, false)).output_shape({2, 3, 7, 7})
        == shape_t{2, 3, 3, 3});
  CHECK(pool2d_op(make_params(pool_kind::max, 2, 2, 0, true)).output_shape({2, 3, 7, 7})
        == shape_t{2, 3, 4, 4});
  CHECK(pool2d_op(make_params(pool_kind::max, 3, 2, 1, true)).output_shape({1, 1, 6, 6})
        == shape_t{1, 1, 4, 4});
  CHECK(pool2d_op(make_params(pool_kind::max, 3, 3, 1, true)).output_shape({1, 1, 5, 5})
        == shape_t{1, 1, 2, 2}); // a 3rd window would start in the right padding
  CHECK(pool2d_op(make_params(pool_kind::average, 3, 2, 0, true)).output_shape({1, 1, 8, 8})
        == shape_t{1, 1, 4, 4});
  CHECK(
    pool2d_op(make_params(pool_kind::global_average, 1, 1, 0, false)).output_shape({5, 64, 8, 8})
    == shape_t{5, 64, 1, 1});
}

TEST_CASE("pool2d matches reference loops", "[pooling]") {
  SECTION("max 2x2 stride 2 (LeNet)") {
    check_against_reference(make_params(pool_kind::max, 2, 2, 0, false), {3, 4, 8, 8}, 1);
  }
  SECTION("max 3x3 stride 2 pad 1, odd size") {
    check_against_reference(make_params(pool_kind::max, 3, 2, 1, false), {2, 3, 7, 9}, 2);
  }
  SECTION("max ceil mode, batch 1") {
    check_against_reference(make_params(pool_kind::max, 2, 2, 0, true), {1, 2, 7, 5}, 3);
    check_against_reference(make_params(pool_kind::max, 3, 2, 1, true), {1, 2, 8, 6}, 4);
  }
  SECTION("average 3x3 stride 1 pad 1 (Inception)") {
    check_against_reference(make_params(pool_kind::average, 3, 1, 1, false), {2, 3, 5, 6}, 5);
  }
  SECTION("average 2x2 stride 2, odd size, floor") {
    check_against_reference(make_params(pool_kind::average, 2, 2, 0, false), {2, 2, 7, 7}, 6);
  }
  SECTION("average ceil mode: windows past the edge divide by fewer cells") {
    check_against_reference(make_params(pool_kind::average, 3, 2, 0, true), {2, 3, 8, 8}, 7);
    check_against_reference(make_params(pool_kind::average, 3, 2, 1, true), {1, 2, 8, 7}, 8);
  }
  SECTION("global average") {
    check_against_reference(make_params(pool_kind::global_average, 1, 1, 0, false), {3, 16, 5, 4},
                            9);
  }
  SECTION("a changing batch size reuses nothing stale") {
    auto p = make_params(pool_kind::max, 2, 2, 0, false);
    check_against_reference(p, {4, 3, 6, 6}, 10);
    check_against_reference(p, {3, 3, 6, 6}, 11);
  }
}

TEST_CASE("pool2d gradients match finite differences", "[pooling][gradient]") {
  for (const auto& p :
       {make_params(pool_kind::max, 2, 2, 0, false), make_params(pool_kind::max, 3, 2, 1, true),
        make_params(pool_kind::average, 3, 2, 1, true),
        make_params(pool_kind::global_average, 1, 1, 0, false)}) {
    pool2d_op op(p);
    shape_t xs{2, 2, 5, 5};
    // Values 0.05 apart with a 0.01 step: the arg-max never changes under the perturbation.
    tensor x = random_distinct(xs, 31, 0.05f);
    shape_t ys = op.output_shape(xs);
    tensor y(ys), r = random_tensor(ys, 32), dx(xs);
    auto objective = [&] {
      op.forward(x, y, true);
      return weighted_sum(y, r);
    };
    objective();
    op.backward(r, dx);
    check_gradient("x", x, dx, objective);
  }
}

TEST_CASE("pool2d rejects bad shapes and parameters", "[pooling][errors]") {
  pool2d_op op(make_params(pool_kind::max, 3, 1, 0, false));
  REQUIRE_THROWS_WITH(op.output_shape({1, 1, 2, 2}), Catch::Contains("[1, 1, 2, 2]"));
  REQUIRE_THROWS_WITH(op.output_shape({4, 4}), Catch::Contains("[4, 4]"));
  tensor x({1, 1, 4, 4}), y_bad({1, 1, 3, 3});
  REQUIRE_THROWS_WITH(op.forward(x, y_bad, true),
                      Catch::Contains("[1, 1, 3, 3]") && Catch::Contains("[1, 1, 2, 2]"));
  tensor dy({1, 1, 2, 2}), dx({1, 1, 4, 4});
  pool2d_op fresh(make_params(pool_kind::max, 3, 1, 0, false));
  REQUIRE_THROWS_AS(fresh.backward(dy, dx), std::logic_error);
  REQUIRE_THROWS_AS(pool2d_op(make_params(pool_kind::max, 2, 0, 0, false)), std::invalid_argument);
  REQUIRE_THROWS_WITH(pool2d_op(make_params(pool_kind::max, 2, 2, 2, false)),
                      Catch::Contains("padding"));
}

TEST_CASE("max pooling ties go to the first cell of the window", "[pooling]") {
  for (const auto& p :
       {make_params(pool_kind::max, 2, 2, 0, false), make_params(pool_kind::max, 3, 2, 1, false)}) {
    pool2d_op op(p);
    shape_t xs{1, 2, 6, 6};
    tensor x(xs), y(op.output_shape(xs)), dx(xs);
    tensor dy = random_tensor(y.shape(), 1, 1.0f, 2.0f);
    op.forward(x, y, true);
    op.backward(dy, dx);
    auto ref = reference_pool(p, x, dy, y.shape()); // strict '>' keeps the first maximum
    require_close(dx, ref.dx, 0, 0);
  }
}
