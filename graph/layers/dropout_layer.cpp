// dropout_layer: the op holds the mask of the last training forward; reseeding replaces the op,
// which also restarts its call counter so a finalized model's masks depend on the seed only.
#include <troupe/graph/layers/dropout_layer.hpp>

#include "graph/layers/shape_checks.hpp"

namespace troupe {

dropout_layer::dropout_layer(float p) : op_(p, 0) {}

shape_t dropout_layer::build(const std::string& name, const std::vector<shape_t>& inputs) {
  require_input_count(name, kind(), inputs, 1);
  if (inputs[0].empty())
    throw layer_error(name, kind(), "expects a batched input, got a scalar shape");
  return inputs[0];
}

void dropout_layer::forward(const std::vector<const tensor*>& inputs, tensor& output,
                            bool training) {
  op_.forward(*inputs[0], output, training);
}

void dropout_layer::backward(const std::vector<const tensor*>& inputs, const tensor& output,
                             const tensor& doutput, const std::vector<tensor*>& dinputs) {
  if (dinputs[0] != nullptr)
    op_.backward(doutput, *dinputs[0]);
}

void dropout_layer::set_seed(std::uint64_t seed) {
  op_ = dropout_op(op_.probability(), seed);
}

} // namespace troupe
