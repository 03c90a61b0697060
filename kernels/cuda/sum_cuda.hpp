// Gradient summation on the device: the sum of the gradients that several compute actors (or
// GPUs) produced for one parameter, and the running total a gradient is added into.
//
// Inputs are summed left to right, so the result equals the CPU's copy-then-accumulate loop bit
// for bit and does not depend on the launch configuration. Inputs may live on another GPU when
// peer access to it is enabled (the kernel reads them directly). Queued on the context's stream;
// bad arguments throw std::invalid_argument before anything is queued.
// Private to kernels/ (the CUDA backend).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

/// out = inputs[0] + inputs[1] + ... + inputs[K-1], each [n], K >= 1. out may be inputs[0]
/// (summing into the first gradient); it must not be any other input.
void sum_buffers(cuda_context& context, const std::vector<const float*>& inputs, float* out,
                 std::int64_t n);
/// out += x (x, out: [n]): one more gradient into a running total.
void sum_into(cuda_context& context, const float* x, float* out, std::int64_t n);

} // namespace troupe::cuda
