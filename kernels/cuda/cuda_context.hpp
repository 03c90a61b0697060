// What the CUDA ops of one compute actor share: its device, one stream (every op of a step is
// queued on it, so ops need no synchronisation between them), a cuDNN and a cuBLAS handle bound
// to that stream, and a workspace that grows to the largest size an op asked for and is reused.
//
// One context per compute actor (per device and thread of use): handles are not thread-safe.
// Private to kernels/ (the CUDA backend).
#pragma once

#include <cstddef>

#include "kernels/cuda/cuda_check.hpp"

namespace troupe::cuda {

class cuda_context {
public:
  /// Makes `device` current on this thread and creates the stream and handles on it.
  explicit cuda_context(int device);
  ~cuda_context();
  cuda_context(const cuda_context&) = delete;
  cuda_context& operator=(const cuda_context&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }

  /// At least `bytes` of scratch memory, valid until the next call (ops run in stream order,
  /// so one op's workspace is free again when the next op starts).
  void* workspace(std::size_t bytes);
  std::size_t workspace_bytes() const { return workspace_.bytes(); }

  /// Waits until everything queued on the stream has run; cuda_error if any of it failed.
  void synchronize();

private:
  int device_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  device_buffer workspace_;
};

/// Threads per block for the element-wise kernels, and the grid that covers `n` elements
/// (capped: the kernels loop with a grid stride).
constexpr int block_threads = 256;
inline unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + block_threads - 1) / block_threads;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

} // namespace troupe::cuda
