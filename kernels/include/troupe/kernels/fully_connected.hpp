// Fully connected (inner product) layer: y = x * w^T + b.
//
// x may have any rank >= 2; everything after the batch axis is flattened, so a conv output
// [N, C, H, W] feeds w [OUT, C*H*W] directly. Gradients are written, not accumulated.
//
// Thread-safety: one op object is used by one thread at a time.
#pragma once

#include <memory>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

class fully_connected_op {
public:
  fully_connected_op();
  ~fully_connected_op();
  fully_connected_op(fully_connected_op&&) noexcept;
  fully_connected_op& operator=(fully_connected_op&&) noexcept;

  /// [N, OUT] for x [N, ...] and w [OUT, IN]; throws when prod(x[1:]) != IN.
  shape_t output_shape(const shape_t& x, const shape_t& w) const;
  /// y [N, OUT] = x [N, IN] * w^T [IN, OUT] + b [OUT] (b may be null).
  void forward(const tensor& x, const tensor& w, const tensor* b, tensor& y);
  /// dx like x (skipped when null), dw [OUT, IN], db [OUT] (skipped when null).
  void backward(const tensor& x, const tensor& w, const tensor& dy, tensor* dx, tensor& dw,
                tensor* db);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe
