// One place that bounds how many threads the kernels use.
//
// oneDNN (Debian's build) runs on OpenMP, and so do the kernels' own loops: libgomp's workers
// spin after each parallel region, and a second (oneTBB) pool next to them made the ResNet-20
// step 10-15% slower (see kernels/cpu/parallel.hpp). oneTBB is capped at the same budget for
// the other layers that use it. Call this once at start-up, before the first kernel: oneDNN
// sizes its work split when a primitive is created. CAF's scheduler threads mostly sleep on
// mailboxes and are sized separately by the app.
#pragma once

namespace troupe {

/// Caps oneDNN/OpenMP, the kernels' loops and oneTBB at `threads` (>= 1) for the rest of the
/// process; throws std::invalid_argument below 1.
void set_compute_threads(int threads);
/// The current cap (hardware concurrency until set).
int compute_threads();

} // namespace troupe
