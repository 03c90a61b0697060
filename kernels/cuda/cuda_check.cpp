// See cuda_check.hpp.
#include "kernels/cuda/cuda_check.hpp"

namespace troupe::cuda {

namespace {

const char* cublas_text(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  default:
    return "unknown cuBLAS status";
  }
}

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

} // namespace

void fail(const char* call, const char* file, int line, const std::string& why) {
  throw cuda_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": "
                   + why);
}

void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(call, file, line, cublas_text(status));
}

std::shared_mutex& algorithm_search_lock() {
  static std::shared_mutex lock;
  return lock;
}

void* device_alloc(std::size_t bytes, const char* file, int line) {
  void* pointer = nullptr;
  cudaError_t status;
  {
    std::shared_lock<std::shared_mutex> no_search(algorithm_search_lock());
    status = cudaMalloc(&pointer, bytes);
  }
  if (status == cudaSuccess)
    return pointer;
  cudaGetLastError();
  std::string why = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  if (status == cudaErrorMemoryAllocation) {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess)
      why += ", " + mib(free) + " free of " + mib(total);
  }
  fail(("cudaMalloc of " + mib(bytes) + " (" + std::to_string(bytes) + " bytes)").c_str(), file,
       line, why);
}

void device_free(void* pointer) noexcept {
  if (pointer) {
    std::shared_lock<std::shared_mutex> no_search(algorithm_search_lock());
    cudaFree(pointer);
  }
}

} // namespace troupe::cuda
