// Dropout as grid-stride passes: the forward hashes each element's index with the call's key
// (mixed once on the host from the seed and the call count, exactly as the CPU op mixes it)
// and writes both the output and the one-byte mask; the backward reads the mask back. Every
// decision depends on (key, index) alone, so the launch shape cannot change the mask.
#include "kernels/cuda/dropout_cuda.hpp"
#include "kernels/cuda/op_checks.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace troupe::cuda {

namespace {

__global__ void dropout_forward_kernel(const float* x, float* y, std::uint8_t* mask,
                                       std::uint64_t key, std::uint64_t threshold, float scale,
                                       std::int64_t n) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) {
    const bool keep = (dropout_mix64(key + static_cast<std::uint64_t>(i)) >> 40) >= threshold;
    mask[i] = keep;
    y[i] = keep ? x[i] * scale : 0.0f;
  }
}

__global__ void dropout_backward_kernel(const float* dy, float* dx, const std::uint8_t* mask,
                                        float scale, std::int64_t n) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step)
    dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

void require_probability(const char* op, float p) {
  if (!(p >= 0.0f && p < 1.0f))
    throw std::invalid_argument(std::string(op) + ": probability must be in [0, 1), got "
                                + std::to_string(p));
}

} // namespace

void dropout_forward(cuda_context& context, float p, std::uint64_t seed, std::uint64_t call,
                     const float* x, float* y, std::uint8_t* mask, std::int64_t n) {
  require_probability("dropout_forward", p);
  require_count("dropout_forward", n);
  require_memory("dropout_forward", "x", x, n);
  require_memory("dropout_forward", "y", y, n);
  require_memory("dropout_forward", "mask", mask, n);
  if (n == 0)
    return;
  // The CPU op's key, threshold and scale, computed the same way on the host.
  const std::uint64_t key = dropout_mix64(seed ^ dropout_mix64(call));
  const auto threshold = static_cast<std::uint64_t>(std::ldexp(static_cast<double>(p), 24));
  const float scale = 1.0f / (1.0f - p);
  dropout_forward_kernel<<<grid_for(n), block_threads, 0, context.stream()>>>(x, y, mask, key,
                                                                              threshold, scale, n);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void dropout_inference(cuda_context& context, const float* x, float* y, std::int64_t n) {
  require_count("dropout_inference", n);
  require_memory("dropout_inference", "x", x, n);
  require_memory("dropout_inference", "y", y, n);
  if (n == 0 || x == y)
    return;
  TROUPE_CUDA_CHECK(cudaMemcpyAsync(y, x, static_cast<std::size_t>(n) * sizeof(float),
                                    cudaMemcpyDeviceToDevice, context.stream()));
}

void dropout_backward(cuda_context& context, float p, const std::uint8_t* mask, const float* dy,
                      float* dx, std::int64_t n) {
  require_probability("dropout_backward", p);
  require_count("dropout_backward", n);
  require_memory("dropout_backward", "mask", mask, n);
  require_memory("dropout_backward", "dy", dy, n);
  require_memory("dropout_backward", "dx", dx, n);
  if (n == 0)
    return;
  dropout_backward_kernel<<<grid_for(n), block_threads, 0, context.stream()>>>(
    dy, dx, mask, 1.0f / (1.0f - p), n);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

} // namespace troupe::cuda
