// A 2-D convolution layer: weights [K, C/groups, R, R], an optional bias [K], on conv2d_op.
//
// Square kernels only: every network of the zoo uses them, and one `kernel` field keeps the
// options readable at the call sites. Weights default to He-normal init (ReLU networks); the
// bias starts at zero and is exempt from weight decay.
//
// Thread-safety: as `layer`.
#pragma once

#include <cstdint>

#include <troupe/graph/layer.hpp>
#include <troupe/kernels/conv2d.hpp>

namespace troupe {

struct conv2d_layer_options {
  std::int64_t out_channels = 0; ///< K
  std::int64_t kernel = 3;       ///< R = S
  std::int64_t stride = 1;
  std::int64_t pad = 0;
  std::int64_t groups = 1;
  bool bias = false;
  init_kind weight_init = init_kind::he_normal;
};

class conv2d_layer final : public layer {
public:
  explicit conv2d_layer(conv2d_layer_options options);

  std::string kind() const override { return "conv2d"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;

  const conv2d_layer_options& options() const { return options_; }

private:
  conv2d_layer_options options_;
  conv2d_op op_;
};

} // namespace troupe
