// The parameter-free layers. Each backward skips the inputs whose gradient the model does not
// need (null entries of `dinputs`), except concat, whose kernel splits dy in one pass and so
// gets throw-away destinations for those slices.
#include <troupe/graph/layers/elementwise_layers.hpp>

#include "graph/layers/shape_checks.hpp"
#include <troupe/kernels/elementwise.hpp>

namespace troupe {

shape_t relu_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  if (inputs[0].empty())
    throw layer_error(name, kind(), "expects a batched input, got a scalar shape");
  return inputs[0];
}

void relu_layer::forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) {
  relu_forward(*inputs[0], output);
}

void relu_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                          const tensor& doutput, const std::vector<tensor*>& dinputs) {
  if (dinputs[0] != nullptr)
    relu_backward(output, doutput, *dinputs[0]);
}

shape_t add_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 2);
  if (inputs[0] != inputs[1])
    throw layer_error(name, kind(),
                      "inputs differ in shape: " + shape_string(inputs[0]) + " and "
                        + shape_string(inputs[1]));
  return inputs[0];
}

void add_layer::forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) {
  add_forward(*inputs[0], *inputs[1], output);
}

void add_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                         const tensor& doutput, const std::vector<tensor*>& dinputs) {
  // d(a + b)/da = d(a + b)/db = identity: both inputs receive a copy of dy (copies, not views,
  // because the model may later add other consumers' gradients into either one).
  for (tensor* dx : dinputs)
    if (dx != nullptr)
      dx->copy_from(doutput);
}

shape_t concat_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  if (inputs.empty())
    throw layer_error(name, kind(), "expects at least one input");
  for (const auto& x : inputs)
    require_rank(name, kind(), x, {2, 4});
  return checked_shape(name, kind(), [&] { return concat_channels_shape(inputs); });
}

void concat_layer::forward(const std::vector<const tensor*>& inputs, tensor& output,
                           bool training) {
  concat_channels_forward(inputs, output);
}

void concat_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                            const tensor& doutput, const std::vector<tensor*>& dinputs) {
  bool any_needed = false;
  for (tensor* dx : dinputs)
    any_needed = any_needed || dx != nullptr;
  if (!any_needed)
    return;
  unused_dinputs_.resize(inputs.size());
  std::vector<tensor*> destinations(dinputs);
  for (std::size_t k = 0; k < destinations.size(); ++k) {
    if (destinations[k] != nullptr)
      continue;
    if (unused_dinputs_[k].shape() != inputs[k]->shape())
      unused_dinputs_[k] = tensor::uninitialized(inputs[k]->shape());
    destinations[k] = &unused_dinputs_[k];
  }
  concat_channels_backward(doutput, destinations);
}

shape_t flatten_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  const shape_t& x = inputs[0];
  if (x.empty())
    throw layer_error(name, kind(), "expects a batched input, got a scalar shape");
  return {x[0], shape_numel(shape_t(x.begin() + 1, x.end()))};
}

void flatten_layer::forward(const std::vector<const tensor*>& inputs, tensor& output,
                            bool training) {
  output = flatten(*inputs[0]);
}

void flatten_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                             const tensor& doutput, const std::vector<tensor*>& dinputs) {
  if (dinputs[0] != nullptr)
    dinputs[0]->copy_from(doutput);
}

shortcut_pad_layer::shortcut_pad_layer(std::int64_t out_channels, std::int64_t stride)
    : out_channels_(out_channels), stride_(stride) {}

shape_t shortcut_pad_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  require_rank(name, kind(), inputs[0], {4});
  if (stride_ < 1 || out_channels_ < inputs[0][1])
    throw layer_error(name, kind(),
                      "needs stride >= 1 and out_channels >= input channels "
                        + std::to_string(inputs[0][1]) + ", got stride " + std::to_string(stride_)
                        + ", out_channels " + std::to_string(out_channels_));
  return checked_shape(name, kind(),
                       [&] { return shortcut_pad_shape(inputs[0], out_channels_, stride_); });
}

void shortcut_pad_layer::forward(const std::vector<const tensor*>& inputs, tensor& output,
                                 bool training) {
  shortcut_pad_forward(*inputs[0], stride_, output);
}

void shortcut_pad_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                                  const tensor& doutput, const std::vector<tensor*>& dinputs) {
  if (dinputs[0] != nullptr)
    shortcut_pad_backward(doutput, stride_, *dinputs[0]);
}

} // namespace troupe
