// The parameter-free layers over kernels/elementwise.hpp: ReLU, the two-input sum of residual
// blocks, channel concatenation of Inception branches, flatten, and the option-A shortcut of
// CIFAR ResNets (stride-subsample, zero-pad channels).
//
// They live together because each is a few lines around one kernel call. `flatten_layer` is
// the only layer whose output is a view of its input (no copy); its backward copies, so the
// model never has two gradient buffers sharing storage.
//
// Thread-safety: as `layer`.
#pragma once

#include <cstdint>

#include <troupe/graph/layer.hpp>

namespace troupe {

class relu_layer final : public layer {
public:
  std::string kind() const override { return "relu"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;
};

/// out = a + b for two inputs of one shape (residual connections).
class add_layer final : public layer {
public:
  std::string kind() const override { return "add"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;
};

/// Concatenation of N >= 1 inputs along the channel axis (axis 1); N, H, W must agree.
class concat_layer final : public layer {
public:
  std::string kind() const override { return "concat"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;

private:
  /// Destinations for the slices of inputs whose gradient the model does not need.
  std::vector<tensor> unused_dinputs_;
};

/// [N, ...] -> [N, prod(...)] as a view of the input.
class flatten_layer final : public layer {
public:
  std::string kind() const override { return "flatten"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;
};

/// ResNet option-A shortcut: x [N, C, H, W] -> [N, out_channels, H/stride, W/stride], the
/// input subsampled and centred between zero channels.
class shortcut_pad_layer final : public layer {
public:
  shortcut_pad_layer(std::int64_t out_channels, std::int64_t stride);

  std::string kind() const override { return "shortcut_pad"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;

  std::int64_t stride() const { return stride_; }

private:
  std::int64_t out_channels_;
  std::int64_t stride_;
};

} // namespace troupe
