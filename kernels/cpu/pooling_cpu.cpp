// Max, average and global-average pooling on oneDNN, directly on the caller's NCHW buffers
// (pooling is memory-bound; a blocked detour would double the traffic).
//
// Output sizes follow PyTorch: floor((H + 2p - k) / s) + 1, or with ceil_mode the ceiling,
// minus one when the last window would start past the input and left padding. oneDNN gets the
// right padding that makes its sizes agree. Average pooling counts padding in the divisor but
// not the cells a ceil-mode window hangs past the padded input (PyTorch and MXNet agree); oneDNN
// always divides by kh*kw, so the last output row / column is rescaled when that happens
// (forward: the outputs; backward: a scaled copy of dy).
#include "kernels/pooling.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/dnnl_context.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/shape_cache.hpp"

namespace troupe {

namespace {

using namespace cpu;
using tag = memory::format_tag;
using dnnl::algorithm;
using dnnl::prop_kind;
using pool_fwd = dnnl::pooling_forward;
using pool_bwd = dnnl::pooling_backward;

struct window {
  std::int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
};

window window_for(const pool2d_params& p, const shape_t& x) {
  if (p.kind == pool_kind::global_average)
    return {x[2], x[3], 1, 1, 0, 0};
  return {p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w};
}

std::int64_t pooled_extent(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pad,
                           bool ceil_mode) {
  std::int64_t span = in + 2 * pad - k;
  std::int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad)
    --out;
  return out;
}

// Rescale factors kh*kw / (cells inside the padded input) per output row or column; empty when
// every window fits (the usual case).
std::vector<float> edge_factors(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s,
                                std::int64_t pad) {
  std::vector<float> f(static_cast<std::size_t>(out), 1.0f);
  bool any = false;
  for (std::int64_t i = 0; i < out; ++i) {
    std::int64_t start = i * s - pad;
    std::int64_t end = std::min(start + k, in + pad);
    if (end - start < k) {
      f[static_cast<std::size_t>(i)] = static_cast<float>(k) / static_cast<float>(end - start);
      any = true;
    }
  }
  return any ? f : std::vector<float>{};
}

struct pool_entry {
  pool_fwd::primitive_desc train_pd, infer_pd;
  pool_fwd train_prim, infer_prim;
  pool_bwd::primitive_desc bwd_pd;
  pool_bwd bwd_prim;
  memory src, dst, diff_src, diff_dst, workspace;
  arena_plan arena;
  std::size_t scaled_dy_offset = 0;
  scratchpad_arg train_scratch, infer_scratch, bwd_scratch;
  dnnl_args train_args, infer_args, bwd_args;
  std::vector<float> row_factors, col_factors;  // average pooling, ceil-mode edges
  shape_t y_shape;
  bool trained = false;
};

std::unique_ptr<pool_entry> make_entry(const pool2d_params& p, const shape_t& x,
                                       const shape_t& y) {
  auto e = std::make_unique<pool_entry>();
  window w = window_for(p, x);
  auto alg = p.kind == pool_kind::max ? algorithm::pooling_max
                                      : algorithm::pooling_avg_include_padding;
  memory::dims strides{w.stride_h, w.stride_w}, kernel{w.kernel_h, w.kernel_w};
  memory::dims pad_l{w.pad_h, w.pad_w};
  memory::dims pad_r{std::max(w.pad_h, (y[2] - 1) * w.stride_h + w.kernel_h - x[2] - w.pad_h),
                     std::max(w.pad_w, (y[3] - 1) * w.stride_w + w.kernel_w - x[3] - w.pad_w)};
  auto src_md = plain_desc(to_dims(x), tag::nchw);
  auto dst_md = plain_desc(to_dims(y), tag::nchw);
  auto attr = user_scratchpad_attr();
  e->train_pd = pool_fwd::primitive_desc(
    pool_fwd::desc(prop_kind::forward_training, alg, src_md, dst_md, strides, kernel, pad_l,
                   pad_r),
    attr, engine());
  e->infer_pd = pool_fwd::primitive_desc(
    pool_fwd::desc(prop_kind::forward_inference, alg, src_md, dst_md, strides, kernel, pad_l,
                   pad_r),
    attr, engine());
  e->bwd_pd = pool_bwd::primitive_desc(
    pool_bwd::desc(alg, src_md, dst_md, strides, kernel, pad_l, pad_r), attr, engine(),
    e->train_pd);
  e->train_prim = pool_fwd(e->train_pd);
  e->infer_prim = pool_fwd(e->infer_pd);
  e->bwd_prim = pool_bwd(e->bwd_pd);
  e->src = unbound_memory(src_md);
  e->dst = unbound_memory(dst_md);
  e->diff_src = unbound_memory(src_md);
  e->diff_dst = unbound_memory(dst_md);
  e->train_scratch = scratchpad_arg(e->train_pd.scratchpad_desc(), e->arena);
  e->infer_scratch = scratchpad_arg(e->infer_pd.scratchpad_desc(), e->arena);
  e->bwd_scratch = scratchpad_arg(e->bwd_pd.scratchpad_desc(), e->arena);
  e->train_args = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_DST, e->dst}};
  e->infer_args = e->train_args;
  e->bwd_args = {{DNNL_ARG_DIFF_DST, e->diff_dst}, {DNNL_ARG_DIFF_SRC, e->diff_src}};
  if (p.kind == pool_kind::max) {
    e->workspace = memory(e->train_pd.workspace_desc(), engine());
    e->train_args[DNNL_ARG_WORKSPACE] = e->workspace;
    e->bwd_args[DNNL_ARG_WORKSPACE] = e->workspace;
  } else if (p.kind == pool_kind::average) {
    e->row_factors = edge_factors(x[2], y[2], w.kernel_h, w.stride_h, w.pad_h);
    e->col_factors = edge_factors(x[3], y[3], w.kernel_w, w.stride_w, w.pad_w);
    if (!e->row_factors.empty() || !e->col_factors.empty())
      e->scaled_dy_offset = e->arena.add(dst_md.get_size());
  }
  e->train_scratch.add_to(e->train_args);
  e->infer_scratch.add_to(e->infer_args);
  e->bwd_scratch.add_to(e->bwd_args);
  e->y_shape = y;
  return e;
}

bool has_edge_factors(const pool_entry& e) {
  return !e.row_factors.empty() || !e.col_factors.empty();
}

// out[n, c, i, j] = in[n, c, i, j] * row[i] * col[j] (an empty list means all ones).
void apply_edge_factors(const pool_entry& e, const float* in, float* out) {
  const auto& y = e.y_shape;
  std::int64_t planes = y[0] * y[1], rows = y[2], cols = y[3];
  parallel_range(planes, std::max<std::int64_t>(1, elementwise_grain / (rows * cols)),
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t pl = begin; pl < end; ++pl) {
                     for (std::int64_t i = 0; i < rows; ++i) {
                       float r = e.row_factors.empty() ? 1.0f : e.row_factors[i];
                       std::int64_t base = (pl * rows + i) * cols;
                       for (std::int64_t j = 0; j < cols; ++j) {
                         float c = e.col_factors.empty() ? 1.0f : e.col_factors[j];
                         out[base + j] = in[base + j] * r * c;
                       }
                     }
                   }
                 });
}

} // namespace

struct pool2d_op::impl {
  shape_cache<pool_entry> cache;
};

pool2d_op::pool2d_op(pool2d_params params) : params_(params), impl_(std::make_unique<impl>()) {
  if (params.kind == pool_kind::global_average)
    return;
  if (params.kernel_h < 1 || params.kernel_w < 1 || params.stride_h < 1 || params.stride_w < 1)
    throw std::invalid_argument("pool2d: kernel and stride must be >= 1 (kernel "
                                + std::to_string(params.kernel_h) + "x"
                                + std::to_string(params.kernel_w) + ", stride "
                                + std::to_string(params.stride_h) + "x"
                                + std::to_string(params.stride_w) + ")");
  if (params.pad_h < 0 || params.pad_w < 0 || 2 * params.pad_h > params.kernel_h
      || 2 * params.pad_w > params.kernel_w)
    throw std::invalid_argument("pool2d: padding must be in [0, kernel / 2] (pad "
                                + std::to_string(params.pad_h) + "x"
                                + std::to_string(params.pad_w) + ", kernel "
                                + std::to_string(params.kernel_h) + "x"
                                + std::to_string(params.kernel_w) + ")");
}

pool2d_op::~pool2d_op() = default;
pool2d_op::pool2d_op(pool2d_op&&) noexcept = default;
pool2d_op& pool2d_op::operator=(pool2d_op&&) noexcept = default;

shape_t pool2d_op::output_shape(const shape_t& x) const {
  if (x.size() != 4 || shape_numel(x) == 0)
    throw std::invalid_argument("pool2d: input " + shape_string(x)
                                + " must be a non-empty [N, C, H, W]");
  if (params_.kind == pool_kind::global_average)
    return {x[0], x[1], 1, 1};
  window w = window_for(params_, x);
  if (x[2] + 2 * w.pad_h < w.kernel_h || x[3] + 2 * w.pad_w < w.kernel_w)
    throw std::invalid_argument("pool2d: window " + std::to_string(w.kernel_h) + "x"
                                + std::to_string(w.kernel_w) + " does not fit input "
                                + shape_string(x) + " with padding "
                                + std::to_string(w.pad_h) + "x" + std::to_string(w.pad_w));
  return {x[0], x[1],
          pooled_extent(x[2], w.kernel_h, w.stride_h, w.pad_h, params_.ceil_mode),
          pooled_extent(x[3], w.kernel_w, w.stride_w, w.pad_w, params_.ceil_mode)};
}

void pool2d_op::forward(const tensor& x, tensor& y, bool training) {
  shape_t out = output_shape(x.shape());
  if (y.shape() != out)
    throw std::invalid_argument("pool2d: y has shape " + shape_string(y.shape()) + ", expected "
                                + shape_string(out) + " for input " + shape_string(x.shape()));
  sync_openmp_threads();
  auto& e = impl_->cache.get(make_shape_key(x.shape()),
                             [&] { return make_entry(params_, x.shape(), out); });
  std::uint8_t* base = scratch_arena(e.arena.total());
  bind(e.src, x.data());
  bind(e.dst, y.data());
  auto& s = stream();
  if (training) {
    e.train_scratch.bind_arena(base);
    e.train_prim.execute(s, e.train_args);
    e.trained = true;
  } else {
    e.infer_scratch.bind_arena(base);
    e.infer_prim.execute(s, e.infer_args);
  }
  s.wait();
  if (has_edge_factors(e))
    apply_edge_factors(e, y.data(), y.data());
}

void pool2d_op::backward(const tensor& dy, tensor& dx) {
  shape_t out = output_shape(dx.shape());
  if (dy.shape() != out)
    throw std::invalid_argument("pool2d: dy has shape " + shape_string(dy.shape())
                                + ", expected " + shape_string(out) + " for dx "
                                + shape_string(dx.shape()));
  sync_openmp_threads();
  auto& e = impl_->cache.get(make_shape_key(dx.shape()),
                             [&] { return make_entry(params_, dx.shape(), out); });
  if (!e.trained)
    throw std::logic_error("pool2d: backward for input " + shape_string(dx.shape())
                           + " without a training forward of that shape");
  std::uint8_t* base = scratch_arena(e.arena.total());
  const float* grad = dy.data();
  if (has_edge_factors(e)) {
    auto* scaled = reinterpret_cast<float*>(base + e.scaled_dy_offset);
    apply_edge_factors(e, grad, scaled);
    grad = scaled;
  }
  bind(e.diff_dst, grad);
  bind(e.diff_src, dx.data());
  e.bwd_scratch.bind_arena(base);
  auto& s = stream();
  e.bwd_prim.execute(s, e.bwd_args);
  s.wait();
}

} // namespace troupe
