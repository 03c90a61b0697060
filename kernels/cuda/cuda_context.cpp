// See cuda_context.hpp.
#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

cuda_context::cuda_context(int device) : device_(device) {
  TROUPE_CUDA_CHECK(cudaSetDevice(device));
  TROUPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  TROUPE_CUDA_CHECK(cudnnCreate(&cudnn_));
  TROUPE_CUDA_CHECK(cudnnSetStream(cudnn_, stream_));
  TROUPE_CUDA_CHECK(cublasCreate(&cublas_));
  TROUPE_CUDA_CHECK(cublasSetStream(cublas_, stream_));
  // Tensor cores for float32 GEMMs only where the caller asks (TF32 changes results beyond
  // the tests' float32 tolerance): the default math mode.
  TROUPE_CUDA_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
}

cuda_context::~cuda_context() {
  if (cublas_)
    cublasDestroy(cublas_);
  if (cudnn_)
    cudnnDestroy(cudnn_);
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void* cuda_context::workspace(std::size_t bytes) {
  if (workspace_.bytes() < bytes) {
    // The old workspace may still be read by queued ops: free it only once they have run.
    TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    workspace_ = device_buffer(bytes);
  }
  return workspace_.get();
}

void cuda_context::synchronize() {
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

} // namespace troupe::cuda
