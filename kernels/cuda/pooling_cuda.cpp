// Pooling on cuDNN's legacy API: cudnnPoolingForward / cudnnPoolingBackward with a pooling
// descriptor per input shape, and the output shape computed by pool2d_op's rules.
//
// Matching the CPU op's average divisor (the window clipped to the padded input):
// - every window inside the padded input (floor mode, or ceil mode that rounded nothing up):
//   the divisor is always kh * kw, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
// - no padding: the clipped window is the part inside the input, which is what
//   CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING counts, ceil-mode overhang included;
// - padding and an overhanging ceil-mode window: neither mode fits, so the op refuses it.
// Ceil mode itself: cuDNN's own output size rounds down, but it pools into whatever output the
// y descriptor describes (cudnn.torch and MXNet's "full" convention rely on it), so y gets the
// op's ceil-mode extent and the windows past the input see only the cells that exist.
// Max pooling uses CUDNN_POOLING_MAX_DETERMINISTIC (same maxima, a reproducible backward) and
// ignores padding and NaN (CUDNN_NOT_PROPAGATE_NAN), as the CPU op's `>` comparison does.
// Global average pooling is average pooling with the window the whole plane.
#include "kernels/cuda/pooling_cuda.hpp"
#include "kernels/cuda/cudnn_descriptor.hpp"

#include <climits>
#include <stdexcept>
#include <string>

#include "kernels/cpu/shape_cache.hpp"

namespace troupe::cuda {

namespace {

// The window the op pools with over input x: its parameters, or the whole plane.
struct window {
  std::int64_t kh, kw, sh, sw, ph, pw;
};

window window_of(const pool2d_params& p, const shape_t& x) {
  if (p.kind == pool_kind::global_average)
    return {x[2], x[3], 1, 1, 0, 0};
  return {p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w};
}

// The cuDNN mode that computes what pool2d_op computes for input x and output y (see above).
cudnnPoolingMode_t pooling_mode(const pool2d_params& p, const window& g, const shape_t& x,
                                const shape_t& y) {
  if (p.kind == pool_kind::max)
    return CUDNN_POOLING_MAX_DETERMINISTIC;
  const bool overhang =
    (y[2] - 1) * g.sh - g.ph + g.kh > x[2] + g.ph || (y[3] - 1) * g.sw - g.pw + g.kw > x[3] + g.pw;
  if (!overhang)
    return CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  if (g.ph == 0 && g.pw == 0)
    return CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  throw std::invalid_argument(
    "pool2d_cuda: average pooling of input " + shape_string(x) + " with padding "
    + std::to_string(g.ph) + "x" + std::to_string(g.pw) + " in ceil mode reaches past the padded "
    + "input, and cuDNN has no divisor that counts the padding but not the overhang");
}

// Descriptors for one input shape.
struct pool_plan {
  pool_plan(const window& g, cudnnPoolingMode_t mode, const shape_t& x, const shape_t& y,
            bool ceil_mode) {
    auto as_int = [](std::int64_t v) { return static_cast<int>(v); }; // checked in output_shape
    TROUPE_CUDA_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                 as_int(x[0]), as_int(x[1]), as_int(x[2]),
                                                 as_int(x[3])));
    TROUPE_CUDA_CHECK(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                 as_int(y[0]), as_int(y[1]), as_int(y[2]),
                                                 as_int(y[3])));
    TROUPE_CUDA_CHECK(cudnnSetPooling2dDescriptor(pool_desc, mode, CUDNN_NOT_PROPAGATE_NAN,
                                                  as_int(g.kh), as_int(g.kw), as_int(g.ph),
                                                  as_int(g.pw), as_int(g.sh), as_int(g.sw)));
    // Outside ceil mode our extent and cuDNN's must agree, or the descriptors are wrong.
    int n = 0, c = 0, h = 0, w = 0;
    TROUPE_CUDA_CHECK(cudnnGetPooling2dForwardOutputDim(pool_desc, x_desc, &n, &c, &h, &w));
    if (!ceil_mode && shape_t{n, c, h, w} != y)
      throw std::logic_error("pool2d_cuda: cuDNN computes output " + shape_string({n, c, h, w})
                             + " for input " + shape_string(x) + ", the op " + shape_string(y));
  }

  tensor_descriptor x_desc, y_desc;
  pooling_descriptor pool_desc;
};

void require_pointer(const void* p, const char* what) {
  if (p == nullptr)
    throw std::invalid_argument(std::string("pool2d_cuda: ") + what + " is null");
}

} // namespace

struct pool2d_cuda::impl {
  cpu::shape_cache<pool_plan> plans;

  pool_plan& plan(const pool2d_params& p, const shape_t& x, const shape_t& y) {
    return plans.get(cpu::make_shape_key(x), [&] {
      const window g = window_of(p, x);
      return std::make_unique<pool_plan>(g, pooling_mode(p, g, x, y), x, y, p.ceil_mode);
    });
  }
};

pool2d_cuda::pool2d_cuda(pool2d_params params)
    : params_(params), rules_(params), impl_(std::make_unique<impl>()) {
  if (params.kind != pool_kind::global_average
      && (params.kernel_h > INT_MAX || params.kernel_w > INT_MAX || params.stride_h > INT_MAX
          || params.stride_w > INT_MAX))
    throw std::invalid_argument(
      "pool2d_cuda: cuDNN takes kernels and strides up to INT_MAX (kernel "
      + std::to_string(params.kernel_h) + "x" + std::to_string(params.kernel_w) + ", stride "
      + std::to_string(params.stride_h) + "x" + std::to_string(params.stride_w) + ")");
}

pool2d_cuda::~pool2d_cuda() = default;
pool2d_cuda::pool2d_cuda(pool2d_cuda&&) noexcept = default;
pool2d_cuda& pool2d_cuda::operator=(pool2d_cuda&&) noexcept = default;

// pool2d_op::output_shape's rules, plus cuDNN's: extents fit an int, and the average's
// divisor has a cuDNN mode (pooling_mode).
shape_t pool2d_cuda::output_shape(const shape_t& x) const {
  for (auto d : x)
    if (d > INT_MAX)
      throw std::invalid_argument("pool2d_cuda: input " + shape_string(x)
                                  + " has an extent beyond INT_MAX, which cuDNN cannot take");
  shape_t y = rules_.output_shape(x);
  if (params_.kind != pool_kind::global_average)
    pooling_mode(params_, window_of(params_, x), x, y); // throws where cuDNN cannot match the op
  return y;
}

void pool2d_cuda::forward(cuda_context& context, const shape_t& x_shape, const float* x, float* y) {
  const shape_t y_shape = output_shape(x_shape);
  require_pointer(x, "x");
  require_pointer(y, "y");
  pool_plan& plan = impl_->plan(params_, x_shape, y_shape);
  const float one = 1.0f, zero = 0.0f;
  TROUPE_CUDA_CHECK(cudnnPoolingForward(context.cudnn(), plan.pool_desc, &one, plan.x_desc, x,
                                        &zero, plan.y_desc, y));
}

void pool2d_cuda::backward(cuda_context& context, const shape_t& x_shape, const float* x,
                           const float* y, const float* dy, float* dx) {
  const shape_t y_shape = output_shape(x_shape);
  require_pointer(x, "x");
  require_pointer(y, "y");
  require_pointer(dy, "dy");
  require_pointer(dx, "dx");
  pool_plan& plan = impl_->plan(params_, x_shape, y_shape);
  const float one = 1.0f, zero = 0.0f;
  TROUPE_CUDA_CHECK(cudnnPoolingBackward(context.cudnn(), plan.pool_desc, &one, plan.y_desc, y,
                                         plan.y_desc, dy, plan.x_desc, x, &zero, plan.x_desc, dx));
}

} // namespace troupe::cuda
