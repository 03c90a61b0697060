// Inverted dropout of troupe/kernels/dropout.hpp on device memory. In training element i of
// call k is kept when hash(seed, k, i) >= p * 2^24 and scaled by 1/(1-p); inference is the
// identity. The hash is the CPU op's (splitmix64's finalizer, reproduced here for both host and
// device), so for the same seed and call count the GPU drops exactly the elements the CPU drops
// and a run can move between the two.
//
// The caller keeps the call count (training forwards only, from 0, as dropout_op counts them)
// and the mask buffer, n bytes of device memory read by the backward pass. Queued on the
// context's stream; bad arguments throw std::invalid_argument before anything is queued.
// Private to kernels/ (the CUDA backend).
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

/// splitmix64's finalizer, as mix64 in kernels/cpu/dropout_cpu.cpp: the two must stay equal.
__host__ __device__ inline std::uint64_t dropout_mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Training forward, call number `call` of an op seeded `seed` with drop probability p in
/// [0, 1): y = x * mask / (1 - p), mask[i] = 1 for a kept element, else 0 (x, y, mask: [n]).
/// y may be x.
void dropout_forward(cuda_context& context, float p, std::uint64_t seed, std::uint64_t call,
                     const float* x, float* y, std::uint8_t* mask, std::int64_t n);
/// Inference forward: y = x (a device copy unless y is x).
void dropout_inference(cuda_context& context, const float* x, float* y, std::int64_t n);
/// dx = dy * mask / (1 - p) with the mask of the last training forward (dy, dx, mask: [n]).
/// dx may be dy.
void dropout_backward(cuda_context& context, float p, const std::uint8_t* mask, const float* dy,
                      float* dx, std::int64_t n);

} // namespace troupe::cuda
