// A fully connected layer: y = x w^T + b with w [OUT, IN], IN = prod(x[1:]), on
// fully_connected_op. Inputs of any rank >= 2 are flattened by the op itself.
//
// The weight init is chosen per network (Xavier-uniform for MLP / LeNet / VGG heads, He-normal
// for ResNet / Inception, as in their papers); the bias starts at zero without weight decay.
//
// Thread-safety: as `layer`.
#pragma once

#include <cstdint>

#include <troupe/graph/layer.hpp>
#include <troupe/kernels/fully_connected.hpp>

namespace troupe {

class fully_connected_layer final : public layer {
public:
  explicit fully_connected_layer(std::int64_t outputs,
                                 init_kind weight_init = init_kind::xavier_uniform,
                                 bool bias = true);

  std::string kind() const override { return "fully_connected"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;

  bool has_bias() const { return bias_; }

private:
  std::int64_t outputs_;
  init_kind weight_init_;
  bool bias_;
  fully_connected_op op_;
};

} // namespace troupe
