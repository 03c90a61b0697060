// One place that bounds how many threads the kernels use.
//
// oneDNN (Debian's build) runs on OpenMP, and so do the kernels' own loops: libgomp's workers
// spin after each parallel region, and a second (oneTBB) pool next to them made the ResNet-20
// step 10-15% slower (see kernels/cpu/parallel.hpp). oneTBB is capped at the same budget for
// the other layers that use it. Nothing in the library sets the cap by itself: until a caller
// does, kernels use what OpenMP chose (OMP_NUM_THREADS, else the hardware), and no process-wide
// OpenMP or oneTBB setting is touched. Set it once at start-up, before the first kernel: oneDNN
// sizes its work split when a primitive is created. CAF's scheduler threads mostly sleep on
// mailboxes and are sized separately by the app.
#pragma once

#include <vector>

namespace troupe {

/// Caps oneDNN/OpenMP and the kernels' loops at `threads` (>= 1), and oneTBB's global
/// parallelism (a process-wide tbb::global_control) at the same number, for the rest of the
/// process; throws std::invalid_argument below 1. The caller asks for this; the library never
/// calls it.
void set_compute_threads(int threads);
/// The current cap: OpenMP's default thread count (OMP_NUM_THREADS, else the hardware) until
/// set_compute_threads is called.
int compute_threads();

/// Binds the calling thread, and the threads it starts from now on (an OpenMP team it opens
/// inherits the mask), to the CPUs `cpus` (ids as the OS numbers them). Where several
/// processes share a host, this keeps their compute threads from queuing on one core while
/// another idles (the OS's wakeup placement stacks them). Returns false, binding nothing,
/// when `cpus` is empty or the OS refuses (an id this process may not use).
bool bind_this_thread(const std::vector<int>& cpus);

} // namespace troupe
