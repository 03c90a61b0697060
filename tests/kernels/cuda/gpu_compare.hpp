// What the CUDA op tests share: random inputs, copies between tensors and device buffers, and
// the error measure each op's tolerance is stated in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include <troupe/kernels/tensor.hpp>

#include "kernels/cuda/cuda_check.hpp"

namespace troupe::cuda_test {

/// A tensor of `shape` with elements uniform in [lo, hi), reproducible from `seed`.
inline tensor random_tensor(shape_t shape, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  tensor t(std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> pick(lo, hi);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = pick(gen);
  return t;
}

/// The tensor's elements in fresh device memory.
inline cuda::device_buffer upload(const tensor& t) {
  cuda::device_buffer buffer(t.bytes());
  if (t.bytes() > 0)
    TROUPE_CUDA_CHECK(cudaMemcpy(buffer.get(), t.data(), t.bytes(), cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy may return before the DMA has landed, and the ops run on
  // a non-blocking stream that does not wait for the legacy default stream.
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
  return buffer;
}

/// Device memory of `numel(shape)` floats back in a tensor (waits for the device).
inline tensor download(const cuda::device_buffer& buffer, shape_t shape) {
  tensor t(std::move(shape));
  if (t.bytes() > buffer.bytes())
    throw std::invalid_argument("download: the buffer is smaller than the shape");
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
  if (t.bytes() > 0)
    TROUPE_CUDA_CHECK(cudaMemcpy(t.data(), buffer.get(), t.bytes(), cudaMemcpyDeviceToHost));
  return t;
}

/// max |a - b| / max(1, max |b|) over all elements: relative to the reference's scale, so
/// elements near zero do not blow the measure up. Infinity when the shapes differ or either
/// is empty (two empty results are not "equal").
inline double relative_error(const tensor& a, const tensor& b) {
  if (a.shape() != b.shape() || a.numel() == 0)
    return INFINITY;
  double diff = 0, scale = 1;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b.data()[i])));
    if (std::isnan(a.data()[i]) != std::isnan(b.data()[i]))
      return INFINITY;
  }
  return diff / scale;
}

} // namespace troupe::cuda_test
