// The device query answers on every machine: GPUs with names and memory where there are
// some, otherwise an empty list and the reason.
#include <catch2/catch.hpp>

#include <troupe/kernels/device_info.hpp>

using namespace troupe;

TEST_CASE("query_devices lists GPUs or says why there are none") {
  auto report = query_devices();
#ifdef TROUPE_HAVE_CUDA
  CHECK(report.cuda_compiled);
  CHECK_THAT(report.cuda_libraries, Catch::Contains("cuDNN"));
#else
  CHECK_FALSE(report.cuda_compiled);
  CHECK(report.gpus.empty());
#endif
  if (report.gpus.empty()) {
    CHECK_FALSE(report.why_no_gpu.empty());
  } else {
    for (const auto& gpu : report.gpus) {
      CHECK_FALSE(gpu.name.empty());
      CHECK(gpu.memory_bytes > 0);
      CHECK(gpu.compute_capability_major >= 7);
    }
  }
}
