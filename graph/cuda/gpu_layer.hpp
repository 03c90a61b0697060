// The GPU twin of a layer: the same forward / backward contract as troupe::layer (layer.hpp),
// on tensors in one GPU's memory, run through the kernels/cuda ops on a cuda_context's stream.
// A twin reads its layer's parameters and buffers afresh every call (the layer still owns
// them, now holding device tensors) and keeps only the GPU ops' own state (cuDNN descriptors,
// the dropout mask). Built by make_gpu_layer from the layer's concrete type.
//
// Private to graph/, CUDA builds only. Thread-safety: as the layer's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <troupe/graph/layer.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe {

class gpu_layer {
public:
  virtual ~gpu_layer() = default;
  virtual void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
                       tensor& output, bool training) = 0;
  virtual void backward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
                        const tensor& output, const tensor& doutput,
                        const std::vector<tensor*>& dinputs) = 0;
};

/// The twin of `l` (which must outlive it); std::invalid_argument naming `where` and the
/// layer's kind for a layer type with no GPU implementation.
std::unique_ptr<gpu_layer> make_gpu_layer(layer& l, const std::string& where);

/// A fresh tensor of `shape` on GPU `device` whose zero fill has landed, so a context's
/// non-blocking stream may read it at once.
tensor fresh_gpu_tensor(const shape_t& shape, int device);

/// dst = src (same numel, both on the context's device), queued on the context's stream.
void copy_on_stream(cuda::cuda_context& context, const tensor& src, tensor& dst);

} // namespace troupe
