// pool_layer: a thin shell over pool2d_op; the op keeps the arg-max of max pooling between
// forward and backward, so the layer itself holds no state.
#include <troupe/graph/layers/pool_layer.hpp>

#include "graph/layers/shape_checks.hpp"

namespace troupe {

pool_layer::pool_layer(pool2d_params params) : op_(params) {}

pool2d_params pool_layer::square(pool_kind kind, std::int64_t k, std::int64_t s, std::int64_t p,
                                 bool ceil_mode) {
  pool2d_params params;
  params.kind = kind;
  params.kernel_h = params.kernel_w = k;
  params.stride_h = params.stride_w = s;
  params.pad_h = params.pad_w = p;
  params.ceil_mode = ceil_mode;
  return params;
}

pool2d_params pool_layer::global_average() {
  pool2d_params params;
  params.kind = pool_kind::global_average;
  return params;
}

std::string pool_layer::kind() const {
  switch (op_.params().kind) {
  case pool_kind::max:
    return "max_pool";
  case pool_kind::average:
    return "avg_pool";
  case pool_kind::global_average:
    return "global_avg_pool";
  }
  return "pool";
}

shape_t pool_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  require_rank(name, kind(), inputs[0], {4});
  return checked_shape(name, kind(), [&] { return op_.output_shape(inputs[0]); });
}

void pool_layer::forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) {
  op_.forward(*inputs[0], output, training);
}

void pool_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                          const tensor& doutput, const std::vector<tensor*>& dinputs) {
  if (dinputs[0] != nullptr)
    op_.backward(doutput, *dinputs[0]);
}

} // namespace troupe
