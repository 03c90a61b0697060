// What CPU the kernels were compiled for, and a check that this one has it. Troupe's own CPU
// loops are built for TROUPE_CPU_BASELINE (CMake option; x86-64-v3 = AVX2 + FMA by default);
// oneDNN chooses its own code at run time. Models (build_model) and sessions call
// require_cpu_support before the first kernel runs.
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <string>

namespace troupe {

/// The -march the kernels were compiled with, e.g. "x86-64-v3".
const char* cpu_baseline();
/// The instruction-set features the baseline needs and this CPU lacks ("" when none).
std::string missing_cpu_features();
/// Throws std::runtime_error naming the missing features, once per call, if there are any.
void require_cpu_support();

} // namespace troupe
