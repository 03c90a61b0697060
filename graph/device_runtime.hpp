// What a model replica needs from a device other than the CPU: where its tensors live, the
// per-layer ops that run there, the loss, gradient accumulation and the wait at the end of a
// step. `model` owns one after `to_device` and routes every layer call through it; a CPU model
// has none and calls the layers directly, so the CPU path is the code it always was.
//
// The interface mentions no CUDA type, so model.cpp compiles in every build: the CUDA
// implementation is graph/cuda/device_runtime_cuda.cpp (built with TROUPE_HAVE_CUDA), and
// graph/device_runtime_none.cpp refuses to make one in a build without CUDA.
//
// Every call is queued on the runtime's stream except where a comment says it waits; tensors
// passed in are on the runtime's device. Private to graph/.
// Thread-safety: one runtime belongs to one model replica, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <troupe/graph/layer.hpp>
#include <troupe/kernels/compute_device.hpp>
#include <troupe/kernels/softmax_cross_entropy.hpp>

namespace troupe {

class device_runtime {
public:
  virtual ~device_runtime() = default;

  virtual compute_device device() const = 0;
  /// A fresh tensor of `shape` on the device, safe to write from the stream at once.
  virtual tensor allocate(const shape_t& shape) = 0;
  /// Makes `destination` hold x on the device: x's own handle when it is already there,
  /// otherwise a copy (into destination's storage when it fits and no one else holds it).
  /// Waits for the copy (the caller may change x once this returns).
  virtual void upload(const tensor& x, tensor& destination) = 0;

  /// Node `node`'s layer, as layer::forward / layer::backward, on the device.
  virtual void forward(std::size_t node, const std::vector<const tensor*>& inputs, tensor& output,
                       bool training) = 0;
  virtual void backward(std::size_t node, const std::vector<const tensor*>& inputs,
                        const tensor& output, const tensor& doutput,
                        const std::vector<tensor*>& dinputs) = 0;
  /// y += x (same numel).
  virtual void accumulate(const tensor& x, tensor& y) = 0;
  /// Softmax cross-entropy of logits [N, K] against labels (uploaded as int32): writes
  /// probabilities [N, K], and dlogits [N, K] when not null; counts top_k_correct when
  /// top_k > 0. Waits for the stream (the loss and the counts come back to the host).
  virtual loss_result loss(const tensor& logits, const std::vector<std::int32_t>& labels,
                           tensor& probabilities, tensor* dlogits, int top_k) = 0;
  /// Waits until everything queued has run; throws if any of it failed.
  virtual void synchronize() = 0;
};

/// A runtime on `device` for the model `model_name` whose nodes are `layers` (name, layer) in
/// node order; the runtime refers to the layers, which must outlive it. Throws
/// std::runtime_error in a build without CUDA, std::invalid_argument naming a layer without a
/// GPU implementation.
std::unique_ptr<device_runtime>
make_device_runtime(const compute_device& device, const std::string& model_name,
                    const std::vector<std::pair<std::string, layer*>>& layers);

} // namespace troupe
