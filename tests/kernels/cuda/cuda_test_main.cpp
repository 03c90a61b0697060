// The CUDA kernel tests' main: without a usable GPU (or a driver) the whole suite reports
// itself skipped (exit 77, ctest's SKIP_RETURN_CODE), never passed; with one, Catch runs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

#include <troupe/kernels/device_info.hpp>

int main(int argc, char* argv[]) {
  const auto report = troupe::query_devices();
  if (report.gpus.empty()) {
    std::cout << "skipped: no GPU (" << report.why_no_gpu << ")\n";
    return 77;
  }
  std::cout << "running on gpu 0: " << report.gpus.front().name << '\n';
  return Catch::Session().run(argc, argv);
}
