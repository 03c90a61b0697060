// Max, average and global-average pooling on NCHW tensors.
//
// Average pooling divides by the full window including padding (PyTorch's default
// count_include_pad=true, MXNet's "full" convention). Max pooling keeps the arg-max positions
// of the last training forward for `backward`. Global pooling is average pooling whose window
// is the whole H x W plane and yields [N, C, 1, 1].
//
// Thread-safety: one op object is used by one thread at a time.
#pragma once

#include <memory>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

enum class pool_kind { max, average, global_average };

struct pool2d_params {
  pool_kind kind = pool_kind::max;
  std::int64_t kernel_h = 2, kernel_w = 2;
  std::int64_t stride_h = 2, stride_w = 2;
  std::int64_t pad_h = 0, pad_w = 0;
  /// Round output sizes up instead of down (MXNet's pooling_convention="full", used by the
  /// Inception-BN symbols).
  bool ceil_mode = false;
};

class pool2d_op {
public:
  explicit pool2d_op(pool2d_params params);
  ~pool2d_op();
  pool2d_op(pool2d_op&&) noexcept;
  pool2d_op& operator=(pool2d_op&&) noexcept;

  /// Output shape for x [N, C, H, W]; throws std::invalid_argument when the window does not fit.
  shape_t output_shape(const shape_t& x) const;
  /// y [N, C, P, Q] from x [N, C, H, W]. `training` keeps what backward needs.
  void forward(const tensor& x, tensor& y, bool training);
  /// dx [N, C, H, W] from dy [N, C, P, Q], for the last training forward of dx's shape;
  /// throws std::logic_error when there was none.
  void backward(const tensor& dy, tensor& dx);

  const pool2d_params& params() const { return params_; }

private:
  struct impl;
  pool2d_params params_;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe
