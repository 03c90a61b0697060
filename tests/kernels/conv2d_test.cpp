// conv2d_op against direct loops (forward and all three gradients) at shapes that exercise
// oneDNN's different paths: plain first layers (1-3 channels), blocked layers (16+ channels),
// stride 2, padding, odd sizes, groups, batch 1 and a changing batch size; then a
// finite-difference check of dx, dw and db, and the error messages.
#include <catch2/catch.hpp>

#include "test_util.hpp"
#include <troupe/kernels/conv2d.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

struct conv_reference {
  std::vector<double> y, dx, dw, db;
};

// Direct loops over every (output, input, tap) triple, in double.
conv_reference reference_conv(const conv2d_params& p, const tensor& x, const tensor& w,
                              const tensor* b, const tensor& dy, const shape_t& ys) {
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  conv_reference r{std::vector<double>(shape_numel(ys)), std::vector<double>(x.numel()),
                   std::vector<double>(w.numel()), std::vector<double>(ws[0])};
  std::int64_t k_per_group = ws[0] / p.groups, c_per_group = ws[1];
  for (std::int64_t n = 0; n < xs[0]; ++n)
    for (std::int64_t k = 0; k < ws[0]; ++k)
      for (std::int64_t oh = 0; oh < ys[2]; ++oh)
        for (std::int64_t ow = 0; ow < ys[3]; ++ow) {
          std::int64_t yi = at4(ys, n, k, oh, ow);
          double acc = b ? b->data()[k] : 0.0;
          double g = dy.data()[yi];
          r.db[k] += g;
          for (std::int64_t c = 0; c < c_per_group; ++c)
            for (std::int64_t i = 0; i < ws[2]; ++i)
              for (std::int64_t j = 0; j < ws[3]; ++j) {
                std::int64_t h = oh * p.stride_h - p.pad_h + i, v = ow * p.stride_w - p.pad_w + j;
                if (h < 0 || h >= xs[2] || v < 0 || v >= xs[3])
                  continue;
                std::int64_t xi = at4(xs, n, (k / k_per_group) * c_per_group + c, h, v);
                std::int64_t wi = at4(ws, k, c, i, j);
                acc += static_cast<double>(x.data()[xi]) * w.data()[wi];
                r.dx[xi] += g * w.data()[wi];
                r.dw[wi] += g * x.data()[xi];
              }
          r.y[yi] = acc;
        }
  return r;
}

void check_against_reference(const conv2d_params& p, const shape_t& xs, const shape_t& ws,
                             bool bias, std::uint64_t seed) {
  conv2d_op op(p);
  tensor x = random_tensor(xs, seed), w = random_tensor(ws, seed + 1);
  tensor b = random_tensor({ws[0]}, seed + 2);
  shape_t ys = op.output_shape(xs, ws);
  tensor y(ys), dy = random_tensor(ys, seed + 3), dx(xs), dw(ws), db({ws[0]});
  op.forward(x, w, bias ? &b : nullptr, y);
  op.backward(x, w, dy, &dx, dw, bias ? &db : nullptr);
  auto ref = reference_conv(p, x, w, bias ? &b : nullptr, dy, ys);
  require_close(y, ref.y, 1e-4, 1e-4);
  require_close(dx, ref.dx, 1e-4, 1e-4);
  require_close(dw, ref.dw, 1e-4, 1e-3);
  if (bias)
    require_close(db, ref.db, 1e-4, 1e-3);
}

} // namespace

TEST_CASE("conv2d output shape", "[conv2d]") {
  conv2d_op same({1, 1, 2, 2, 1});
  CHECK(same.output_shape({128, 1, 28, 28}, {32, 1, 5, 5}) == shape_t{128, 32, 28, 28});
  conv2d_op down({2, 2, 1, 1, 1});
  CHECK(down.output_shape({8, 16, 32, 32}, {32, 16, 3, 3}) == shape_t{8, 32, 16, 16});
  CHECK(down.output_shape({1, 3, 7, 6}, {4, 3, 3, 3}) == shape_t{1, 4, 4, 3});
  conv2d_op grouped({1, 1, 0, 0, 4});
  CHECK(grouped.output_shape({2, 8, 5, 5}, {12, 2, 3, 3}) == shape_t{2, 12, 3, 3});
}

TEST_CASE("conv2d matches direct loops", "[conv2d]") {
  SECTION("first layer, one input channel, pad 2 (LeNet conv1)") {
    check_against_reference({1, 1, 2, 2, 1}, {3, 1, 12, 12}, {8, 1, 5, 5}, true, 10);
  }
  SECTION("three input channels, no bias (ResNet stem)") {
    check_against_reference({1, 1, 1, 1, 1}, {2, 3, 9, 9}, {16, 3, 3, 3}, false, 20);
  }
  SECTION("blocked layout, 16 -> 16 channels, pad 1") {
    check_against_reference({1, 1, 1, 1, 1}, {2, 16, 8, 8}, {16, 16, 3, 3}, false, 30);
  }
  SECTION("stride 2, 16 -> 32 channels, odd size") {
    check_against_reference({2, 2, 1, 1, 1}, {3, 16, 9, 7}, {32, 16, 3, 3}, false, 40);
  }
  SECTION("channels that are not a multiple of the block, batch 1") {
    check_against_reference({1, 1, 1, 0, 1}, {1, 5, 6, 7}, {7, 5, 3, 2}, true, 50);
  }
  SECTION("groups = 2 and groups = channels (depthwise)") {
    check_against_reference({1, 1, 1, 1, 2}, {2, 4, 6, 6}, {6, 2, 3, 3}, true, 60);
    check_against_reference({1, 1, 1, 1, 8}, {2, 8, 5, 5}, {8, 1, 3, 3}, false, 70);
  }
  SECTION("asymmetric stride and padding, 5x5 kernel, 32 -> 64 channels") {
    check_against_reference({1, 2, 2, 1, 1}, {2, 32, 7, 9}, {64, 32, 5, 5}, true, 80);
  }
}

TEST_CASE("conv2d caches per shape and follows the buffers it is given", "[conv2d]") {
  conv2d_params p{1, 1, 1, 1, 1};
  conv2d_op op(p);
  shape_t ws{16, 16, 3, 3};
  tensor w = random_tensor(ws, 1);
  for (std::int64_t n : {4, 3, 4, 1}) {
    shape_t xs{n, 16, 6, 6};
    tensor x = random_tensor(xs, 100 + n);
    shape_t ys = op.output_shape(xs, ws);
    tensor y(ys), dy = random_tensor(ys, 200 + n), dx(xs), dw(ws);
    op.forward(x, w, nullptr, y);
    // A different input buffer in backward than in forward must be honoured (no stale copy).
    tensor x2 = random_tensor(xs, 300 + n);
    tensor w2 = random_tensor(ws, 400 + n);
    op.backward(x2, w2, dy, &dx, dw, nullptr);
    auto ref_y = reference_conv(p, x, w, nullptr, dy, ys);
    auto ref_b = reference_conv(p, x2, w2, nullptr, dy, ys);
    require_close(y, ref_y.y);
    require_close(dx, ref_b.dx);
    require_close(dw, ref_b.dw, 1e-4, 1e-3);
  }
}

TEST_CASE("conv2d training steps reuse buffers whose values change", "[conv2d]") {
  // As in training: the same x / w buffers get new values every step, and from the second
  // step on backward-weights reads the blocked copy of x that forward left behind.
  conv2d_params p{2, 2, 1, 1, 1};
  conv2d_op op(p);
  shape_t xs{3, 16, 9, 9}, ws{32, 16, 3, 3};
  shape_t ys = op.output_shape(xs, ws);
  tensor x(xs), w(ws), y(ys), dy(ys), dx(xs), dw(ws);
  for (std::uint64_t step = 0; step < 3; ++step) {
    x.copy_from(random_tensor(xs, 10 * step + 1));
    w.copy_from(random_tensor(ws, 10 * step + 2));
    dy.copy_from(random_tensor(ys, 10 * step + 3));
    op.forward(x, w, nullptr, y);
    op.backward(x, w, dy, &dx, dw, nullptr);
    auto ref = reference_conv(p, x, w, nullptr, dy, ys);
    require_close(y, ref.y);
    require_close(dx, ref.dx);
    require_close(dw, ref.dw, 1e-4, 1e-3);
  }
}

TEST_CASE("conv2d without dx still gives dw and db", "[conv2d]") {
  conv2d_params p{1, 1, 2, 2, 1};
  conv2d_op op(p);
  shape_t xs{2, 1, 8, 8}, ws{4, 1, 5, 5};
  tensor x = random_tensor(xs, 1), w = random_tensor(ws, 2), b = random_tensor({4}, 3);
  shape_t ys = op.output_shape(xs, ws);
  tensor y(ys), dy = random_tensor(ys, 4), dw(ws), db({4});
  op.forward(x, w, &b, y);
  op.backward(x, w, dy, nullptr, dw, &db);
  auto ref = reference_conv(p, x, w, &b, dy, ys);
  require_close(dw, ref.dw, 1e-4, 1e-3);
  require_close(db, ref.db, 1e-4, 1e-3);
}

TEST_CASE("conv2d gradients match finite differences", "[conv2d][gradient]") {
  struct config {
    conv2d_params p;
    shape_t x, w;
  };
  for (const auto& c : {config{{2, 1, 1, 0, 1}, {2, 3, 5, 6}, {4, 3, 3, 2}},
                        config{{1, 1, 1, 1, 2}, {1, 4, 4, 4}, {4, 2, 3, 3}},
                        config{{1, 1, 1, 1, 1}, {1, 16, 3, 3}, {8, 16, 3, 3}}}) {
    conv2d_op op(c.p);
    tensor x = random_tensor(c.x, 11), w = random_tensor(c.w, 12), b = random_tensor({c.w[0]}, 13);
    shape_t ys = op.output_shape(c.x, c.w);
    tensor y(ys), r = random_tensor(ys, 14), dx(c.x), dw(c.w), db({c.w[0]});
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
}

TEST_CASE("conv2d rejects bad shapes with the shapes in the message", "[conv2d][errors]") {
  conv2d_op op({1, 1, 0, 0, 1});
  tensor x({2, 3, 5, 5}), w({4, 2, 3, 3}), y({2, 4, 3, 3});
  REQUIRE_THROWS_WITH(op.forward(x, w, nullptr, y),
                      Catch::Contains("[2, 3, 5, 5]") && Catch::Contains("[4, 2, 3, 3]"));
  tensor w_ok({4, 3, 3, 3}), y_bad({2, 4, 4, 4});
  REQUIRE_THROWS_WITH(op.forward(x, w_ok, nullptr, y_bad),
                      Catch::Contains("[2, 4, 4, 4]") && Catch::Contains("[2, 4, 3, 3]"));
  tensor b_bad({5});
  REQUIRE_THROWS_AS(op.forward(x, w_ok, &b_bad, y), std::invalid_argument);
  tensor big_w({4, 3, 7, 7});
  REQUIRE_THROWS_WITH(op.output_shape(x.shape(), big_w.shape()), Catch::Contains("larger"));
  tensor dy_bad({2, 4, 2, 2}), dw({4, 3, 3, 3});
  REQUIRE_THROWS_WITH(op.backward(x, w_ok, dy_bad, nullptr, dw, nullptr),
                      Catch::Contains("dy") && Catch::Contains("[2, 4, 2, 2]"));
  REQUIRE_THROWS_AS(conv2d_op({0, 1, 0, 0, 1}), std::invalid_argument);
  REQUIRE_THROWS_WITH(conv2d_op({1, 1, 0, 0, 2}).output_shape({1, 3, 4, 4}, {2, 1, 1, 1}),
                      Catch::Contains("groups"));
}
