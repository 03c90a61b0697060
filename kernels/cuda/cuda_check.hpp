// Checked CUDA, cuDNN and cuBLAS calls: every call goes through TROUPE_CUDA_CHECK, and a
// failure throws cuda_error naming the call, the file and line, and the library's own text.
// Device allocations go through device_alloc, whose out-of-memory error says how much was
// asked and how much the device had free.
//
// Private to kernels/ (the CUDA backend); compiled by nvcc and by the host compiler alike.
#pragma once

#include <cstddef>
#include <shared_mutex>
#include <stdexcept>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace troupe::cuda {

/// A failed CUDA, cuDNN or cuBLAS call.
class cuda_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const char* call, const char* file, int line, const std::string& why);

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    cudaGetLastError(); // clear a non-sticky error so later calls start clean
    fail(call, file, line,
         std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
  }
}
inline void check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS)
    fail(call, file, line, cudnnGetErrorString(status));
}
void check(cublasStatus_t status, const char* call, const char* file, int line);

/// Keeps cuDNN's algorithm search (cudnnFind*) apart from calls that wait on the whole device.
/// Seen on an H100 (cuDNN 9.14): with two compute actors on one GPU, one actor's
/// cudaDeviceSynchronize failed with cudaErrorStreamCaptureUnsupported while the other ran
/// cudnnFind for a new input shape, which captures work on its stream; any call that waits on
/// every stream of the device (cudaDeviceSynchronize, cudaFree, cudaMalloc, the legacy stream)
/// may fail then. A search holds this lock exclusively, device_alloc and device_free shared.
std::shared_mutex& algorithm_search_lock();

/// `bytes` of device memory on the current device; cuda_error on failure ("cudaMalloc of 4096
/// MiB at file:line: out of memory, 1024 MiB free of 80 GiB").
void* device_alloc(std::size_t bytes, const char* file, int line);
void device_free(void* pointer) noexcept;

/// Device memory owned by one handle (move-only), for workspaces and tests.
class device_buffer {
public:
  device_buffer() = default;
  explicit device_buffer(std::size_t bytes)
      : bytes_(bytes), data_(bytes ? device_alloc(bytes, __FILE__, __LINE__) : nullptr) {}
  device_buffer(device_buffer&& other) noexcept : bytes_(other.bytes_), data_(other.data_) {
    other.bytes_ = 0;
    other.data_ = nullptr;
  }
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      device_free(data_);
      bytes_ = other.bytes_;
      data_ = other.data_;
      other.bytes_ = 0;
      other.data_ = nullptr;
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { device_free(data_); }

  std::size_t bytes() const { return bytes_; }
  void* get() const { return data_; }
  template <class T> T* as() const { return static_cast<T*>(data_); }

private:
  std::size_t bytes_ = 0;
  void* data_ = nullptr;
};

} // namespace troupe::cuda

#define TROUPE_CUDA_CHECK(call) ::troupe::cuda::check((call), #call, __FILE__, __LINE__)
