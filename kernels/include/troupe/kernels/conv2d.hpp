// 2-D convolution (cross-correlation, as in every framework) with stride, padding and groups.
//
// The op object caches oneDNN primitives per input shape, so a layer keeps one `conv2d_op` for
// its lifetime and pays primitive creation once per distinct batch size. Tensors at the
// interface are plain NCHW / OIHW float32; the op reorders into whatever blocked layout oneDNN
// prefers internally. Gradients are written, not accumulated.
//
// Thread-safety: one op object is used by one thread at a time.
#pragma once

#include <memory>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct conv2d_params {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t groups = 1;
};

class conv2d_op {
public:
  explicit conv2d_op(conv2d_params params);
  ~conv2d_op();
  conv2d_op(conv2d_op&&) noexcept;
  conv2d_op& operator=(conv2d_op&&) noexcept;

  /// Output shape for input x [N, C, H, W] and weights w [K, C/groups, R, S]; throws
  /// std::invalid_argument naming the shapes when they do not fit.
  shape_t output_shape(const shape_t& x, const shape_t& w) const;

  /// y [N, K, P, Q] = conv(x [N, C, H, W], w [K, C/g, R, S]) + b [K] (b may be null).
  void forward(const tensor& x, const tensor& w, const tensor* b, tensor& y);

  /// From dy [N, K, P, Q]: dx [N, C, H, W] (skipped when null), dw like w, db [K] (skipped
  /// when null). x and w are the forward inputs, with the values they had in forward: when
  /// handed the same buffers, the op reuses the blocked copies it made of them then.
  void backward(const tensor& x, const tensor& w, const tensor& dy, tensor* dx, tensor& dw,
                tensor* db);

  const conv2d_params& params() const { return params_; }

private:
  struct impl;
  conv2d_params params_;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe
