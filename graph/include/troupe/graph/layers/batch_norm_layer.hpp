// Batch normalization over channels (NCHW or NC) on batch_norm_op.
//
// Parameters gamma (init 1) and beta (init 0) are trained without weight decay, as is usual for
// scale/shift; the running mean (0) and variance (1) are buffers, updated by every training
// forward and used by inference. Training forward uses batch statistics.
//
// Thread-safety: as `layer`.
#pragma once

#include <troupe/graph/layer.hpp>
#include <troupe/kernels/batch_norm.hpp>

namespace troupe {

class batch_norm_layer final : public layer {
public:
  explicit batch_norm_layer(batch_norm_params params = {});

  std::string kind() const override { return "batch_norm"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;

  const batch_norm_params& params() const { return op_.params(); }

private:
  batch_norm_op op_;
  /// dx when the model does not need it (batch norm right on the model input): the kernel
  /// computes dx together with dgamma / dbeta, so it needs somewhere to put it.
  tensor unused_dx_;
};

} // namespace troupe
