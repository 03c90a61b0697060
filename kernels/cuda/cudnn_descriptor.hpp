// cuDNN descriptors as owned values: created with their owner, destroyed with it (a failing
// destroy is ignored: there is nothing a destructor could do about it). Private to kernels/.
#pragma once

#include "kernels/cuda/cuda_check.hpp"

namespace troupe::cuda {

template <class Handle, cudnnStatus_t (*create)(Handle*), cudnnStatus_t (*destroy)(Handle)>
class cudnn_descriptor {
public:
  cudnn_descriptor() { TROUPE_CUDA_CHECK(create(&handle_)); }
  ~cudnn_descriptor() {
    if (handle_)
      destroy(handle_);
  }
  cudnn_descriptor(const cudnn_descriptor&) = delete;
  cudnn_descriptor& operator=(const cudnn_descriptor&) = delete;
  operator Handle() const { return handle_; }

private:
  Handle handle_ = nullptr;
};

using tensor_descriptor = cudnn_descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                           cudnnDestroyTensorDescriptor>;
using filter_descriptor = cudnn_descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                           cudnnDestroyFilterDescriptor>;
using convolution_descriptor =
  cudnn_descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                   cudnnDestroyConvolutionDescriptor>;
using pooling_descriptor = cudnn_descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                            cudnnDestroyPoolingDescriptor>;

} // namespace troupe::cuda
