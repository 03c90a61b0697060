// Shared by the troupe_kernels_bench sources: random inputs and robust timing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe::bench {

constexpr std::int64_t batch = 128;

inline tensor random_tensor(shape_t shape, std::uint32_t seed, float scale = 1.0f) {
  tensor t = tensor::uninitialized(std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = dist(gen);
  return t;
}

/// Median and minimum of timed runs. On a shared machine the minimum is the better estimate
/// of the uncontended time; the median shows what a busy machine gives.
struct timing {
  double median = 0, min = 0;
};

/// Three untimed warm-up calls (primitive creation, first-touch page faults), then `repeats`.
inline timing time_ms(const std::function<void()>& fn, int repeats) {
  for (int i = 0; i < 3; ++i)
    fn();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

/// Whole training steps (forward, backward, SGD) of the three models, printed as img/s.
void bench_mlp_step(int repeats);
void bench_lenet_step(int repeats);
void bench_resnet20_step(int repeats);

} // namespace troupe::bench
