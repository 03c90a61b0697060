// Checked calls: a failing call's error names the call, the file and line and the library's
// text; an allocation beyond the device says how much was asked and how much is free.
#include <catch2/catch.hpp>

#include <string>

#include "kernels/cuda/cuda_context.hpp"

using namespace troupe;

TEST_CASE("a failed CUDA call names the call, file and line", "[cuda]") {
  try {
    TROUPE_CUDA_CHECK(cudaSetDevice(-1));
    FAIL("cudaSetDevice(-1) did not fail");
  } catch (const cuda::cuda_error& e) {
    const std::string text = e.what();
    CHECK(text.find("cudaSetDevice(-1)") != std::string::npos);
    CHECK(text.find("cuda_check_test.cpp:") != std::string::npos);
    CHECK(text.find("cudaErrorInvalidDevice") != std::string::npos);
  }
  TROUPE_CUDA_CHECK(cudaSetDevice(0)); // and the next call starts clean
}

TEST_CASE("an allocation beyond the device says how much was asked and how much is free",
          "[cuda]") {
  const std::size_t absurd = std::size_t{1} << 50; // 1 PiB
  try {
    cuda::device_buffer too_big(absurd);
    FAIL("a 1 PiB allocation succeeded");
  } catch (const cuda::cuda_error& e) {
    const std::string text = e.what();
    CHECK(text.find("cudaMalloc of 1073741824 MiB") != std::string::npos);
    CHECK(text.find("free of") != std::string::npos);
  }
  cuda::device_buffer fine(1 << 20); // the device is usable afterwards
  CHECK(fine.get() != nullptr);
}

TEST_CASE("a context's workspace grows to the largest request and is reused", "[cuda]") {
  cuda::cuda_context context(0);
  void* first = context.workspace(1 << 10);
  CHECK(context.workspace_bytes() >= (1u << 10));
  CHECK(context.workspace(1 << 8) == first); // smaller: the same memory
  context.workspace(1 << 20);
  CHECK(context.workspace_bytes() >= (1u << 20));
  context.synchronize();
}
