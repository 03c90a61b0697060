// Inverted dropout on dropout_op: zeroes a fraction p of the activations in training, identity
// in inference.
//
// The mask stream is seeded by `set_seed`, which `model::finalize` calls with the model seed
// mixed with the layer name: two replicas built from one seed drop the same units, and adding a
// layer elsewhere does not change this layer's masks.
//
// Thread-safety: as `layer`.
#pragma once

#include <troupe/graph/layer.hpp>
#include <troupe/kernels/dropout.hpp>

namespace troupe {

class dropout_layer final : public layer {
public:
  /// Throws std::invalid_argument unless 0 <= p < 1.
  explicit dropout_layer(float p);

  std::string kind() const override { return "dropout"; }
  shape_t build(const std::string& name, const std::vector<shape_t>& inputs) override;
  void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) override;
  void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override;
  void set_seed(std::uint64_t seed) override;
  bool has_random_stream() const override { return true; }
  std::uint64_t stream_position() const override { return op_.calls(); }
  void seek_stream(std::uint64_t position) override { op_.seek(position); }

  /// The CPU op: its probability, seed and call count (what a GPU twin continues from).
  const dropout_op& op() const { return op_; }

private:
  dropout_op op_;
};

} // namespace troupe
