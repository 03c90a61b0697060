// fully_connected_layer: parameter 0 is the weight [OUT, IN], parameter 1 the bias [OUT] when
// present. IN is fixed at build time from the sample shape.
#include <troupe/graph/layers/fully_connected_layer.hpp>

#include "graph/layers/shape_checks.hpp"

namespace troupe {

fully_connected_layer::fully_connected_layer(std::int64_t outputs, init_kind weight_init, bool bias)
    : outputs_(outputs), weight_init_(weight_init), bias_(bias) {}

shape_t fully_connected_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  const shape_t& x = inputs[0];
  if (x.size() < 2)
    throw layer_error(name, kind(), "expects an input of rank >= 2, got " + shape_string(x));
  if (outputs_ < 1)
    throw layer_error(name, kind(), "needs at least one output, got " + std::to_string(outputs_));
  shape_t sample(x.begin() + 1, x.end());
  shape_t w{outputs_, shape_numel(sample)};
  shape_t y = checked_shape(name, kind(), [&] { return op_.output_shape(x, w); });

  parameters_.clear();
  parameters_.push_back({name + ".weight", tensor::uninitialized(w), {}, weight_init_, true});
  if (bias_)
    parameters_.push_back(
      {name + ".bias", tensor::uninitialized({outputs_}), {}, init_kind::zeros, false});
  return y;
}

void fully_connected_layer::forward(const std::vector<const tensor*>& inputs, tensor& output,
                                    bool training) {
  const tensor* bias = bias_ ? &parameters_[1].value : nullptr;
  op_.forward(*inputs[0], parameters_[0].value, bias, output);
}

void fully_connected_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                                     const tensor& doutput, const std::vector<tensor*>& dinputs) {
  tensor* dbias = bias_ ? &parameters_[1].grad : nullptr;
  op_.backward(*inputs[0], parameters_[0].value, doutput, dinputs[0], parameters_[0].grad, dbias);
}

} // namespace troupe
