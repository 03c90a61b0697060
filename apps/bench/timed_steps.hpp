// Runs `warmup` untimed steps, then `steps` timed ones, and returns the seconds of the timed
// ones: the transport benchmark's two sides time their steps alike. step(n) gets the step's
// number, counting the warm-up ones.
#pragma once

#include <chrono>
#include <cstdint>

namespace troupe::bench {

template <class Step> double timed_steps(int warmup, int steps, Step&& step) {
  std::int64_t number = 0;
  for (int i = 0; i < warmup; ++i)
    step(number++);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i)
    step(number++);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace troupe::bench
