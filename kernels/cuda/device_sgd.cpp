// See kernels/device_sgd.hpp. One cuda_context per GPU per calling thread, made on first use
// (a thread is one actor's, or the bench's), so concurrent callers never share a stream.
#include "kernels/device_sgd.hpp"

#include <map>
#include <memory>

#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/sgd_cuda.hpp"

namespace troupe::device_sgd {

namespace {

cuda::cuda_context& context_of(int device) {
  thread_local std::map<int, std::unique_ptr<cuda::cuda_context>> contexts;
  auto& context = contexts[device];
  if (!context)
    context = std::make_unique<cuda::cuda_context>(device);
  return *context;
}

} // namespace

void update(const sgd_options& options, float lr, const tensor& weights, const tensor& grad,
            tensor& velocity, tensor& out, bool apply_weight_decay) {
  auto& context = context_of(weights.device_index());
  cuda::sgd_update(context, options, lr, weights.device_data(), grad.device_data(),
                   velocity.device_data(), out.device_data(), weights.numel(), apply_weight_decay);
  context.synchronize();
}

} // namespace troupe::device_sgd
