// The CPU check behind TROUPE_CPU_BASELINE: the kernels' own loops are compiled for that
// instruction set (x86-64-v3 = AVX2 + FMA by default), and on an older CPU they would die with
// an illegal instruction somewhere inside a step. This file is compiled for plain x86-64 (see
// kernels/CMakeLists.txt), so the check itself runs anywhere and turns that crash into an
// error that says what is missing.
#include <troupe/kernels/cpu_support.hpp>

#include <stdexcept>
#include <string>

namespace troupe {

const char* cpu_baseline() {
  return TROUPE_CPU_BASELINE_NAME;
}

std::string missing_cpu_features() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  std::string missing;
  auto need = [&](bool present, const char* name) {
    if (!present)
      missing += (missing.empty() ? "" : " ") + std::string(name);
  };
  const std::string baseline = TROUPE_CPU_BASELINE_NAME;
  if (baseline == "x86-64-v2" || baseline == "x86-64-v3" || baseline == "x86-64-v4") {
    need(__builtin_cpu_supports("sse4.2"), "sse4.2");
    need(__builtin_cpu_supports("popcnt"), "popcnt");
  }
  if (baseline == "x86-64-v3" || baseline == "x86-64-v4") {
    need(__builtin_cpu_supports("avx2"), "avx2");
    need(__builtin_cpu_supports("fma"), "fma");
    need(__builtin_cpu_supports("bmi2"), "bmi2");
  }
  if (baseline == "x86-64-v4") {
    need(__builtin_cpu_supports("avx512f"), "avx512f");
    need(__builtin_cpu_supports("avx512bw"), "avx512bw");
  }
  return missing;
#else
  return {};
#endif
}

void require_cpu_support() {
  static const std::string missing = missing_cpu_features();
  if (!missing.empty())
    throw std::runtime_error(std::string("this Troupe build needs a ") + cpu_baseline()
                             + " CPU; this one lacks: " + missing
                             + " (rebuild with -DTROUPE_CPU_BASELINE=x86-64)");
}

} // namespace troupe
