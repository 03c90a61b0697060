// conv2d_layer: checks the options against the input once in `build`, then every step is a
// single call into conv2d_op. Parameter 0 is the weight, parameter 1 the bias when present.
#include <troupe/graph/layers/conv2d_layer.hpp>

#include "graph/layers/shape_checks.hpp"

namespace troupe {

namespace {

conv2d_params to_kernel_params(const conv2d_layer_options& o) {
  conv2d_params p;
  p.stride_h = p.stride_w = o.stride;
  p.pad_h = p.pad_w = o.pad;
  p.groups = o.groups;
  return p;
}

} // namespace

conv2d_layer::conv2d_layer(conv2d_layer_options options)
    : options_(options), op_(to_kernel_params(options)) {}

shape_t conv2d_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  const shape_t& x = inputs[0];
  require_rank(name, kind(), x, {4});
  const auto& o = options_;
  if (o.out_channels < 1 || o.kernel < 1 || o.stride < 1 || o.pad < 0 || o.groups < 1)
    throw layer_error(name, kind(), "needs out_channels, kernel, stride, groups >= 1 and pad >= 0");
  if (x[1] % o.groups != 0 || o.out_channels % o.groups != 0)
    throw layer_error(name, kind(),
                      "groups " + std::to_string(o.groups) + " must divide input channels "
                        + std::to_string(x[1]) + " and output channels "
                        + std::to_string(o.out_channels));
  shape_t w{o.out_channels, x[1] / o.groups, o.kernel, o.kernel};
  shape_t y = checked_shape(name, kind(), [&] { return op_.output_shape(x, w); });

  parameters_.clear();
  parameters_.push_back({name + ".weight", tensor::uninitialized(w), {}, o.weight_init, true});
  if (o.bias)
    parameters_.push_back(
      {name + ".bias", tensor::uninitialized({o.out_channels}), {}, init_kind::zeros, false});
  return y;
}

void conv2d_layer::forward(const std::vector<const tensor*>& inputs, tensor& output,
                           bool training) {
  const tensor* bias = options_.bias ? &parameters_[1].value : nullptr;
  op_.forward(*inputs[0], parameters_[0].value, bias, output);
}

void conv2d_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                            const tensor& doutput, const std::vector<tensor*>& dinputs) {
  tensor* dbias = options_.bias ? &parameters_[1].grad : nullptr;
  op_.backward(*inputs[0], parameters_[0].value, doutput, dinputs[0], parameters_[0].grad, dbias);
}

} // namespace troupe
