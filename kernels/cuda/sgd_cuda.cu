// SGD with momentum as one fused grid-stride pass: three streams in (w, g, v), two out (v, w'),
// so the kernel is bound by memory bandwidth and each thread handles whole elements. Nesterov
// is a template parameter, so the loop holds no per-element branch. Weights and out may alias:
// each element is read before it is written, by the same thread.
#include "kernels/cuda/op_checks.hpp"
#include "kernels/cuda/sgd_cuda.hpp"

#include <stdexcept>
#include <string>

namespace troupe::cuda {

namespace {

template <bool nesterov>
__global__ void sgd_kernel(const float* w, const float* g, float* v, float* out, float lr, float mu,
                           float wd, std::int64_t n) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) {
    const float wi = w[i];
    const float gi = g[i] + wd * wi;
    const float vi = mu * v[i] + gi;
    v[i] = vi;
    out[i] = nesterov ? wi - lr * (gi + mu * vi) : wi - lr * vi;
  }
}

} // namespace

void sgd_update(cuda_context& context, const sgd_options& options, float lr, const float* weights,
                const float* grad, float* velocity, float* out, std::int64_t n,
                bool apply_weight_decay) {
  require_count("sgd_update", n);
  require_memory("sgd_update", "weights", weights, n);
  require_memory("sgd_update", "grad", grad, n);
  require_memory("sgd_update", "velocity", velocity, n);
  require_memory("sgd_update", "out", out, n);
  if (n == 0)
    return;
  const float wd = apply_weight_decay ? options.weight_decay : 0.0f;
  if (options.nesterov)
    sgd_kernel<true><<<grid_for(n), block_threads, 0, context.stream()>>>(
      weights, grad, velocity, out, lr, options.momentum, wd, n);
  else
    sgd_kernel<false><<<grid_for(n), block_threads, 0, context.stream()>>>(
      weights, grad, velocity, out, lr, options.momentum, wd, n);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

} // namespace troupe::cuda
