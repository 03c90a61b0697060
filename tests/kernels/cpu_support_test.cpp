// The CPU check: it names the baseline the kernels were built for, and it agrees with what
// the compiler itself says this machine can run (the tests themselves run kernels built for
// the baseline, so on this machine nothing may be missing).
#include <catch2/catch.hpp>

#include <string>

#include <troupe/kernels/cpu_support.hpp>

using namespace troupe;

TEST_CASE("the CPU check names the baseline and finds nothing missing where the tests run") {
  const std::string baseline = cpu_baseline();
  CHECK((baseline == "x86-64" || baseline == "x86-64-v2" || baseline == "x86-64-v3"
         || baseline == "x86-64-v4"));
  CHECK(missing_cpu_features().empty());
  CHECK_NOTHROW(require_cpu_support());
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (baseline == "x86-64-v3")
    CHECK(__builtin_cpu_supports("avx2")); // the check and the compiler agree
#endif
}
