// The GPU twins of every layer in graph/layers, one class each, in the order of the layer
// files. Each mirrors its CPU layer's forward / backward, including which gradients it skips
// (null `dinputs`) and where it needs throw-away destinations (batch norm, concat), so the
// model's sweeps do not care which side runs. Raw pointers go to the kernels/cuda ops with the
// shapes beside them; nothing here waits for the stream.
#include "graph/cuda/gpu_layer.hpp"

#include <stdexcept>

#include <troupe/graph/layers/batch_norm_layer.hpp>
#include <troupe/graph/layers/conv2d_layer.hpp>
#include <troupe/graph/layers/dropout_layer.hpp>
#include <troupe/graph/layers/elementwise_layers.hpp>
#include <troupe/graph/layers/fully_connected_layer.hpp>
#include <troupe/graph/layers/pool_layer.hpp>
#include <troupe/kernels/elementwise.hpp>

#include "kernels/cuda/batch_norm_cuda.hpp"
#include "kernels/cuda/conv2d_cuda.hpp"
#include "kernels/cuda/dropout_cuda.hpp"
#include "kernels/cuda/elementwise_cuda.hpp"
#include "kernels/cuda/fully_connected_cuda.hpp"
#include "kernels/cuda/pooling_cuda.hpp"

namespace troupe {

namespace {

float* data_or_null(tensor* t) {
  return t == nullptr ? nullptr : t->device_data();
}

/// `scratch` sized like `shape` on the context's device (kept between steps).
tensor& scratch_like(tensor& scratch, const shape_t& shape, const cuda::cuda_context& context) {
  if (scratch.shape() != shape || scratch.device() != device_kind::cuda)
    scratch = fresh_gpu_tensor(shape, context.device());
  return scratch;
}

class conv2d_gpu final : public gpu_layer {
public:
  explicit conv2d_gpu(conv2d_layer& l) : layer_(l), op_(kernel_params(l.options())) {}

  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool) override {
    auto& p = layer_.parameters();
    const float* bias = layer_.options().bias ? p[1].value.device_data() : nullptr;
    op_.forward(context, inputs[0]->shape(), p[0].value.shape(), inputs[0]->device_data(),
                p[0].value.device_data(), bias, output.device_data());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
                const tensor&, const tensor& doutput,
                const std::vector<tensor*>& dinputs) override {
    auto& p = layer_.parameters();
    float* dbias = layer_.options().bias ? p[1].grad.device_data() : nullptr;
    op_.backward(context, inputs[0]->shape(), p[0].value.shape(), inputs[0]->device_data(),
                 p[0].value.device_data(), doutput.device_data(), data_or_null(dinputs[0]),
                 p[0].grad.device_data(), dbias);
  }

private:
  static conv2d_params kernel_params(const conv2d_layer_options& o) {
    conv2d_params k;
    k.stride_h = k.stride_w = o.stride;
    k.pad_h = k.pad_w = o.pad;
    k.groups = o.groups;
    return k;
  }
  conv2d_layer& layer_;
  cuda::conv2d_cuda op_;
};

class batch_norm_gpu final : public gpu_layer {
public:
  explicit batch_norm_gpu(batch_norm_layer& l) : layer_(l), op_(l.params()) {}

  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool training) override {
    auto& p = layer_.parameters();
    auto& b = layer_.buffers();
    const tensor& x = *inputs[0];
    if (training)
      op_.forward_training(context, x.shape(), x.device_data(), p[0].value.device_data(),
                           p[1].value.device_data(), output.device_data(), b[0].value.device_data(),
                           b[1].value.device_data());
    else
      op_.forward_inference(context, x.shape(), x.device_data(), p[0].value.device_data(),
                            p[1].value.device_data(), b[0].value.device_data(),
                            b[1].value.device_data(), output.device_data());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
                const tensor&, const tensor& doutput,
                const std::vector<tensor*>& dinputs) override {
    auto& p = layer_.parameters();
    const tensor& x = *inputs[0];
    // The kernel computes dx together with dgamma / dbeta, so it needs somewhere to put it.
    tensor* dx = dinputs[0] != nullptr ? dinputs[0] : &scratch_like(unused_dx_, x.shape(), context);
    op_.backward(context, x.shape(), x.device_data(), p[0].value.device_data(),
                 doutput.device_data(), dx->device_data(), p[0].grad.device_data(),
                 p[1].grad.device_data());
  }

private:
  batch_norm_layer& layer_;
  cuda::batch_norm_cuda op_;
  tensor unused_dx_;
};

class pool_gpu final : public gpu_layer {
public:
  explicit pool_gpu(pool_layer& l) : op_(l.params()) {}

  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool) override {
    op_.forward(context, inputs[0]->shape(), inputs[0]->device_data(), output.device_data());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
                const tensor& output, const tensor& doutput,
                const std::vector<tensor*>& dinputs) override {
    if (dinputs[0] != nullptr)
      op_.backward(context, inputs[0]->shape(), inputs[0]->device_data(), output.device_data(),
                   doutput.device_data(), dinputs[0]->device_data());
  }

private:
  cuda::pool2d_cuda op_;
};

class fully_connected_gpu final : public gpu_layer {
public:
  explicit fully_connected_gpu(fully_connected_layer& l) : layer_(l) {}

  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool) override {
    auto& p = layer_.parameters();
    const float* bias = layer_.has_bias() ? p[1].value.device_data() : nullptr;
    op_.forward(context, inputs[0]->shape(), p[0].value.shape(), inputs[0]->device_data(),
                p[0].value.device_data(), bias, output.device_data());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
                const tensor&, const tensor& doutput,
                const std::vector<tensor*>& dinputs) override {
    auto& p = layer_.parameters();
    float* dbias = layer_.has_bias() ? p[1].grad.device_data() : nullptr;
    op_.backward(context, inputs[0]->shape(), p[0].value.shape(), inputs[0]->device_data(),
                 p[0].value.device_data(), doutput.device_data(), data_or_null(dinputs[0]),
                 p[0].grad.device_data(), dbias);
  }

private:
  fully_connected_layer& layer_;
  cuda::fully_connected_cuda op_;
};

/// Continues the CPU op's mask sequence (same seed, same call count), so a replica moved to the
/// GPU drops what it would have dropped on the CPU.
class dropout_gpu final : public gpu_layer {
public:
  explicit dropout_gpu(dropout_layer& l)
      : p_(l.op().probability()), seed_(l.op().seed()), calls_(l.op().calls()) {}

  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool training) override {
    const tensor& x = *inputs[0];
    if (!training) {
      cuda::dropout_inference(context, x.device_data(), output.device_data(), x.numel());
      return;
    }
    const auto n = static_cast<std::size_t>(x.numel());
    if (mask_.bytes() < n)
      mask_ = cuda::device_buffer(n);
    cuda::dropout_forward(context, p_, seed_, calls_++, x.device_data(), output.device_data(),
                          mask_.as<std::uint8_t>(), x.numel());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>&, const tensor&,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override {
    if (dinputs[0] != nullptr)
      cuda::dropout_backward(context, p_, mask_.as<std::uint8_t>(), doutput.device_data(),
                             dinputs[0]->device_data(), doutput.numel());
  }

private:
  float p_;
  std::uint64_t seed_;
  std::uint64_t calls_;
  cuda::device_buffer mask_;
};

class relu_gpu final : public gpu_layer {
public:
  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool) override {
    cuda::relu_forward(context, inputs[0]->device_data(), output.device_data(), output.numel());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>&,
                const tensor& output, const tensor& doutput,
                const std::vector<tensor*>& dinputs) override {
    if (dinputs[0] != nullptr)
      cuda::relu_backward(context, output.device_data(), doutput.device_data(),
                          dinputs[0]->device_data(), output.numel());
  }
};

class add_gpu final : public gpu_layer {
public:
  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool) override {
    cuda::add_forward(context, inputs[0]->device_data(), inputs[1]->device_data(),
                      output.device_data(), output.numel());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>&, const tensor&,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override {
    for (tensor* dx : dinputs) // copies, not views: the model may add other gradients in
      if (dx != nullptr)
        copy_on_stream(context, doutput, *dx);
  }
};

class concat_gpu final : public gpu_layer {
public:
  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool) override {
    std::vector<const float*> pointers;
    std::vector<shape_t> shapes;
    for (const tensor* x : inputs) {
      pointers.push_back(x->device_data());
      shapes.push_back(x->shape());
    }
    cuda::concat_channels_forward(context, pointers, shapes, output.device_data(), output.shape());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
                const tensor&, const tensor& doutput,
                const std::vector<tensor*>& dinputs) override {
    bool any_needed = false;
    for (tensor* dx : dinputs)
      any_needed = any_needed || dx != nullptr;
    if (!any_needed)
      return;
    unused_dinputs_.resize(inputs.size());
    std::vector<float*> pointers;
    std::vector<shape_t> shapes;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      tensor* dx = dinputs[k] != nullptr
                     ? dinputs[k]
                     : &scratch_like(unused_dinputs_[k], inputs[k]->shape(), context);
      pointers.push_back(dx->device_data());
      shapes.push_back(inputs[k]->shape());
    }
    cuda::concat_channels_backward(context, doutput.device_data(), doutput.shape(), pointers,
                                   shapes);
  }

private:
  std::vector<tensor> unused_dinputs_;
};

class flatten_gpu final : public gpu_layer {
public:
  void forward(cuda::cuda_context&, const std::vector<const tensor*>& inputs, tensor& output,
               bool) override {
    output = flatten(*inputs[0]); // a view: no data moves, on either device
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>&, const tensor&,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override {
    if (dinputs[0] != nullptr)
      copy_on_stream(context, doutput, *dinputs[0]);
  }
};

class shortcut_pad_gpu final : public gpu_layer {
public:
  explicit shortcut_pad_gpu(const shortcut_pad_layer& l) : stride_(l.stride()) {}

  void forward(cuda::cuda_context& context, const std::vector<const tensor*>& inputs,
               tensor& output, bool) override {
    cuda::shortcut_pad_forward(context, inputs[0]->device_data(), inputs[0]->shape(), stride_,
                               output.device_data(), output.shape());
  }
  void backward(cuda::cuda_context& context, const std::vector<const tensor*>&, const tensor&,
                const tensor& doutput, const std::vector<tensor*>& dinputs) override {
    if (dinputs[0] != nullptr)
      cuda::shortcut_pad_backward(context, doutput.device_data(), doutput.shape(), stride_,
                                  dinputs[0]->device_data(), dinputs[0]->shape());
  }

private:
  std::int64_t stride_;
};

} // namespace

std::unique_ptr<gpu_layer> make_gpu_layer(layer& l, const std::string& where) {
  if (auto* c = dynamic_cast<conv2d_layer*>(&l))
    return std::make_unique<conv2d_gpu>(*c);
  if (auto* b = dynamic_cast<batch_norm_layer*>(&l))
    return std::make_unique<batch_norm_gpu>(*b);
  if (auto* p = dynamic_cast<pool_layer*>(&l))
    return std::make_unique<pool_gpu>(*p);
  if (auto* f = dynamic_cast<fully_connected_layer*>(&l))
    return std::make_unique<fully_connected_gpu>(*f);
  if (auto* d = dynamic_cast<dropout_layer*>(&l))
    return std::make_unique<dropout_gpu>(*d);
  if (dynamic_cast<relu_layer*>(&l))
    return std::make_unique<relu_gpu>();
  if (dynamic_cast<add_layer*>(&l))
    return std::make_unique<add_gpu>();
  if (dynamic_cast<concat_layer*>(&l))
    return std::make_unique<concat_gpu>();
  if (dynamic_cast<flatten_layer*>(&l))
    return std::make_unique<flatten_gpu>();
  if (auto* s = dynamic_cast<shortcut_pad_layer*>(&l))
    return std::make_unique<shortcut_pad_gpu>(*s);
  throw std::invalid_argument(where + ": a '" + l.kind() + "' layer has no GPU implementation");
}

tensor fresh_gpu_tensor(const shape_t& shape, int device) {
  // on_gpu's zeros have landed when it returns (device_memory waits for its own stream only).
  return tensor::on_gpu(shape, device);
}

void copy_on_stream(cuda::cuda_context& context, const tensor& src, tensor& dst) {
  if (src.numel() != dst.numel())
    throw std::invalid_argument("copy_on_stream: " + shape_string(src.shape()) + " into "
                                + shape_string(dst.shape()));
  TROUPE_CUDA_CHECK(cudaMemcpyAsync(dst.device_data(), src.device_data(), src.bytes(),
                                    cudaMemcpyDeviceToDevice, context.stream()));
}

} // namespace troupe
