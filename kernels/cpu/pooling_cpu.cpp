// Max, average and global-average pooling as loops over the caller's NCHW planes.
//
// Why not oneDNN: version 2.6 pools plain NCHW with its `simple_nchw` reference loops, which
// took 12.6 ms for LeNet's [128, 32, 28, 28] max pool on 2 cores (0.5 ms here); its jit
// kernels want blocked layouts (a reorder each way). One (n, c) plane is contiguous here, so
// planes are spread over the threads and each window is read straight from the plane.
//
// Conventions (PyTorch's): output extent floor((H + 2p - k) / s) + 1, or the ceiling in
// ceil_mode minus one when the last window would start in the right padding; max pooling never
// picks padding and the first maximum wins ties; average pooling divides by the window clipped
// to the padded input (padding counts, the part of a ceil-mode window past it does not).
// Max pooling keeps each output's arg-max (index within its plane) from the last training
// forward of that shape.
#include <troupe/kernels/pooling.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/shape_cache.hpp"

namespace troupe {

namespace {

struct pool_geometry {
  std::int64_t planes, h, w, p, q; // input H x W -> output P x Q, N*C planes
  std::int64_t kh, kw, sh, sw, ph, pw;
  std::int64_t in_plane() const { return h * w; }
  std::int64_t out_plane() const { return p * q; }
};

// The rows (or columns) of output index o: [begin, end) clipped to the input, and the extent
// of the window clipped to the padded input (the average's divisor).
struct span {
  std::int64_t begin, end, padded;
};

span window_span(std::int64_t o, std::int64_t stride, std::int64_t pad, std::int64_t k,
                 std::int64_t extent) {
  std::int64_t start = o * stride - pad;
  std::int64_t stop = std::min(start + k, extent + pad);
  return {std::max<std::int64_t>(start, 0), std::min(start + k, extent), stop - start};
}

std::int64_t pooled_extent(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pad,
                           bool ceil_mode) {
  std::int64_t span = in + 2 * pad - k;
  std::int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad)
    --out;
  return out;
}

struct pool_entry {
  pool_geometry g{};
  std::vector<std::int32_t> arg_max; // per output, index within its input plane
  bool trained = false;
};

std::int64_t plane_grain(const pool_geometry& g) {
  return std::max<std::int64_t>(1,
                                cpu::elementwise_grain / std::max<std::int64_t>(1, g.in_plane()));
}

void max_forward_plane(const pool_geometry& g, const float* x, float* y, std::int32_t* arg) {
  for (std::int64_t oh = 0; oh < g.p; ++oh) {
    span rows = window_span(oh, g.sh, g.ph, g.kh, g.h);
    for (std::int64_t ow = 0; ow < g.q; ++ow) {
      span cols = window_span(ow, g.sw, g.pw, g.kw, g.w);
      float best = -std::numeric_limits<float>::infinity();
      std::int64_t best_i = rows.begin * g.w + cols.begin;
      for (std::int64_t r = rows.begin; r < rows.end; ++r)
        for (std::int64_t c = cols.begin; c < cols.end; ++c)
          if (x[r * g.w + c] > best) {
            best = x[r * g.w + c];
            best_i = r * g.w + c;
          }
      y[oh * g.q + ow] = best;
      if (arg)
        arg[oh * g.q + ow] = static_cast<std::int32_t>(best_i);
    }
  }
}

// The 2x2 / stride 2 / no padding window of LeNet and VGG, written branch-free so it
// vectorizes (the generic loop above runs ~3x slower on LeNet's first pool). Same tie rule:
// the earlier cell in row-major window order wins.
void max2x2_forward_plane(const pool_geometry& g, const float* x, float* y, std::int32_t* arg) {
  for (std::int64_t oh = 0; oh < g.p; ++oh) {
    const float* r0 = x + 2 * oh * g.w;
    const float* r1 = r0 + g.w;
    float* out = y + oh * g.q;
    const auto row_base = static_cast<std::int32_t>(2 * oh * g.w);
    const auto w = static_cast<std::int32_t>(g.w);
    for (std::int64_t ow = 0; ow < g.q; ++ow) {
      float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
      float top = b > a ? b : a;
      float bottom = d > c ? d : c;
      out[ow] = bottom > top ? bottom : top;
      if (arg) {
        std::int32_t col = static_cast<std::int32_t>(2 * ow);
        std::int32_t top_i = b > a ? col + 1 : col;
        std::int32_t bottom_i = (d > c ? col + 1 : col) + w;
        arg[oh * g.q + ow] = row_base + (bottom > top ? bottom_i : top_i);
      }
    }
  }
}

void average_forward_plane(const pool_geometry& g, const float* x, float* y) {
  for (std::int64_t oh = 0; oh < g.p; ++oh) {
    span rows = window_span(oh, g.sh, g.ph, g.kh, g.h);
    for (std::int64_t ow = 0; ow < g.q; ++ow) {
      span cols = window_span(ow, g.sw, g.pw, g.kw, g.w);
      float sum = 0;
      for (std::int64_t r = rows.begin; r < rows.end; ++r)
        for (std::int64_t c = cols.begin; c < cols.end; ++c)
          sum += x[r * g.w + c];
      y[oh * g.q + ow] = sum / static_cast<float>(rows.padded * cols.padded);
    }
  }
}

void average_backward_plane(const pool_geometry& g, const float* dy, float* dx) {
  std::fill_n(dx, g.in_plane(), 0.0f);
  for (std::int64_t oh = 0; oh < g.p; ++oh) {
    span rows = window_span(oh, g.sh, g.ph, g.kh, g.h);
    for (std::int64_t ow = 0; ow < g.q; ++ow) {
      span cols = window_span(ow, g.sw, g.pw, g.kw, g.w);
      float share = dy[oh * g.q + ow] / static_cast<float>(rows.padded * cols.padded);
      for (std::int64_t r = rows.begin; r < rows.end; ++r)
        for (std::int64_t c = cols.begin; c < cols.end; ++c)
          dx[r * g.w + c] += share;
    }
  }
}

float plane_mean(const float* x, std::int64_t n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i)
    sum += x[i];
  return sum / static_cast<float>(n);
}

} // namespace

struct pool2d_op::impl {
  cpu::shape_cache<pool_entry> cache;
};

pool2d_op::pool2d_op(pool2d_params params) : params_(params), impl_(std::make_unique<impl>()) {
  if (params.kind == pool_kind::global_average)
    return;
  if (params.kernel_h < 1 || params.kernel_w < 1 || params.stride_h < 1 || params.stride_w < 1)
    throw std::invalid_argument(
      "pool2d: kernel and stride must be >= 1 (kernel " + std::to_string(params.kernel_h) + "x"
      + std::to_string(params.kernel_w) + ", stride " + std::to_string(params.stride_h) + "x"
      + std::to_string(params.stride_w) + ")");
  // PyTorch's rule; it also guarantees every window holds at least one input cell.
  if (params.pad_h < 0 || params.pad_w < 0 || 2 * params.pad_h > params.kernel_h
      || 2 * params.pad_w > params.kernel_w)
    throw std::invalid_argument("pool2d: padding must be in [0, kernel / 2] (pad "
                                + std::to_string(params.pad_h) + "x" + std::to_string(params.pad_w)
                                + ", kernel " + std::to_string(params.kernel_h) + "x"
                                + std::to_string(params.kernel_w) + ")");
}

pool2d_op::~pool2d_op() = default;
pool2d_op::pool2d_op(pool2d_op&&) noexcept = default;
pool2d_op& pool2d_op::operator=(pool2d_op&&) noexcept = default;

shape_t pool2d_op::output_shape(const shape_t& x) const {
  if (x.size() != 4 || shape_numel(x) == 0)
    throw std::invalid_argument("pool2d: input " + shape_string(x)
                                + " must be a non-empty [N, C, H, W]");
  const auto& p = params_;
  if (p.kind == pool_kind::global_average)
    return {x[0], x[1], 1, 1};
  if (x[2] + 2 * p.pad_h < p.kernel_h || x[3] + 2 * p.pad_w < p.kernel_w)
    throw std::invalid_argument("pool2d: window " + std::to_string(p.kernel_h) + "x"
                                + std::to_string(p.kernel_w) + " does not fit input "
                                + shape_string(x) + " with padding " + std::to_string(p.pad_h) + "x"
                                + std::to_string(p.pad_w));
  return {x[0], x[1], pooled_extent(x[2], p.kernel_h, p.stride_h, p.pad_h, p.ceil_mode),
          pooled_extent(x[3], p.kernel_w, p.stride_w, p.pad_w, p.ceil_mode)};
}

void pool2d_op::forward(const tensor& x, tensor& y, bool training) {
  shape_t out = output_shape(x.shape());
  if (y.shape() != out)
    throw std::invalid_argument("pool2d: y has shape " + shape_string(y.shape()) + ", expected "
                                + shape_string(out) + " for input " + shape_string(x.shape()));
  auto& e = impl_->cache.get(cpu::make_shape_key(x.shape()), [&] {
    auto entry = std::make_unique<pool_entry>();
    const auto& p = params_;
    bool global = p.kind == pool_kind::global_average;
    entry->g = {x.dim(0) * x.dim(1),
                x.dim(2),
                x.dim(3),
                out[2],
                out[3],
                global ? x.dim(2) : p.kernel_h,
                global ? x.dim(3) : p.kernel_w,
                global ? 1 : p.stride_h,
                global ? 1 : p.stride_w,
                global ? 0 : p.pad_h,
                global ? 0 : p.pad_w};
    return entry;
  });
  const pool_geometry& g = e.g;
  const float* in = x.data();
  float* result = y.data();
  std::int32_t* arg = nullptr;
  if (params_.kind == pool_kind::max && training) {
    e.arg_max.resize(static_cast<std::size_t>(g.planes * g.out_plane()));
    arg = e.arg_max.data();
  }
  const pool_kind kind = params_.kind;
  // Windows never reach past the input here: floor mode, or ceil mode that rounded nothing up.
  const bool two_by_two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0
                          && 2 * g.p <= g.h && 2 * g.q <= g.w;
  cpu::parallel_range(g.planes, plane_grain(g), [&](std::int64_t b, std::int64_t end) {
    for (std::int64_t pl = b; pl < end; ++pl) {
      const float* xp = in + pl * g.in_plane();
      float* yp = result + pl * g.out_plane();
      if (kind == pool_kind::max && two_by_two)
        max2x2_forward_plane(g, xp, yp, arg ? arg + pl * g.out_plane() : nullptr);
      else if (kind == pool_kind::max)
        max_forward_plane(g, xp, yp, arg ? arg + pl * g.out_plane() : nullptr);
      else if (kind == pool_kind::average)
        average_forward_plane(g, xp, yp);
      else
        *yp = plane_mean(xp, g.in_plane());
    }
  });
  if (training)
    e.trained = true;
}

void pool2d_op::backward(const tensor& dy, tensor& dx) {
  shape_t out = output_shape(dx.shape());
  if (dy.shape() != out)
    throw std::invalid_argument("pool2d: dy has shape " + shape_string(dy.shape()) + ", expected "
                                + shape_string(out) + " for dx " + shape_string(dx.shape()));
  pool_entry* e = impl_->cache.find(cpu::make_shape_key(dx.shape()));
  if (e == nullptr || !e->trained)
    throw std::logic_error("pool2d: backward for input " + shape_string(dx.shape())
                           + " without a training forward of that shape");
  const pool_geometry& g = e->g;
  const float* grad = dy.data();
  float* result = dx.data();
  const std::int32_t* arg = e->arg_max.data();
  const pool_kind kind = params_.kind;
  cpu::parallel_range(g.planes, plane_grain(g), [&](std::int64_t b, std::int64_t end) {
    for (std::int64_t pl = b; pl < end; ++pl) {
      const float* gp = grad + pl * g.out_plane();
      float* xp = result + pl * g.in_plane();
      if (kind == pool_kind::max) {
        std::fill_n(xp, g.in_plane(), 0.0f);
        const std::int32_t* ap = arg + pl * g.out_plane();
        for (std::int64_t o = 0; o < g.out_plane(); ++o)
          xp[ap[o]] += gp[o];
      } else if (kind == pool_kind::average) {
        average_backward_plane(g, gp, xp);
      } else {
        std::fill_n(xp, g.in_plane(), *gp / static_cast<float>(g.in_plane()));
      }
    }
  });
}

} // namespace troupe
