// Internal: the one loop helper every hand-written CPU kernel uses, so that thread-count policy
// (grain sizes, the compute-thread cap, which pool runs the loop) lives in one place.
//
// Which pool: OpenMP, the same libgomp team oneDNN runs on. libgomp's workers spin for a while
// after each parallel region, so a oneTBB pool started right after a convolution shares the
// two cores with a spinning OpenMP thread; measured on the ResNet-20 training step at 2
// threads, our loops on oneTBB made the step 10-15% slower than the same loops on OpenMP
// (whole step 316-345 ms vs 271-293 ms, median). On OpenMP the spinning worker simply picks up
// the next region.
//
// Small loops run inline on the calling thread: a parallel dispatch costs microseconds, which
// is the whole budget of an MLP-sized op. Large loops get one contiguous chunk per thread
// (static partitioning: the work is uniform and memory-bound, stealing buys nothing).
// Bodies must not throw (an exception cannot leave an OpenMP region); callers validate first.
#pragma once

#include <algorithm>
#include <cstdint>

#include <troupe/kernels/threading.hpp>

namespace troupe::cpu {

/// Applies the compute-thread cap to this thread's OpenMP setting for the scope's lifetime
/// (oneDNN sizes its parallel regions from it) and puts the caller's own value back at the
/// end: OpenMP keeps the thread count per calling thread, and the calling thread may belong to
/// a host application whose settings are not ours to change. Costs two OpenMP calls.
class openmp_thread_scope {
public:
  openmp_thread_scope();
  ~openmp_thread_scope();
  openmp_thread_scope(const openmp_thread_scope&) = delete;
  openmp_thread_scope& operator=(const openmp_thread_scope&) = delete;

private:
  int previous_;
};

/// Calls body(begin, end) over [0, n): inline when n < 2 * grain, else split into at most
/// compute_threads() contiguous chunks of at least `grain` run on OpenMP threads.
template <class Body> void parallel_range(std::int64_t n, std::int64_t grain, const Body& body) {
  if (n <= 0)
    return;
  std::int64_t threads =
    std::min<std::int64_t>(compute_threads(), n / std::max<std::int64_t>(grain, 1));
  if (threads <= 1) {
    body(std::int64_t{0}, n);
    return;
  }
  const std::int64_t chunk = (n + threads - 1) / threads;
#pragma omp parallel for schedule(static, 1) num_threads(threads)
  for (std::int64_t t = 0; t < threads; ++t)
    body(t * chunk, std::min(n, (t + 1) * chunk));
}

/// Grain (elements) below which a streaming element-wise loop is not worth splitting.
constexpr std::int64_t elementwise_grain = 1 << 15;

} // namespace troupe::cpu
