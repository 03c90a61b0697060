// batch_norm_layer: parameter 0 is gamma, 1 beta; buffer 0 the running mean, 1 the running
// variance. Buffers are set at build time (not by the model's seeded init) because their start
// values are fixed by definition, not drawn.
#include <troupe/graph/layers/batch_norm_layer.hpp>

#include "graph/layers/shape_checks.hpp"

namespace troupe {

batch_norm_layer::batch_norm_layer(batch_norm_params params) : op_(params) {}

shape_t batch_norm_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  const shape_t& x = inputs[0];
  require_rank(name, kind(), x, {2, 4});
  if (x[1] < 1)
    throw layer_error(name, kind(), "needs at least one channel, got " + shape_string(x));
  shape_t channels{x[1]};

  parameters_.clear();
  parameters_.push_back(
    {name + ".gamma", tensor::uninitialized(channels), {}, init_kind::ones, false});
  parameters_.push_back(
    {name + ".beta", tensor::uninitialized(channels), {}, init_kind::zeros, false});
  buffers_.clear();
  buffers_.push_back({name + ".running_mean", tensor(channels)});
  tensor running_var(channels);
  running_var.fill(1.0f);
  buffers_.push_back({name + ".running_var", running_var});
  return x;
}

void batch_norm_layer::forward(const std::vector<const tensor*>& inputs, tensor& output,
                               bool training) {
  const tensor& gamma = parameters_[0].value;
  const tensor& beta = parameters_[1].value;
  if (training)
    op_.forward_training(*inputs[0], gamma, beta, output, buffers_[0].value, buffers_[1].value);
  else
    op_.forward_inference(*inputs[0], gamma, beta, buffers_[0].value, buffers_[1].value, output);
}

void batch_norm_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                                const tensor& doutput, const std::vector<tensor*>& dinputs) {
  tensor* dx = dinputs[0];
  if (dx == nullptr) {
    if (unused_dx_.shape() != inputs[0]->shape())
      unused_dx_ = tensor::uninitialized(inputs[0]->shape());
    dx = &unused_dx_;
  }
  op_.backward(*inputs[0], parameters_[0].value, doutput, *dx, parameters_[0].grad,
               parameters_[1].grad);
}

} // namespace troupe
