// The compute-thread cap: an atomic read by every kernel call, an OpenMP setting re-applied per
// calling thread (OpenMP's nthreads is a per-thread setting, and actors migrate between CAF's
// threads), and a oneTBB global_control held for the life of the process for the other layers'
// oneTBB work.
#include <troupe/kernels/threading.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <omp.h>
#include <tbb/global_control.h>

#include "kernels/cpu/parallel.hpp"

namespace troupe {

namespace {

int hardware_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int>& thread_cap() {
  static std::atomic<int> cap{hardware_threads()};
  return cap;
}

// Bumped by every set_compute_threads, so threads notice a change with one load.
std::atomic<unsigned>& cap_generation() {
  static std::atomic<unsigned> generation{1};
  return generation;
}

} // namespace

void set_compute_threads(int threads) {
  if (threads < 1)
    throw std::invalid_argument("set_compute_threads: threads must be >= 1, got "
                                + std::to_string(threads));
  static std::mutex mutex;
  static std::unique_ptr<tbb::global_control> tbb_cap;
  std::lock_guard<std::mutex> lock(mutex);
  // Several live global_controls yield their minimum, so the old one goes first.
  tbb_cap.reset();
  tbb_cap = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  static_cast<std::size_t>(threads));
  thread_cap().store(threads);
  cap_generation().fetch_add(1);
  omp_set_num_threads(threads);
}

int compute_threads() {
  return thread_cap().load(std::memory_order_relaxed);
}

namespace cpu {

void sync_openmp_threads() {
  thread_local unsigned applied = 0;
  unsigned current = cap_generation().load(std::memory_order_acquire);
  if (applied == current)
    return;
  applied = current;
  omp_set_num_threads(compute_threads());
}

} // namespace cpu

} // namespace troupe
