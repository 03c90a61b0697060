// Inverted dropout with a counter-based mask: element i of call k keeps its value when
// hash(seed, k, i) >= p * 2^24. Every element's decision is independent of every other's, so
// the loop can be split any way and the mask never depends on the thread count.
#include <troupe/kernels/dropout.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/parallel.hpp"

namespace troupe {

namespace {

// splitmix64's finalizer: a bijective mix with full avalanche, enough for a dropout mask.
std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void require_same_shape(const char* op, const tensor& a, const tensor& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(std::string("dropout: ") + op + " shapes " + shape_string(a.shape())
                                + " and " + shape_string(b.shape()) + " differ");
}

} // namespace

dropout_op::dropout_op(float p, std::uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0.0f && p < 1.0f))
    throw std::invalid_argument("dropout: probability must be in [0, 1), got " + std::to_string(p));
}

void dropout_op::forward(const tensor& x, tensor& y, bool training) {
  require_same_shape("forward x / y", x, y);
  const float* in = x.data();
  float* out = y.data();
  std::int64_t n = x.numel();
  if (!training) {
    if (in != out)
      y.copy_from(x);
    return;
  }
  mask_.resize(static_cast<std::size_t>(n));
  std::uint8_t* mask = mask_.data();
  std::uint64_t key = mix64(seed_ ^ mix64(calls_++));
  auto threshold = static_cast<std::uint64_t>(std::ldexp(static_cast<double>(p_), 24));
  float scale = 1.0f / (1.0f - p_);
  cpu::parallel_range(n, cpu::elementwise_grain, [=](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      std::uint8_t keep = (mix64(key + static_cast<std::uint64_t>(i)) >> 40) >= threshold;
      mask[i] = keep;
      out[i] = keep ? in[i] * scale : 0.0f;
    }
  });
}

void dropout_op::backward(const tensor& dy, tensor& dx) {
  require_same_shape("backward dy / dx", dy, dx);
  if (static_cast<std::size_t>(dy.numel()) != mask_.size())
    throw std::logic_error("dropout: backward for " + shape_string(dy.shape()) + " but the last "
                           + "training forward masked " + std::to_string(mask_.size())
                           + " elements");
  const float* grad = dy.data();
  float* out = dx.data();
  const std::uint8_t* mask = mask_.data();
  float scale = 1.0f / (1.0f - p_);
  cpu::parallel_range(dy.numel(), cpu::elementwise_grain, [=](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      out[i] = mask[i] ? grad[i] * scale : 0.0f;
  });
}

} // namespace troupe
