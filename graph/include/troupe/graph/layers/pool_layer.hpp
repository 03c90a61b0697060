// Max, average and global-average pooling on pool2d_op. No parameters.
//
// `pool_layer::global_average()` is the head of ResNet / Inception: it yields [N, C, 1, 1],
// which a fully connected layer takes without an explicit flatten.
//
// Thread-safety: as `layer`.
#pragma once

#include <troupe/graph/layer.hpp>
#include <troupe/kernels/pooling.hpp>

namespace troupe {

class pool_layer final : public layer {
public:
  explicit pool_layer(pool2d_params params);
  /// Square window helper: max or average pooling with kernel k, stride s, padding p.
  static pool2d_params square(pool_kind kind, std::int64_t k, std::int64_t s, std::int64_t p = 0,
                              bool ceil_mode = false);
  /// Average over the whole H x W plane.
  static pool2d_params global_average();

  /// "max_pool", "avg_pool" or "global_avg_pool".
  std::string kind() const override;
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;

  const pool2d_params& params() const { return op_.params(); }

private:
  pool2d_op op_;
};

} // namespace troupe
