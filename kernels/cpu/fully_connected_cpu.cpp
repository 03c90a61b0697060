// Fully connected layer on oneDNN's inner product, in plain layouts throughout (x as [N, IN],
// w as [OUT, IN]): oneDNN runs these as its own jit sgemm, so a blocked weights layout would
// only add a reorder of w every step (the weights change every step).
//
// For MLP-sized layers one call is a few microseconds of compute, so the per-call path only
// rebinds buffer pointers on cached memory objects and argument maps.
#include <troupe/kernels/fully_connected.hpp>

#include <stdexcept>

#include "kernels/cpu/dnnl_context.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/shape_cache.hpp"
#include "kernels/cpu/shape_checks.hpp"

namespace troupe {

namespace {

using namespace cpu;
using tag = memory::format_tag;
using dnnl::prop_kind;
using ip_fwd = dnnl::inner_product_forward;
using ip_bwd_data = dnnl::inner_product_backward_data;
using ip_bwd_weights = dnnl::inner_product_backward_weights;

struct fc_descs {
  memory::desc src, weights, bias, dst;
};

struct fc_forward_plan {
  ip_fwd::primitive_desc pd;
  ip_fwd prim;
  scratchpad_arg scratch;
  dnnl_args args;
  bool has_bias = false;
};

struct fc_backward_plan {
  ip_bwd_data::primitive_desc data_pd;
  ip_bwd_data data_prim;
  ip_bwd_weights::primitive_desc weights_pd;
  ip_bwd_weights weights_prim;
  scratchpad_arg data_scratch, weights_scratch;
  dnnl_args data_args, weights_args;
  bool has_dx = false, has_db = false;
};

struct fc_entry {
  fc_descs d;
  memory src, weights, bias, dst, diff_src, diff_weights, diff_bias, diff_dst;
  arena_plan forward_arena, backward_arena;
  std::unique_ptr<fc_forward_plan> forward;
  std::unique_ptr<fc_backward_plan> backward;
};

std::unique_ptr<fc_entry> make_entry(std::int64_t n, std::int64_t in, std::int64_t out) {
  auto e = std::make_unique<fc_entry>();
  e->d.src = plain_desc({n, in}, tag::nc);
  e->d.weights = plain_desc({out, in}, tag::oi);
  e->d.bias = plain_desc({out}, tag::a);
  e->d.dst = plain_desc({n, out}, tag::nc);
  e->src = unbound_memory(e->d.src);
  e->diff_src = unbound_memory(e->d.src);
  e->weights = unbound_memory(e->d.weights);
  e->diff_weights = unbound_memory(e->d.weights);
  e->bias = unbound_memory(e->d.bias);
  e->diff_bias = unbound_memory(e->d.bias);
  e->dst = unbound_memory(e->d.dst);
  e->diff_dst = unbound_memory(e->d.dst);
  return e;
}

std::unique_ptr<fc_forward_plan> make_forward(fc_entry& e, bool has_bias) {
  auto plan = std::make_unique<fc_forward_plan>();
  const auto& d = e.d;
  auto desc = has_bias ? ip_fwd::desc(prop_kind::forward_training, d.src, d.weights, d.bias, d.dst)
                       : ip_fwd::desc(prop_kind::forward_training, d.src, d.weights, d.dst);
  plan->pd = ip_fwd::primitive_desc(desc, user_scratchpad_attr(), engine());
  plan->prim = ip_fwd(plan->pd);
  e.forward_arena = arena_plan();
  plan->scratch = scratchpad_arg(plan->pd.scratchpad_desc(), e.forward_arena);
  plan->args = {{DNNL_ARG_SRC, e.src}, {DNNL_ARG_WEIGHTS, e.weights}, {DNNL_ARG_DST, e.dst}};
  if (has_bias)
    plan->args[DNNL_ARG_BIAS] = e.bias;
  plan->scratch.add_to(plan->args);
  plan->has_bias = has_bias;
  return plan;
}

std::unique_ptr<fc_backward_plan> make_backward(fc_entry& e, bool has_dx, bool has_db) {
  auto plan = std::make_unique<fc_backward_plan>();
  const auto& d = e.d;
  auto attr = user_scratchpad_attr();
  e.backward_arena = arena_plan();
  if (has_dx) {
    plan->data_pd = ip_bwd_data::primitive_desc(ip_bwd_data::desc(d.src, d.weights, d.dst), attr,
                                                engine(), e.forward->pd);
    plan->data_prim = ip_bwd_data(plan->data_pd);
    plan->data_scratch = scratchpad_arg(plan->data_pd.scratchpad_desc(), e.backward_arena);
    plan->data_args = {{DNNL_ARG_DIFF_DST, e.diff_dst},
                       {DNNL_ARG_WEIGHTS, e.weights},
                       {DNNL_ARG_DIFF_SRC, e.diff_src}};
    plan->data_scratch.add_to(plan->data_args);
  }
  auto desc = has_db ? ip_bwd_weights::desc(d.src, d.weights, d.bias, d.dst)
                     : ip_bwd_weights::desc(d.src, d.weights, d.dst);
  plan->weights_pd = ip_bwd_weights::primitive_desc(desc, attr, engine(), e.forward->pd);
  plan->weights_prim = ip_bwd_weights(plan->weights_pd);
  plan->weights_scratch = scratchpad_arg(plan->weights_pd.scratchpad_desc(), e.backward_arena);
  plan->weights_args = {{DNNL_ARG_SRC, e.src},
                        {DNNL_ARG_DIFF_DST, e.diff_dst},
                        {DNNL_ARG_DIFF_WEIGHTS, e.diff_weights}};
  if (has_db)
    plan->weights_args[DNNL_ARG_DIFF_BIAS] = e.diff_bias;
  plan->weights_scratch.add_to(plan->weights_args);
  plan->has_dx = has_dx;
  plan->has_db = has_db;
  return plan;
}

void require_shape(const char* what, const shape_t& got, const shape_t& want) {
  cpu::require_shape("fully_connected", what, got, want);
}

} // namespace

struct fully_connected_op::impl {
  shape_cache<fc_entry> cache;

  fc_entry& entry(const shape_t& y, const shape_t& w) {
    // Keyed by [N, OUT] and [OUT, IN]: x's trailing shape does not change the primitives.
    return cache.get(make_shape_key(y, w), [&] { return make_entry(y[0], w[1], w[0]); });
  }
};

fully_connected_op::fully_connected_op() : impl_(std::make_unique<impl>()) {}
fully_connected_op::~fully_connected_op() = default;
fully_connected_op::fully_connected_op(fully_connected_op&&) noexcept = default;
fully_connected_op& fully_connected_op::operator=(fully_connected_op&&) noexcept = default;

shape_t fully_connected_op::output_shape(const shape_t& x, const shape_t& w) const {
  if (x.size() < 2 || w.size() != 2)
    throw std::invalid_argument("fully_connected: input " + shape_string(x) + " and weights "
                                + shape_string(w)
                                + " do not fit: need x of rank >= 2 and w [OUT, IN]");
  std::int64_t in = shape_numel(x) / std::max<std::int64_t>(1, x[0]);
  if (in != w[1] || x[0] < 1 || w[0] < 1)
    throw std::invalid_argument("fully_connected: input " + shape_string(x) + " and weights "
                                + shape_string(w) + " do not fit: " + std::to_string(in)
                                + " features per row, weights expect " + std::to_string(w[1]));
  return {x[0], w[0]};
}

void fully_connected_op::forward(const tensor& x, const tensor& w, const tensor* b, tensor& y) {
  shape_t out = output_shape(x.shape(), w.shape());
  require_shape("y", y.shape(), out);
  if (b != nullptr)
    require_shape("bias", b->shape(), {w.dim(0)});
  openmp_thread_scope omp_threads;
  auto& e = impl_->entry(out, w.shape());
  if (!e.forward || e.forward->has_bias != (b != nullptr)) {
    e.forward = make_forward(e, b != nullptr);
    e.backward.reset();
  }
  auto& f = *e.forward;
  f.scratch.bind_arena(scratch_arena(e.forward_arena.total()));
  bind(e.src, x.data());
  bind(e.weights, w.data());
  bind(e.dst, y.data());
  if (b != nullptr)
    bind(e.bias, b->data());
  auto& s = stream();
  f.prim.execute(s, f.args);
  s.wait();
}

void fully_connected_op::backward(const tensor& x, const tensor& w, const tensor& dy, tensor* dx,
                                  tensor& dw, tensor* db) {
  shape_t out = output_shape(x.shape(), w.shape());
  cpu::require_weighted_backward_shapes("fully_connected", x, w, out, dy, dx, dw, db);
  openmp_thread_scope omp_threads;
  auto& e = impl_->entry(out, w.shape());
  if (!e.forward)
    e.forward = make_forward(e, db != nullptr);
  bool has_dx = dx != nullptr, has_db = db != nullptr;
  if (!e.backward || e.backward->has_dx != has_dx || e.backward->has_db != has_db)
    e.backward = make_backward(e, has_dx, has_db);
  auto& bwd = *e.backward;
  std::uint8_t* base = scratch_arena(e.backward_arena.total());
  bind(e.src, x.data());
  bind(e.weights, w.data());
  bind(e.diff_dst, dy.data());
  bind(e.diff_weights, dw.data());
  auto& s = stream();
  if (has_dx) {
    bind(e.diff_src, dx->data());
    bwd.data_scratch.bind_arena(base);
    bwd.data_prim.execute(s, bwd.data_args);
  }
  if (has_db)
    bind(e.diff_bias, db->data());
  bwd.weights_scratch.bind_arena(base);
  bwd.weights_prim.execute(s, bwd.weights_args);
  s.wait();
}

} // namespace troupe
