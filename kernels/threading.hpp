// One place that bounds how many threads the kernels use.
//
// oneDNN (Debian's build) runs on OpenMP, our own loops on oneTBB. Both are capped at the same
// budget and are never run at full width at the same time: the compute actor calls a kernel and
// waits for it, so at any moment one of the two pools is active. CAF's scheduler threads mostly
// sleep on mailboxes and are sized separately by the app.
#pragma once

namespace troupe {

/// Caps oneDNN/OpenMP and oneTBB at `threads` (>= 1) for the rest of the process.
void set_compute_threads(int threads);
/// The current cap (hardware concurrency until set).
int compute_threads();

} // namespace troupe
