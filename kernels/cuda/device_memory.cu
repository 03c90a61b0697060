// device_memory.hpp on the CUDA runtime. Every call makes its GPU current first (a tensor may
// be touched from any thread) and is checked. Work goes on the calling thread's own default
// stream (cudaStreamPerThread) and waits for that stream alone: never for the whole device,
// which would also wait for (and, while cuDNN searches algorithms there, fail on) the streams
// of the other compute actors sharing the GPU. Like the legacy stream before, it does not wait
// for a context's stream: callers synchronize that before reading what it wrote.
#include "kernels/device_memory.hpp"

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"

namespace troupe::device_memory {

namespace {

__global__ void fill_kernel(float* first, std::int64_t count, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    first[i] = value;
}

cudaMemcpyKind kind_of(device_kind to, device_kind from) {
  if (from == device_kind::cpu)
    return to == device_kind::cpu ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice;
  return to == device_kind::cpu ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
}

} // namespace

std::shared_ptr<float> allocate(int device, std::int64_t count, bool zero) {
  TROUPE_CUDA_CHECK(cudaSetDevice(device));
  const auto bytes = static_cast<std::size_t>(count) * sizeof(float);
  auto* first =
    static_cast<float*>(cuda::device_alloc(bytes == 0 ? sizeof(float) : bytes, __FILE__, __LINE__));
  std::shared_ptr<float> owned(first, [device](float* p) {
    cudaSetDevice(device);
    cuda::device_free(p);
  });
  if (zero && bytes > 0) {
    TROUPE_CUDA_CHECK(cudaMemsetAsync(first, 0, bytes, cudaStreamPerThread));
    // The zeros must be there before another stream (a context's) reads the memory.
    TROUPE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  }
  return owned;
}

void copy(void* dst, device_kind to, const void* src, device_kind from, std::size_t bytes,
          int device) {
  if (bytes == 0)
    return;
  TROUPE_CUDA_CHECK(cudaSetDevice(device));
  TROUPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind_of(to, from), cudaStreamPerThread));
  // From pageable host memory a copy may return before the bytes have landed.
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
}

void fill(float* first, std::int64_t count, float value, int device) {
  if (count == 0)
    return;
  TROUPE_CUDA_CHECK(cudaSetDevice(device));
  fill_kernel<<<cuda::grid_for(static_cast<std::size_t>(count)), cuda::block_threads, 0,
                cudaStreamPerThread>>>(first, count, value);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
}

} // namespace troupe::device_memory
