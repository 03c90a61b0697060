// batch_norm_op against the textbook formulas in double (training, inference, running
// statistics with the unbiased variance, the closed-form backward), finite differences for
// dx, dgamma and dbeta, and the error paths.
#include <catch2/catch.hpp>

#include "test_util.hpp"
#include <troupe/kernels/batch_norm.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

struct bn_reference {
  std::vector<double> y, mean, var, dx, dgamma, dbeta;
};

// Treats x as [N, C, S] with S = H*W (1 for [N, C]).
bn_reference reference_bn(const tensor& x, const tensor& gamma, const tensor& beta,
                          const tensor& dy, double eps) {
  const auto& s = x.shape();
  std::int64_t n = s[0], c = s[1], sp = s.size() == 4 ? s[2] * s[3] : 1;
  double m = static_cast<double>(n * sp);
  bn_reference r{std::vector<double>(x.numel()), std::vector<double>(c), std::vector<double>(c),
                 std::vector<double>(x.numel()), std::vector<double>(c), std::vector<double>(c)};
  auto idx = [&](std::int64_t i, std::int64_t ch, std::int64_t k) { return (i * c + ch) * sp + k; };
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < sp; ++k)
        sum += x.data()[idx(i, ch, k)];
    double mean = sum / m;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < sp; ++k)
        sq += (x.data()[idx(i, ch, k)] - mean) * (x.data()[idx(i, ch, k)] - mean);
    double var = sq / m, inv = 1 / std::sqrt(var + eps), g = gamma.data()[ch];
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < sp; ++k) {
        double xhat = (x.data()[idx(i, ch, k)] - mean) * inv;
        r.y[idx(i, ch, k)] = g * xhat + beta.data()[ch];
        sum_dy += dy.data()[idx(i, ch, k)];
        sum_dy_xhat += dy.data()[idx(i, ch, k)] * xhat;
      }
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < sp; ++k) {
        double xhat = (x.data()[idx(i, ch, k)] - mean) * inv;
        r.dx[idx(i, ch, k)] =
          g * inv * (dy.data()[idx(i, ch, k)] - sum_dy / m - xhat * sum_dy_xhat / m);
      }
    r.mean[ch] = mean;
    r.var[ch] = var;
    r.dgamma[ch] = sum_dy_xhat;
    r.dbeta[ch] = sum_dy;
  }
  return r;
}

void check_training(const shape_t& s, std::uint64_t seed) {
  batch_norm_params p;
  p.momentum = 0.25f;
  batch_norm_op op(p);
  std::int64_t c = s[1];
  tensor x = random_tensor(s, seed, -2.0f, 3.0f), gamma = random_tensor({c}, seed + 1, 0.5f, 1.5f);
  tensor beta = random_tensor({c}, seed + 2), dy = random_tensor(s, seed + 3);
  tensor rm = random_tensor({c}, seed + 4), rv = random_tensor({c}, seed + 5, 0.5f, 2.0f);
  tensor rm0 = rm.clone(), rv0 = rv.clone();
  tensor y(s), dx(s), dgamma({c}), dbeta({c});
  op.forward_training(x, gamma, beta, y, rm, rv);
  op.backward(x, gamma, dy, dx, dgamma, dbeta);
  auto ref = reference_bn(x, gamma, beta, dy, p.epsilon);
  require_close(y, ref.y, 1e-4, 1e-4);
  require_close(dx, ref.dx, 1e-3, 1e-4);
  require_close(dgamma, ref.dgamma, 1e-4, 1e-3);
  require_close(dbeta, ref.dbeta, 1e-4, 1e-3);
  double m = static_cast<double>(shape_numel(s) / c);
  std::vector<double> want_rm(c), want_rv(c);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    want_rm[ch] = 0.75 * rm0.data()[ch] + 0.25 * ref.mean[ch];
    want_rv[ch] = 0.75 * rv0.data()[ch] + 0.25 * ref.var[ch] * m / (m - 1);
  }
  require_close(rm, want_rm, 1e-4, 1e-5);
  require_close(rv, want_rv, 1e-4, 1e-5);
}

} // namespace

TEST_CASE("batch_norm training matches the formulas", "[batch_norm]") {
  SECTION("NCHW, ResNet-like channels") {
    check_training({4, 16, 5, 5}, 1);
  }
  SECTION("odd sizes, batch 1") {
    check_training({1, 3, 7, 5}, 2);
  }
  SECTION("NC input (after a fully connected layer)") {
    check_training({6, 10}, 3);
  }
}

TEST_CASE("batch_norm inference uses the running statistics", "[batch_norm]") {
  batch_norm_op op;
  shape_t s{3, 4, 3, 2};
  tensor x = random_tensor(s, 7), gamma = random_tensor({4}, 8), beta = random_tensor({4}, 9);
  tensor rm = random_tensor({4}, 10), rv = random_tensor({4}, 11, 0.5f, 2.0f), y(s);
  op.forward_inference(x, gamma, beta, rm, rv, y);
  std::vector<double> want(x.numel());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    std::int64_t ch = (i / 6) % 4;
    want[i] = gamma.data()[ch] * (x.data()[i] - rm.data()[ch]) / std::sqrt(rv.data()[ch] + 1e-5)
              + beta.data()[ch];
  }
  require_close(y, want);
}

TEST_CASE("batch_norm gradients match finite differences", "[batch_norm][gradient]") {
  for (const shape_t& s : {shape_t{3, 2, 3, 3}, shape_t{5, 3}}) {
    batch_norm_op op;
    std::int64_t c = s[1];
    tensor x = random_tensor(s, 21), gamma = random_tensor({c}, 22, 0.5f, 1.5f);
    tensor beta = random_tensor({c}, 23), r = random_tensor(s, 24);
    tensor rm({c}), rv({c}), y(s), dx(s), dgamma({c}), dbeta({c});
    auto objective = [&] {
      op.forward_training(x, gamma, beta, y, rm, rv);
      return weighted_sum(y, r);
    };
    objective();
    op.backward(x, gamma, r, dx, dgamma, dbeta);
    check_gradient("x", x, dx, objective, 1e-2);
    check_gradient("gamma", gamma, dgamma, objective);
    check_gradient("beta", beta, dbeta, objective);
  }
}

TEST_CASE("batch_norm rejects bad shapes with the shapes in the message", "[batch_norm][errors]") {
  batch_norm_op op;
  tensor x({2, 3, 4, 4}), y({2, 3, 4, 4}), g({3}), b({3}), rm({3}), rv({3});
  tensor bad_g({4}), bad_y({2, 3, 4, 5});
  REQUIRE_THROWS_WITH(op.forward_training(x, bad_g, b, y, rm, rv),
                      Catch::Contains("gamma") && Catch::Contains("[4]")
                        && Catch::Contains("[2, 3, 4, 4]"));
  REQUIRE_THROWS_WITH(op.forward_inference(x, g, b, rm, rv, bad_y),
                      Catch::Contains("[2, 3, 4, 5]"));
  tensor x3({2, 3, 4});
  REQUIRE_THROWS_WITH(op.forward_training(x3, g, b, x3, rm, rv), Catch::Contains("[2, 3, 4]"));
  tensor one({1, 3, 1, 1});
  REQUIRE_THROWS_WITH(op.forward_training(one, g, b, one, rm, rv), Catch::Contains("[1, 3, 1, 1]"));
  tensor dx({2, 3, 4, 4}), dg({3}), db({3});
  batch_norm_op fresh;
  REQUIRE_THROWS_AS(fresh.backward(x, g, y, dx, dg, db), std::logic_error);
  REQUIRE_THROWS_AS(batch_norm_op({0.0f, 0.1f}), std::invalid_argument);
}
