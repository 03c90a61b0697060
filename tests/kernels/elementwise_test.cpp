// ReLU, add, accumulate, channel concatenation, flatten and the option-A shortcut against
// plain loops, finite differences of each backward, and their error messages. Sizes include
// one above the parallel grain so the threaded path runs too.
#include <catch2/catch.hpp>

#include "test_util.hpp"
#include <troupe/kernels/elementwise.hpp>

using namespace troupe;
using namespace troupe::test;

TEST_CASE("relu forward and backward", "[elementwise]") {
  for (const shape_t& s : {shape_t{3, 5}, shape_t{4, 16, 33, 31}}) {
    tensor x = random_tensor(s, 1), y(s), dy = random_tensor(s, 2), dx(s);
    relu_forward(x, y);
    relu_backward(y, dy, dx);
    std::vector<double> want_y(x.numel()), want_dx(x.numel());
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      want_y[i] = std::max(0.0f, x.data()[i]);
      want_dx[i] = x.data()[i] > 0 ? dy.data()[i] : 0.0;
    }
    require_close(y, want_y, 0, 0);
    require_close(dx, want_dx, 0, 0);
    // In place, as layers use it.
    relu_forward(x, x);
    require_close(x, want_y, 0, 0);
    relu_backward(y, dy, dy);
    require_close(dy, want_dx, 0, 0);
  }
}

TEST_CASE("add and accumulate", "[elementwise]") {
  shape_t s{2, 70000};
  tensor a = random_tensor(s, 1), b = random_tensor(s, 2), y(s);
  add_forward(a, b, y);
  std::vector<double> sum(a.numel());
  for (std::int64_t i = 0; i < a.numel(); ++i)
    sum[i] = static_cast<double>(a.data()[i]) + b.data()[i];
  require_close(y, sum, 1e-6, 0);
  tensor acc = a.clone();
  accumulate(b, acc);
  require_close(acc, sum, 1e-6, 0);
  add_forward(a, b, a); // y aliasing a
  require_close(a, sum, 1e-6, 0);
}

TEST_CASE("elementwise gradients match finite differences", "[elementwise][gradient]") {
  SECTION("relu") {
    tensor x = random_away_from_zero({3, 4, 5}, 1), y(x.shape()), r = random_tensor(x.shape(), 2);
    tensor dx(x.shape());
    auto objective = [&] {
      relu_forward(x, y);
      return weighted_sum(y, r);
    };
    objective();
    relu_backward(y, r, dx);
    check_gradient("x", x, dx, objective);
  }
  SECTION("add: dy flows to both inputs") {
    tensor a = random_tensor({2, 6}, 3), b = random_tensor({2, 6}, 4), y({2, 6});
    tensor r = random_tensor({2, 6}, 5);
    auto objective = [&] {
      add_forward(a, b, y);
      return weighted_sum(y, r);
    };
    check_gradient("a", a, r, objective);
    check_gradient("b", b, r, objective);
  }
}

TEST_CASE("concat_channels forward and backward", "[elementwise]") {
  tensor a = random_tensor({2, 3, 4, 5}, 1), b = random_tensor({2, 1, 4, 5}, 2);
  tensor c = random_tensor({2, 4, 4, 5}, 3);
  shape_t ys = concat_channels_shape({a.shape(), b.shape(), c.shape()});
  REQUIRE(ys == shape_t{2, 8, 4, 5});
  tensor y(ys);
  concat_channels_forward({&a, &b, &c}, y);
  std::vector<double> want(y.numel());
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t ch = 0; ch < 8; ++ch)
      for (std::int64_t k = 0; k < 20; ++k) {
        const tensor& src = ch < 3 ? a : ch < 4 ? b : c;
        std::int64_t sc = ch < 3 ? ch : ch < 4 ? ch - 3 : ch - 4;
        want[(n * 8 + ch) * 20 + k] = src.data()[(n * src.dim(1) + sc) * 20 + k];
      }
  require_close(y, want, 0, 0);
  tensor da(a.shape()), db(b.shape()), dc(c.shape());
  concat_channels_backward(y, {&da, &db, &dc});
  require_close(da, a, 0, 0);
  require_close(db, b, 0, 0);
  require_close(dc, c, 0, 0);

  SECTION("finite differences") {
    tensor r = random_tensor(ys, 9);
    auto objective = [&] {
      concat_channels_forward({&a, &b, &c}, y);
      return weighted_sum(y, r);
    };
    concat_channels_backward(r, {&da, &db, &dc});
    check_gradient("a", a, da, objective);
    check_gradient("b", b, db, objective);
    check_gradient("c", c, dc, objective);
  }
  SECTION("NC inputs") {
    tensor p = random_tensor({3, 2}, 4), q = random_tensor({3, 5}, 5), pq({3, 7});
    concat_channels_forward({&p, &q}, pq);
    CHECK(pq.data()[7 + 2] == q.data()[5]);
    CHECK(pq.data()[7 + 1] == p.data()[3]);
  }
}

TEST_CASE("flatten is a view", "[elementwise]") {
  tensor x = random_tensor({4, 3, 2, 2}, 1);
  tensor f = flatten(x);
  CHECK(f.shape() == shape_t{4, 12});
  CHECK(f.shares_storage_with(x));
  REQUIRE_THROWS_AS(flatten(tensor()), std::invalid_argument);
}

TEST_CASE("shortcut_pad subsamples and zero-pads channels", "[elementwise]") {
  for (std::int64_t stride : {1, 2}) {
    shape_t xs{2, 3, 5, 4};
    tensor x = random_tensor(xs, 10 + stride);
    shape_t ys = shortcut_pad_shape(xs, 8, stride);
    REQUIRE(ys == shape_t{2, 8, stride == 2 ? 3 : 5, stride == 2 ? 2 : 4});
    tensor y = random_tensor(ys, 1); // garbage that must be overwritten
    shortcut_pad_forward(x, stride, y);
    std::vector<double> want(y.numel(), 0.0);
    std::int64_t front = (8 - 3) / 2;
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t h = 0; h < ys[2]; ++h)
          for (std::int64_t w = 0; w < ys[3]; ++w)
            want[at4(ys, n, c + front, h, w)] = x.data()[at4(xs, n, c, h * stride, w * stride)];
    require_close(y, want, 0, 0);

    tensor r = random_tensor(ys, 20), dx = random_tensor(xs, 21);
    shortcut_pad_backward(r, stride, dx);
    auto objective = [&] {
      shortcut_pad_forward(x, stride, y);
      return weighted_sum(y, r);
    };
    check_gradient("x", x, dx, objective);
  }
}

TEST_CASE("elementwise ops reject mismatched shapes with the shapes in the message",
          "[elementwise][errors]") {
  tensor a({2, 3}), b({3, 2}), y({2, 3});
  REQUIRE_THROWS_WITH(relu_forward(a, b), Catch::Contains("[2, 3]") && Catch::Contains("[3, 2]"));
  REQUIRE_THROWS_WITH(relu_backward(a, b, y), Catch::Contains("[3, 2]"));
  REQUIRE_THROWS_WITH(add_forward(a, b, y), Catch::Contains("[3, 2]"));
  REQUIRE_THROWS_WITH(accumulate(a, b), Catch::Contains("accumulate"));
  REQUIRE_THROWS_WITH(concat_channels_shape({{2, 3, 4, 4}, {2, 3, 4, 5}}),
                      Catch::Contains("[2, 3, 4, 5]"));
  REQUIRE_THROWS_AS(concat_channels_shape({}), std::invalid_argument);
  tensor c1({2, 3, 4, 4}), c2({2, 1, 4, 4}), bad({2, 5, 4, 4});
  REQUIRE_THROWS_WITH(concat_channels_forward({&c1, &c2}, bad),
                      Catch::Contains("[2, 5, 4, 4]") && Catch::Contains("[2, 4, 4, 4]"));
  REQUIRE_THROWS_WITH(shortcut_pad_shape({2, 8, 4, 4}, 4, 2), Catch::Contains("[2, 8, 4, 4]"));
  tensor sx({2, 4, 4, 4}), sy({2, 8, 4, 4});
  REQUIRE_THROWS_WITH(shortcut_pad_forward(sx, 2, sy),
                      Catch::Contains("[2, 8, 4, 4]") && Catch::Contains("[2, 8, 2, 2]"));
  REQUIRE_THROWS_WITH(shortcut_pad_backward(sy, 2, sx), Catch::Contains("[2, 8, 4, 4]"));
}
