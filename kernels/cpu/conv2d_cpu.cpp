// 2-D convolution on oneDNN: forward, backward-data and backward-weights primitives created
// with format_tag::any, so oneDNN picks its fastest (blocked) layouts, and cached per shape.
//
// Where time goes: the convolutions themselves, and the reorders between the caller's NCHW and
// the blocked layouts. To keep reorders to the unavoidable ones:
// - a layout that already matches (e.g. the plain input of a first layer with 1-3 channels)
//   is used in place, without a copy;
// - the blocked copy of x made by forward is kept and reused by backward-weights, when that
//   primitive wants the same layout and backward is handed the same x buffer;
// - dy is reordered once when backward-data and backward-weights agree on its layout;
// - backward-data often wants weights in another blocking than forward (ABcd8a8b vs
//   ABcd8b8a), so the descriptors are compared and the weights reordered only when they differ;
// - a single input channel runs backward-weights in NHWC (the same bytes as NCHW then), which
//   is ~4x faster than the blocked kernel that pads the channel to 8.
// Transient blocked buffers (y, dy, dx, dw, scratchpads) live in the per-thread scratch arena.
#include <troupe/kernels/conv2d.hpp>

#include <stdexcept>

#include "kernels/cpu/dnnl_context.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/shape_cache.hpp"
#include "kernels/cpu/shape_checks.hpp"

namespace troupe {

namespace {

using namespace cpu;
using tag = memory::format_tag;
using dnnl::algorithm;
using dnnl::prop_kind;

struct conv_geometry {
  memory::dims src, weights, bias, dst, strides, pad_l, pad_r;
  tag weights_tag;
};

conv_geometry make_geometry(const conv2d_params& p, const shape_t& x, const shape_t& w,
                            const shape_t& y) {
  conv_geometry g;
  g.src = to_dims(x);
  g.dst = to_dims(y);
  g.bias = {w[0]};
  if (p.groups > 1) {
    g.weights = {p.groups, w[0] / p.groups, w[1], w[2], w[3]};
    g.weights_tag = tag::goihw;
  } else {
    g.weights = to_dims(w);
    g.weights_tag = tag::oihw;
  }
  g.strides = {p.stride_h, p.stride_w};
  // Symmetric padding; oneDNN, like the frameworks, drops a partial last window.
  g.pad_l = {p.pad_h, p.pad_w};
  g.pad_r = g.pad_l;
  return g;
}

memory::desc any_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, tag::any);
}

struct forward_plan {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  arena_plan arena;
  staged_arg x, w, y;
  memory bias;
  scratchpad_arg scratch;
  dnnl_args args;
  bool has_bias = false;
};

struct backward_plan {
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data data_prim;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights weights_prim;
  arena_plan arena;
  staged_arg dy_data, w_data, dx;       // backward-data side (when dx is wanted)
  staged_arg dy_weights, x_weights, dw; // backward-weights side
  bool dy_shared = false;               // dy_data's inner layout serves both
  bool w_reuses_forward = false;        // forward's weights layout fits backward-data
  bool x_reuses_forward = false;        // forward's source layout fits backward-weights
  memory db;
  scratchpad_arg data_scratch, weights_scratch;
  dnnl_args data_args, weights_args;
  bool has_dx = false, has_db = false;
};

struct conv_entry {
  conv_geometry geometry;
  std::unique_ptr<forward_plan> forward;
  std::unique_ptr<backward_plan> backward;
  // The buffers forward last saw, so backward can tell whether its blocked copies still fit.
  const float* forward_x = nullptr;
  const float* forward_w = nullptr;
};

std::unique_ptr<forward_plan> make_forward(const conv_geometry& g, bool has_bias) {
  auto plan = std::make_unique<forward_plan>();
  auto desc = has_bias
                ? dnnl::convolution_forward::desc(prop_kind::forward_training,
                                                  algorithm::convolution_direct, any_desc(g.src),
                                                  any_desc(g.weights), plain_desc(g.bias, tag::a),
                                                  any_desc(g.dst), g.strides, g.pad_l, g.pad_r)
                : dnnl::convolution_forward::desc(
                  prop_kind::forward_training, algorithm::convolution_direct, any_desc(g.src),
                  any_desc(g.weights), any_desc(g.dst), g.strides, g.pad_l, g.pad_r);
  plan->pd = dnnl::convolution_forward::primitive_desc(desc, user_scratchpad_attr(), engine());
  plan->prim = dnnl::convolution_forward(plan->pd);
  auto& a = plan->arena;
  // x starts in the arena; the first backward moves it to a buffer of its own so later
  // forwards leave a blocked copy for backward-weights (inference-only shapes never pay).
  plan->x = staged_arg(plain_desc(g.src, tag::nchw), plan->pd.src_desc(), staged_arg::role::input,
                       false, a);
  plan->w = staged_arg(plain_desc(g.weights, g.weights_tag), plan->pd.weights_desc(),
                       staged_arg::role::input, true, a);
  plan->y = staged_arg(plain_desc(g.dst, tag::nchw), plan->pd.dst_desc(), staged_arg::role::output,
                       false, a);
  plan->scratch = scratchpad_arg(plan->pd.scratchpad_desc(), a);
  plan->args = {{DNNL_ARG_SRC, plan->x.inner()},
                {DNNL_ARG_WEIGHTS, plan->w.inner()},
                {DNNL_ARG_DST, plan->y.inner()}};
  if (has_bias) {
    plan->bias = unbound_memory(plain_desc(g.bias, tag::a));
    plan->args[DNNL_ARG_BIAS] = plan->bias;
  }
  plan->scratch.add_to(plan->args);
  plan->has_bias = has_bias;
  return plan;
}

void make_backward_data(const conv_geometry& g, const forward_plan& fwd, backward_plan& plan) {
  auto& a = plan.arena;
  dnnl::convolution_backward_data::desc desc(algorithm::convolution_direct, any_desc(g.src),
                                             any_desc(g.weights), any_desc(g.dst), g.strides,
                                             g.pad_l, g.pad_r);
  plan.data_pd =
    dnnl::convolution_backward_data::primitive_desc(desc, user_scratchpad_attr(), engine(), fwd.pd);
  plan.data_prim = dnnl::convolution_backward_data(plan.data_pd);
  plan.dy_data = staged_arg(plain_desc(g.dst, tag::nchw), plan.data_pd.diff_dst_desc(),
                            staged_arg::role::input, false, a);
  plan.w_reuses_forward = plan.data_pd.weights_desc() == fwd.pd.weights_desc();
  if (!plan.w_reuses_forward)
    plan.w_data = staged_arg(plain_desc(g.weights, g.weights_tag), plan.data_pd.weights_desc(),
                             staged_arg::role::input, true, a);
  plan.dx = staged_arg(plain_desc(g.src, tag::nchw), plan.data_pd.diff_src_desc(),
                       staged_arg::role::output, false, a);
  plan.data_scratch = scratchpad_arg(plan.data_pd.scratchpad_desc(), a);
  plan.data_args = {{DNNL_ARG_DIFF_DST, plan.dy_data.inner()},
                    {DNNL_ARG_WEIGHTS, plan.w_reuses_forward ? fwd.w.inner() : plan.w_data.inner()},
                    {DNNL_ARG_DIFF_SRC, plan.dx.inner()}};
  plan.data_scratch.add_to(plan.data_args);
}

void make_backward_weights(const conv_geometry& g, const forward_plan& fwd, backward_plan& plan) {
  auto& a = plan.arena;
  // One input channel: NCHW and NHWC are the same bytes, and oneDNN's NHWC jit kernel beats
  // its blocked one (which pads the channel to 8) about 4x on LeNet's first layer; only dy
  // needs a reorder then.
  bool one_channel = g.src[1] == 1;
  memory::desc x_user = plain_desc(g.src, one_channel ? tag::nhwc : tag::nchw);
  memory::desc x_want = one_channel ? x_user : any_desc(g.src);
  memory::desc dy_want = one_channel ? plain_desc(g.dst, tag::nhwc) : any_desc(g.dst);
  auto desc = plan.has_db
                ? dnnl::convolution_backward_weights::desc(
                  algorithm::convolution_direct, x_want, any_desc(g.weights),
                  plain_desc(g.bias, tag::a), dy_want, g.strides, g.pad_l, g.pad_r)
                : dnnl::convolution_backward_weights::desc(algorithm::convolution_direct, x_want,
                                                           any_desc(g.weights), dy_want, g.strides,
                                                           g.pad_l, g.pad_r);
  plan.weights_pd = dnnl::convolution_backward_weights::primitive_desc(desc, user_scratchpad_attr(),
                                                                       engine(), fwd.pd);
  plan.weights_prim = dnnl::convolution_backward_weights(plan.weights_pd);
  plan.dy_shared = plan.has_dx && plan.weights_pd.diff_dst_desc() == plan.data_pd.diff_dst_desc();
  if (!plan.dy_shared)
    plan.dy_weights = staged_arg(plain_desc(g.dst, tag::nchw), plan.weights_pd.diff_dst_desc(),
                                 staged_arg::role::input, false, a);
  plan.x_reuses_forward = plan.weights_pd.src_desc() == fwd.pd.src_desc();
  plan.x_weights =
    staged_arg(x_user, plan.weights_pd.src_desc(), staged_arg::role::input, false, a);
  plan.dw = staged_arg(plain_desc(g.weights, g.weights_tag), plan.weights_pd.diff_weights_desc(),
                       staged_arg::role::output, false, a);
  plan.weights_scratch = scratchpad_arg(plan.weights_pd.scratchpad_desc(), a);
  plan.weights_args = {
    {DNNL_ARG_DIFF_DST, plan.dy_shared ? plan.dy_data.inner() : plan.dy_weights.inner()},
    {DNNL_ARG_SRC, plan.x_weights.inner()},
    {DNNL_ARG_DIFF_WEIGHTS, plan.dw.inner()}};
  if (plan.has_db) {
    plan.db = unbound_memory(plain_desc(g.bias, tag::a));
    plan.weights_args[DNNL_ARG_DIFF_BIAS] = plan.db;
  }
  plan.weights_scratch.add_to(plan.weights_args);
}

std::unique_ptr<backward_plan> make_backward(const conv_geometry& g, const forward_plan& fwd,
                                             bool has_dx, bool has_db) {
  auto plan = std::make_unique<backward_plan>();
  plan->has_dx = has_dx;
  plan->has_db = has_db;
  if (has_dx)
    make_backward_data(g, fwd, *plan);
  make_backward_weights(g, fwd, *plan);
  return plan;
}

void require_shape(const char* what, const shape_t& got, const shape_t& want) {
  cpu::require_shape("conv2d", what, got, want);
}

} // namespace

struct conv2d_op::impl {
  shape_cache<conv_entry> cache;

  conv_entry& entry(const conv2d_params& p, const shape_t& x, const shape_t& w, const shape_t& y) {
    return cache.get(make_shape_key(x, w), [&] {
      auto e = std::make_unique<conv_entry>();
      e->geometry = make_geometry(p, x, w, y);
      return e;
    });
  }
};

conv2d_op::conv2d_op(conv2d_params params) : params_(params), impl_(std::make_unique<impl>()) {
  if (params.stride_h < 1 || params.stride_w < 1 || params.pad_h < 0 || params.pad_w < 0
      || params.groups < 1)
    throw std::invalid_argument("conv2d: strides and groups must be >= 1 and padding >= 0 (stride "
                                + std::to_string(params.stride_h) + "x"
                                + std::to_string(params.stride_w) + ", pad "
                                + std::to_string(params.pad_h) + "x" + std::to_string(params.pad_w)
                                + ", groups " + std::to_string(params.groups) + ")");
}

conv2d_op::~conv2d_op() = default;
conv2d_op::conv2d_op(conv2d_op&&) noexcept = default;
conv2d_op& conv2d_op::operator=(conv2d_op&&) noexcept = default;

shape_t conv2d_op::output_shape(const shape_t& x, const shape_t& w) const {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("conv2d: input " + shape_string(x) + " and weights "
                                + shape_string(w) + " do not fit: " + why);
  };
  if (x.size() != 4 || w.size() != 4)
    fail("both must be rank 4 (NCHW and OIHW)");
  const auto& p = params_;
  if (x[1] % p.groups != 0 || w[0] % p.groups != 0)
    fail("channels are not divisible by groups = " + std::to_string(p.groups));
  if (w[1] * p.groups != x[1])
    fail("weights expect " + std::to_string(w[1] * p.groups) + " input channels");
  std::int64_t span_h = x[2] + 2 * p.pad_h - w[2];
  std::int64_t span_w = x[3] + 2 * p.pad_w - w[3];
  if (span_h < 0 || span_w < 0)
    fail("the kernel is larger than the padded input");
  if (x[0] < 1 || w[0] < 1)
    fail("empty batch or no output channels");
  return {x[0], w[0], span_h / p.stride_h + 1, span_w / p.stride_w + 1};
}

void conv2d_op::forward(const tensor& x, const tensor& w, const tensor* b, tensor& y) {
  shape_t out = output_shape(x.shape(), w.shape());
  require_shape("y", y.shape(), out);
  if (b != nullptr)
    require_shape("bias", b->shape(), {w.dim(0)});
  openmp_thread_scope omp_threads;
  auto& e = impl_->entry(params_, x.shape(), w.shape(), out);
  if (!e.forward || e.forward->has_bias != (b != nullptr)) {
    e.forward = make_forward(e.geometry, b != nullptr);
    e.backward.reset(); // it was hinted by the old forward descriptor
  }
  auto& f = *e.forward;
  std::uint8_t* base = scratch_arena(f.arena.total());
  f.x.bind_arena(base);
  f.y.bind_arena(base);
  f.scratch.bind_arena(base);
  f.x.bind_user(x.data());
  f.w.bind_user(w.data());
  f.y.bind_user(y.data());
  if (b != nullptr)
    bind(f.bias, b->data());
  auto& s = stream();
  f.x.load(s);
  f.w.load(s);
  f.prim.execute(s, f.args);
  f.y.store(s);
  s.wait();
  e.forward_x = x.data();
  e.forward_w = w.data();
}

namespace {

// dx from dy; dy is left in the inner layout for backward-weights when they share it.
void run_backward_data(conv_entry& e, const tensor& w, const tensor& dy, tensor& dx,
                       std::uint8_t* base, dnnl::stream& s) {
  auto& f = *e.forward;
  auto& bwd = *e.backward;
  bwd.dx.bind_arena(base);
  bwd.data_scratch.bind_arena(base);
  bwd.dy_data.bind_user(dy.data());
  bwd.dy_data.load(s);
  if (bwd.w_reuses_forward) {
    // The forward's blocked weights are reusable only if they came from this very buffer.
    f.w.bind_user(w.data());
    if (e.forward_w != w.data()) {
      f.w.load(s);
      e.forward_w = w.data();
    }
  } else {
    bwd.w_data.bind_user(w.data());
    bwd.w_data.load(s);
  }
  bwd.dx.bind_user(dx.data());
  bwd.data_prim.execute(s, bwd.data_args);
  bwd.dx.store(s);
}

void run_backward_weights(conv_entry& e, const tensor& x, const tensor& dy, tensor& dw, tensor* db,
                          std::uint8_t* base, dnnl::stream& s) {
  auto& f = *e.forward;
  auto& bwd = *e.backward;
  if (!bwd.dy_shared) {
    bwd.dy_weights.bind_user(dy.data());
    bwd.dy_weights.load(s);
  }
  // Forward's blocked x is current only if forward saw this buffer after x got its own
  // storage (until then it lived in the arena, which other ops have overwritten since).
  bool x_fresh =
    bwd.x_reuses_forward && f.x.reorders() && f.x.persistent() && e.forward_x == x.data();
  if (x_fresh) {
    bwd.weights_args[DNNL_ARG_SRC] = f.x.inner();
  } else {
    bwd.x_weights.bind_arena(base);
    bwd.x_weights.bind_user(x.data());
    bwd.x_weights.load(s);
    bwd.weights_args[DNNL_ARG_SRC] = bwd.x_weights.inner();
  }
  bwd.dw.bind_arena(base);
  bwd.dw.bind_user(dw.data());
  bwd.weights_scratch.bind_arena(base);
  if (db != nullptr)
    bind(bwd.db, db->data());
  bwd.weights_prim.execute(s, bwd.weights_args);
  bwd.dw.store(s);
}

} // namespace

void conv2d_op::backward(const tensor& x, const tensor& w, const tensor& dy, tensor* dx, tensor& dw,
                         tensor* db) {
  shape_t out = output_shape(x.shape(), w.shape());
  cpu::require_weighted_backward_shapes("conv2d", x, w, out, dy, dx, dw, db);
  openmp_thread_scope omp_threads;
  auto& e = impl_->entry(params_, x.shape(), w.shape(), out);
  if (!e.forward) {
    e.forward = make_forward(e.geometry, db != nullptr);
    e.forward_x = e.forward_w = nullptr;
  }
  bool has_dx = dx != nullptr, has_db = db != nullptr;
  if (!e.backward || e.backward->has_dx != has_dx || e.backward->has_db != has_db)
    e.backward = make_backward(e.geometry, *e.forward, has_dx, has_db);
  std::uint8_t* base = scratch_arena(e.backward->arena.total());
  e.backward->dy_data.bind_arena(base);
  e.backward->dy_weights.bind_arena(base);
  auto& s = stream();
  if (has_dx)
    run_backward_data(e, w, dy, *dx, base, s);
  run_backward_weights(e, x, dy, dw, db, base, s);
  s.wait();
  // From now on forward keeps its blocked x for the next backward.
  if (e.backward->x_reuses_forward)
    e.forward->x.make_persistent();
}

} // namespace troupe
