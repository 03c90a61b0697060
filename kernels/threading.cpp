// The compute-thread cap: an atomic read by every kernel call and applied to OpenMP only for
// the duration of a oneDNN call (openmp_thread_scope; OpenMP's nthreads is a per-thread setting
// and the calling thread may be a host's), plus, when a caller sets the cap explicitly, a oneTBB
// global_control held for the life of the process for the other layers' oneTBB work. Until
// then the cap is what OpenMP itself chose (OMP_NUM_THREADS, else the hardware).
#include <troupe/kernels/threading.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <pthread.h>
#include <sched.h>

#include <omp.h>
#include <tbb/global_control.h>

#include "kernels/cpu/parallel.hpp"

namespace troupe {

namespace {

int hardware_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int>& thread_cap() {
  static std::atomic<int> cap{std::max(1, std::min(omp_get_max_threads(), 4 * hardware_threads()))};
  return cap;
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
}

int compute_threads() {
  return thread_cap().load(std::memory_order_relaxed);
}

namespace cpu {

openmp_thread_scope::openmp_thread_scope() : previous_(omp_get_max_threads()) {
  const int cap = compute_threads();
  if (cap != previous_)
    omp_set_num_threads(cap);
}

openmp_thread_scope::~openmp_thread_scope() {
  if (omp_get_max_threads() != previous_)
    omp_set_num_threads(previous_);
}

} // namespace cpu

bool bind_this_thread(const std::vector<int>& cpus) {
  if (cpus.empty())
    return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE)
      return false;
    CPU_SET(cpu, &set);
  }
  return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
}

} // namespace troupe
