// Internal: the one loop helper every hand-written CPU kernel uses, so that thread-count policy
// (grain sizes, the compute-thread cap, which pool runs the loop) lives in one place.
//
// Small loops run inline on the calling thread: a parallel dispatch costs microseconds, which
// is the whole budget of an MLP-sized op. Large loops are cut into a few contiguous chunks per
// thread (static partitioning: the work is uniform and memory-bound, stealing buys nothing).
#pragma once

#include <algorithm>
#include <cstdint>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "kernels/threading.hpp"

namespace troupe::cpu {

/// Applies the process-wide compute-thread cap to this thread's OpenMP settings (OpenMP keeps
/// the thread count per calling thread, so every thread that enters oneDNN must do this).
/// Costs one atomic load when nothing changed.
void sync_openmp_threads();

/// Calls body(begin, end) over [0, n), in parallel when n is at least 2 * grain.
template <class Body>
void parallel_range(std::int64_t n, std::int64_t grain, const Body& body) {
  if (n <= 0)
    return;
  int threads = compute_threads();
  if (threads <= 1 || n < 2 * grain) {
    body(std::int64_t{0}, n);
    return;
  }
  std::int64_t chunk = std::max(grain, (n + 2 * threads - 1) / (2 * threads));
  tbb::parallel_for(
    tbb::blocked_range<std::int64_t>(0, n, chunk),
    [&](const tbb::blocked_range<std::int64_t>& r) { body(r.begin(), r.end()); },
    tbb::simple_partitioner());
}

/// Grain (elements) below which a streaming element-wise loop is not worth splitting.
constexpr std::int64_t elementwise_grain = 1 << 15;

} // namespace troupe::cpu
