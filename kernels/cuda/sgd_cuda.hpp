// The SGD update of troupe/kernels/sgd.hpp on device memory: momentum, L2 weight decay and
// optional Nesterov momentum in PyTorch's formulation,
//   g = grad + wd * w;  v = momentum * v + g;  w = w - lr * (nesterov ? g + momentum * v : v),
// evaluated in the same order as the CPU op (results agree to float rounding: either compiler
// may fuse a multiply-add).
//
// Queued on the context's stream; bad arguments throw std::invalid_argument before anything is
// queued. Private to kernels/ (the CUDA backend).
#pragma once

#include <cstdint>

#include <troupe/kernels/sgd.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

/// Updates `velocity` [n] in place and writes the new weights to `out` [n] from `weights` and
/// `grad` [n]. `out` may be `weights` (in place); no other two buffers may overlap.
/// `apply_weight_decay` false skips the decay (biases, batch-norm parameters).
void sgd_update(cuda_context& context, const sgd_options& options, float lr, const float* weights,
                const float* grad, float* velocity, float* out, std::int64_t n,
                bool apply_weight_decay = true);

} // namespace troupe::cuda
