// The element-wise and shape ops of troupe/kernels/elementwise.hpp on device memory: ReLU,
// addition, accumulation, channel concatenation and the ResNet option-A shortcut. Arguments
// mirror the CPU ops, as raw device pointers with the element count or shape beside them, and
// results equal the CPU's bit for bit: every output element is one copy, one comparison or one
// addition, done in the same order.
//
// Each op is queued on the context's stream and returns at once (the context's device must be
// current, as it is on the thread that made the context). Bad arguments throw
// std::invalid_argument, worded as the CPU op's, before anything is queued.
// Private to kernels/ (the CUDA backend).
#pragma once

#include <cstdint>
#include <vector>

#include <troupe/kernels/tensor.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

/// y = max(x, 0) over n elements (x, y: [n]). y may be x.
void relu_forward(cuda_context& context, const float* x, float* y, std::int64_t n);
/// dx = dy where y > 0, else 0 (y: the forward output, dy, dx: [n]). dx may be dy.
void relu_backward(cuda_context& context, const float* y, const float* dy, float* dx,
                   std::int64_t n);

/// y = a + b (a, b, y: [n]). y may alias a or b.
void add_forward(cuda_context& context, const float* a, const float* b, float* y, std::int64_t n);
/// y += x (x, y: [n]): gradient accumulation.
void accumulate(cuda_context& context, const float* x, float* y, std::int64_t n);

/// Concatenates NCHW (or NC) inputs of equal N, H, W along C: inputs[i] has input_shapes[i],
/// y has concat_channels_shape(input_shapes). Inputs and y must not overlap.
void concat_channels_forward(cuda_context& context, const std::vector<const float*>& inputs,
                             const std::vector<shape_t>& input_shapes, float* y,
                             const shape_t& y_shape);
/// Splits dy (concat_channels_shape(dinput_shapes)) along C into dinputs[i] (dinput_shapes[i]).
void concat_channels_backward(cuda_context& context, const float* dy, const shape_t& dy_shape,
                              const std::vector<float*>& dinputs,
                              const std::vector<shape_t>& dinput_shapes);

/// ResNet option-A shortcut: x [N, C, H, W] to y [N, C', ceil(H/stride), ceil(W/stride)]
/// (shortcut_pad_shape), y[n, c + (C' - C)/2, h, w] = x[n, c, h*stride, w*stride], zero in the
/// padded channels.
void shortcut_pad_forward(cuda_context& context, const float* x, const shape_t& x_shape,
                          std::int64_t stride, float* y, const shape_t& y_shape);
/// dx [N, C, H, W] from dy (shortcut_pad_shape of dx): the subsampled positions take dy's
/// value, the others zero.
void shortcut_pad_backward(cuda_context& context, const float* dy, const shape_t& dy_shape,
                           std::int64_t stride, float* dx, const shape_t& dx_shape);

} // namespace troupe::cuda
