// The unit of the model graph: a layer maps input tensors to one output and back-propagates.
//
// A layer owns its parameters (trainable, named, later parameter-server keys) and buffers
// (state that is not trained, e.g. batch-norm running statistics) and the kernel op objects
// that cache primitives. `model` calls `build` once with the input shapes, then
// `forward`/`backward` per step. Gradients are written into each parameter's `grad`.
//
// Shapes: `build` sees the inputs with a batch of 1; every layer keeps axis 0 as the batch and
// its other output extents independent of it, so the model sizes outputs for any batch N.
// `forward` writes into the `output` it is given (sized by the model) or rebinds it to a view
// of an input (flatten); `backward` writes into the `dinputs` it is given and never rebinds them.
// Layers read parameter values afresh every call: an actor may swap a value's handle between
// steps.
//
// Thread-safety: a layer belongs to one model replica, used by one actor at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/kernels/initializers.hpp>
#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct parameter {
  std::string name; ///< "<layer>.<role>", e.g. "conv1.weight"; unique in a model
  tensor value;
  tensor grad; ///< same shape as value, written by backward (empty before it)
  init_kind init = init_kind::zeros;
  bool weight_decay = true; ///< false for biases and batch-norm scale/shift
};

struct buffer {
  std::string name; ///< e.g. "bn1.running_mean"
  tensor value;
};

class layer {
public:
  virtual ~layer() = default;

  /// Short type name for summaries: "conv2d", "batch_norm", ...
  virtual std::string kind() const = 0;
  /// Checks the input shapes, creates parameters and buffers (named `name + ".role"`), and
  /// returns the output shape. Throws std::invalid_argument naming the layer on a mismatch.
  virtual shape_t build(const std::string& name, const std::vector<shape_t>& inputs) = 0;
  /// out = f(inputs). `training` selects batch statistics, dropout, saved state.
  virtual void forward(const std::vector<const tensor*>& inputs, tensor& output, bool training) = 0;
  /// From d(output): gradients of each input (null entries are not needed) and of the
  /// parameters. `inputs` and `output` are those of the last training forward.
  virtual void backward(const std::vector<const tensor*>& inputs, const tensor& output,
                        const tensor& doutput, const std::vector<tensor*>& dinputs) = 0;
  /// Gives a layer with randomness (dropout) its stream; `model::finalize` passes a seed mixed
  /// from the model seed and the layer name, so masks do not depend on the other layers.
  virtual void set_seed(std::uint64_t seed) {}
  /// How far the layer's random stream has advanced (dropout: its training forwards so far);
  /// 0 for a layer without randomness. Checkpoints record it, so a resumed run draws the masks
  /// the uninterrupted run would have drawn.
  virtual bool has_random_stream() const { return false; }
  virtual std::uint64_t stream_position() const { return 0; }
  /// Continues the stream from `position`. A layer without randomness accepts only 0 and
  /// throws std::invalid_argument for anything else.
  virtual void seek_stream(std::uint64_t position) {
    if (position != 0)
      throw std::invalid_argument(kind() + " layer has no random stream to seek");
  }

  std::vector<parameter>& parameters() { return parameters_; }
  std::vector<buffer>& buffers() { return buffers_; }

protected:
  std::vector<parameter> parameters_;
  std::vector<buffer> buffers_;
};

} // namespace troupe
