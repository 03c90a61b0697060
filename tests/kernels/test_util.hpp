// Shared helpers for the kernel tests: seeded random tensors, element-wise comparison with a
// readable failure message, and a central-difference gradient checker in the style of Caffe's
// GradientChecker: the scalar objective is f = sum(y * r) for fixed random weights r, so
// df/dy = r is what the op's backward receives, and every input element's analytic gradient
// is compared with (f(x + h) - f(x - h)) / 2h evaluated in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <troupe/kernels/tensor.hpp>

namespace troupe::test {

/// Uniform values in [lo, hi) from a fixed seed (own mapping, so values never change).
inline tensor random_tensor(shape_t shape, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  tensor t = tensor::uninitialized(std::move(shape));
  std::mt19937_64 gen(seed);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
    t.data()[i] = static_cast<float>(lo + (hi - lo) * u);
  }
  return t;
}

/// Random values with |v| in [0.1, 1): keeps ReLU inputs away from the kink at 0.
inline tensor random_away_from_zero(shape_t shape, std::uint64_t seed) {
  tensor t = random_tensor(std::move(shape), seed, 0.1f, 1.0f);
  std::mt19937_64 gen(seed ^ 0x5bd1e995u);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (gen() & 1)
      t.data()[i] = -t.data()[i];
  return t;
}

/// Distinct values spaced `gap` apart in random order: max pooling never sees a near-tie.
inline tensor random_distinct(shape_t shape, std::uint64_t seed, float gap = 0.01f) {
  tensor t = tensor::uninitialized(std::move(shape));
  std::vector<std::int64_t> order(static_cast<std::size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 gen(seed);
  std::shuffle(order.begin(), order.end(), gen);
  float offset = gap * static_cast<float>(t.numel()) / 2;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = gap * static_cast<float>(order[static_cast<std::size_t>(i)]) - offset;
  return t;
}

inline std::vector<double> to_double(const tensor& t) {
  return std::vector<double>(t.data(), t.data() + t.numel());
}

/// Checks |got - want| <= atol + rtol * |want| for every element; reports the worst one.
inline void require_close(const tensor& got, const std::vector<double>& want, double rtol = 1e-4,
                          double atol = 1e-4) {
  REQUIRE(static_cast<std::size_t>(got.numel()) == want.size());
  double worst = 0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    double err = std::abs(static_cast<double>(got.data()[i]) - want[i]);
    double excess = err - (atol + rtol * std::abs(want[i]));
    if (excess > worst) {
      worst = excess;
      worst_i = i;
    }
  }
  INFO("element " << worst_i << " of " << shape_string(got.shape()) << ": got "
                  << (want.empty() ? 0.0 : got.data()[worst_i]) << ", want "
                  << (want.empty() ? 0.0 : want[worst_i]));
  REQUIRE(worst == 0);
}

inline void require_close(const tensor& got, const tensor& want, double rtol = 1e-4,
                          double atol = 1e-4) {
  REQUIRE(got.shape() == want.shape());
  require_close(got, to_double(want), rtol, atol);
}

/// sum(y * r) in double.
inline double weighted_sum(const tensor& y, const tensor& r) {
  double sum = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i)
    sum += static_cast<double>(y.data()[i]) * r.data()[i];
  return sum;
}

/// Central differences of `objective` with respect to every element of `input` (perturbed in
/// place and restored), compared with `analytic`. Passes when, per element,
/// |numeric - analytic| <= rtol * max(|numeric|, |analytic|) + atol.
inline void check_gradient(const std::string& what, tensor& input, const tensor& analytic,
                           const std::function<double()>& objective, double step = 1e-2,
                           double rtol = 1e-2, double atol = 2e-3) {
  REQUIRE(input.shape() == analytic.shape());
  float* x = input.data();
  int failures = 0;
  std::ostringstream report;
  for (std::int64_t i = 0; i < input.numel(); ++i) {
    float saved = x[i];
    x[i] = static_cast<float>(saved + step);
    double up = objective();
    x[i] = static_cast<float>(saved - step);
    double down = objective();
    x[i] = saved;
    double numeric = (up - down) / (2 * step);
    double a = analytic.data()[i];
    if (std::abs(numeric - a) > rtol * std::max(std::abs(numeric), std::abs(a)) + atol) {
      if (failures++ < 5)
        report << "  d/d" << what << "[" << i << "]: numeric " << numeric << ", analytic " << a
               << "\n";
    }
  }
  INFO("gradient of " << what << " " << shape_string(input.shape()) << ", " << failures
                      << " mismatches:\n"
                      << report.str());
  REQUIRE(failures == 0);
}

/// Index into a row-major NCHW tensor.
inline std::int64_t at4(const shape_t& s, std::int64_t n, std::int64_t c, std::int64_t h,
                        std::int64_t w) {
  return ((n * s[1] + c) * s[2] + h) * s[3] + w;
}

} // namespace troupe::test
