// Element-wise and shape ops that hold no state: ReLU, addition, channel concatenation,
// flattening, and the "option A" shortcut of CIFAR ResNets (subsample + zero-pad channels).
//
// Outputs must be allocated by the caller with the right shape; functions throw
// std::invalid_argument naming the shapes when they disagree. Large loops run on oneTBB (or
// oneDNN eltwise) within the compute thread budget set by kernels/threading.hpp.
#pragma once

#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

/// y = max(x, 0). y may be x (in place).
void relu_forward(const tensor& x, tensor& y);
/// dx = dy where y > 0, else 0. `y` is the forward output. dx may be dy (in place).
void relu_backward(const tensor& y, const tensor& dy, tensor& dx);

/// y = a + b, all of one shape. y may alias a or b.
void add_forward(const tensor& a, const tensor& b, tensor& y);
/// y += x (gradient accumulation).
void accumulate(const tensor& x, tensor& y);

/// Concatenates NCHW (or NC) inputs of equal N, H, W along C into y.
shape_t concat_channels_shape(const std::vector<shape_t>& inputs);
void concat_channels_forward(const std::vector<const tensor*>& inputs, tensor& y);
/// Splits dy along C into the gradients of each input (shapes as the inputs).
void concat_channels_backward(const tensor& dy, const std::vector<tensor*>& dinputs);

/// [N, prod(rest)]: a view, no copy.
tensor flatten(const tensor& x);

/// ResNet option-A shortcut: y[n, c + pad_front, h, w] = x[n, c, h*stride, w*stride], zero
/// elsewhere; y has out_channels channels, pad_front = (out_channels - C) / 2.
shape_t shortcut_pad_shape(const shape_t& x, std::int64_t out_channels, std::int64_t stride);
void shortcut_pad_forward(const tensor& x, std::int64_t stride, tensor& y);
void shortcut_pad_backward(const tensor& dy, std::int64_t stride, tensor& dx);

} // namespace troupe
