// device_runtime.hpp on one CUDA GPU: a cuda_context (stream, cuDNN / cuBLAS handles,
// workspace) per model replica, one gpu_layer twin per node, and a device buffer for the
// int32 labels.
//
// Synchronous points, all on purpose for now: the input upload and the labels upload wait for
// their copies (the host memory is the caller's); the loss waits (the kernel op brings the
// loss back); the model waits at the end of a step. Everything else is queued on the stream.
#include "graph/device_runtime.hpp"

#include <stdexcept>

#include "graph/cuda/gpu_layer.hpp"
#include "kernels/cuda/elementwise_cuda.hpp"
#include "kernels/cuda/softmax_cross_entropy_cuda.hpp"

namespace troupe {

namespace {

class cuda_runtime final : public device_runtime {
public:
  cuda_runtime(const compute_device& device, const std::string& model_name,
               const std::vector<std::pair<std::string, layer*>>& layers)
      : device_(device), model_name_(model_name), context_(device.index) {
    for (const auto& [name, l] : layers)
      layers_.push_back(make_gpu_layer(*l, "model '" + model_name + "': layer '" + name + "'"));
  }

  compute_device device() const override { return device_; }

  tensor allocate(const shape_t& shape) override { return fresh_gpu_tensor(shape, device_.index); }

  void upload(const tensor& x, tensor& destination) override {
    // A step starts here: make the replica's device current on whichever thread runs it.
    TROUPE_CUDA_CHECK(cudaSetDevice(device_.index));
    if (x.device() == device_kind::cuda) {
      if (x.device_index() != device_.index)
        throw std::invalid_argument("model '" + model_name_ + "' on " + to_string(device_)
                                    + ": input is on gpu:" + std::to_string(x.device_index()));
      destination = x;
      return;
    }
    if (destination.shape() != x.shape() || !destination.unique()
        || destination.device() != device_kind::cuda)
      destination = allocate(x.shape());
    if (x.numel() == 0)
      return;
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(destination.device_data(), x.data(), x.bytes(),
                                      cudaMemcpyHostToDevice, context_.stream()));
    context_.synchronize();
  }

  void forward(std::size_t node, const std::vector<const tensor*>& inputs, tensor& output,
               bool training) override {
    layers_.at(node)->forward(context_, inputs, output, training);
  }

  void backward(std::size_t node, const std::vector<const tensor*>& inputs, const tensor& output,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override {
    layers_.at(node)->backward(context_, inputs, output, doutput, dinputs);
  }

  void accumulate(const tensor& x, tensor& y) override {
    if (x.numel() != y.numel())
      throw std::invalid_argument("accumulate: " + shape_string(x.shape()) + " into "
                                  + shape_string(y.shape()));
    cuda::accumulate(context_, x.device_data(), y.device_data(), x.numel());
  }

  loss_result loss(const tensor& logits, const std::vector<std::int32_t>& labels,
                   tensor& probabilities, tensor* dlogits, int top_k) override {
    const std::int64_t rows = logits.dim(0), classes = logits.dim(1);
    const std::size_t bytes = labels.size() * sizeof(std::int32_t);
    if (labels_.bytes() < bytes)
      labels_ = cuda::device_buffer(bytes);
    if (bytes > 0) {
      TROUPE_CUDA_CHECK(cudaMemcpyAsync(labels_.get(), labels.data(), bytes, cudaMemcpyHostToDevice,
                                        context_.stream()));
      context_.synchronize(); // the labels vector is the caller's
    }
    const auto* device_labels = labels_.as<std::int32_t>();
    loss_result result = cuda::softmax_cross_entropy_forward(
      context_, logits.device_data(), device_labels, rows, classes, probabilities.device_data());
    if (top_k > 0)
      result.top_k_correct =
        cuda::count_top_k(context_, logits.device_data(), device_labels, rows, classes, top_k);
    if (dlogits != nullptr)
      cuda::softmax_cross_entropy_backward(context_, probabilities.device_data(), device_labels,
                                           rows, classes, dlogits->device_data());
    return result;
  }

  void synchronize() override { context_.synchronize(); }

private:
  compute_device device_;
  std::string model_name_;
  cuda::cuda_context context_; // declared before the twins: their GPU ops die first
  std::vector<std::unique_ptr<gpu_layer>> layers_;
  cuda::device_buffer labels_;
};

} // namespace

std::unique_ptr<device_runtime>
make_device_runtime(const compute_device& device, const std::string& model_name,
                    const std::vector<std::pair<std::string, layer*>>& layers) {
  if (device.kind != device_kind::cuda)
    throw std::invalid_argument("model '" + model_name + "': no device runtime for "
                                + to_string(device));
  return std::make_unique<cuda_runtime>(device, model_name, layers);
}

} // namespace troupe
