// Batch normalization on cuDNN's legacy API in spatial mode (one mean / variance per channel
// over N, H and W): cudnnBatchNormalizationForwardTraining / ForwardInference / Backward.
//
// cuDNN's conventions and batch_norm_op's, side by side, so nothing needs converting:
// - exponentialAverageFactor: running = factor * batch + (1 - factor) * running, i.e. the
//   factor is the op's momentum, passed as is (0 leaves the running statistics alone);
// - the running variance takes the unbiased batch variance (times M / (M - 1), M = N*H*W), as
//   the CPU op (PyTorch's convention) does, while y is normalized with the biased one;
// - epsilon enters as 1 / sqrt(var + eps) in both; cuDNN's floor CUDNN_BN_MIN_EPSILON is 0 in
//   cuDNN 9 and the op's own check (eps > 0) is stricter;
// - "resultSaveInvVariance" is, despite the name, 1 / sqrt(var + eps): the inverse std the CPU
//   op keeps. The saved mean and inverse std stay in device memory per shape, for backward.
// An NC input [N, C] is described as [N, C, 1, 1], which spatial mode normalizes over N.
// cuDNN reduces in float (the CPU op in double around a shift), hence the tests' tolerance.
#include "kernels/cuda/batch_norm_cuda.hpp"
#include "kernels/cuda/cudnn_descriptor.hpp"

#include <climits>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cpu/shape_cache.hpp"

namespace troupe::cuda {

namespace {

constexpr cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;

// Descriptors for one input shape, and the statistics of its last training forward.
struct bn_plan {
  explicit bn_plan(const shape_t& x) : channels(x[1]) {
    const int h = x.size() == 4 ? static_cast<int>(x[2]) : 1;
    const int w = x.size() == 4 ? static_cast<int>(x[3]) : 1;
    TROUPE_CUDA_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                 static_cast<int>(x[0]), static_cast<int>(x[1]), h,
                                                 w));
    // [1, C, 1, 1] for gamma, beta, the running and the saved statistics.
    TROUPE_CUDA_CHECK(cudnnDeriveBNTensorDescriptor(channel_desc, x_desc, mode));
    saved = device_buffer(2 * static_cast<std::size_t>(channels) * sizeof(float));
  }
  float* saved_mean() const { return saved.as<float>(); }
  float* saved_inv_std() const { return saved.as<float>() + channels; }

  std::int64_t channels;
  tensor_descriptor x_desc, channel_desc;
  device_buffer saved; // mean [C], then inverse std [C]
  bool have_batch_stats = false;
};

// The values per channel, M = N*H*W (N for NC input), after checking x's shape.
std::int64_t values_per_channel(const shape_t& x) {
  if ((x.size() != 2 && x.size() != 4) || shape_numel(x) == 0)
    throw std::invalid_argument("batch_norm_cuda: input " + shape_string(x)
                                + " must be a non-empty [N, C, H, W] or [N, C]");
  for (auto d : x)
    if (d > INT_MAX)
      throw std::invalid_argument("batch_norm_cuda: input " + shape_string(x)
                                  + " has an extent beyond INT_MAX, which cuDNN cannot take");
  return shape_numel(x) / x[1];
}

void require_pointers(std::initializer_list<std::pair<const void*, const char*>> pointers) {
  for (const auto& [p, what] : pointers)
    if (p == nullptr)
      throw std::invalid_argument(std::string("batch_norm_cuda: ") + what + " is null");
}

} // namespace

struct batch_norm_cuda::impl {
  cpu::shape_cache<bn_plan> plans;
  int device = -1; // of the first context: the saved statistics live there

  void check_device(const cuda_context& context) {
    if (device < 0)
      device = context.device();
    if (context.device() != device)
      throw std::logic_error("batch_norm_cuda: used on gpu:" + std::to_string(context.device())
                             + " after gpu:" + std::to_string(device));
  }

  bn_plan& plan(const cuda_context& context, const shape_t& x) {
    check_device(context);
    return plans.get(cpu::make_shape_key(x), [&] { return std::make_unique<bn_plan>(x); });
  }
};

batch_norm_cuda::batch_norm_cuda(batch_norm_params params)
    : params_(params), impl_(std::make_unique<impl>()) {
  if (!(params.epsilon > 0) || params.epsilon < CUDNN_BN_MIN_EPSILON)
    throw std::invalid_argument(
      "batch_norm_cuda: epsilon must be > 0 and >= CUDNN_BN_MIN_EPSILON, got "
      + std::to_string(params.epsilon));
  if (!(params.momentum >= 0 && params.momentum <= 1))
    throw std::invalid_argument("batch_norm_cuda: momentum must be in [0, 1], got "
                                + std::to_string(params.momentum));
}

batch_norm_cuda::~batch_norm_cuda() = default;
batch_norm_cuda::batch_norm_cuda(batch_norm_cuda&&) noexcept = default;
batch_norm_cuda& batch_norm_cuda::operator=(batch_norm_cuda&&) noexcept = default;

void batch_norm_cuda::forward_training(cuda_context& context, const shape_t& x_shape,
                                       const float* x, const float* gamma, const float* beta,
                                       float* y, float* running_mean, float* running_var) {
  const std::int64_t m = values_per_channel(x_shape);
  if (m < 2)
    throw std::invalid_argument("batch_norm_cuda: training needs more than one value per "
                                "channel, got "
                                + shape_string(x_shape));
  require_pointers({{x, "x"},
                    {gamma, "gamma"},
                    {beta, "beta"},
                    {y, "y"},
                    {running_mean, "running_mean"},
                    {running_var, "running_var"}});
  bn_plan& plan = impl_->plan(context, x_shape);
  const float one = 1.0f, zero = 0.0f;
  TROUPE_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(
    context.cudnn(), mode, &one, &zero, plan.x_desc, x, plan.x_desc, y, plan.channel_desc, gamma,
    beta, static_cast<double>(params_.momentum), running_mean, running_var,
    static_cast<double>(params_.epsilon), plan.saved_mean(), plan.saved_inv_std()));
  plan.have_batch_stats = true;
}

void batch_norm_cuda::forward_inference(cuda_context& context, const shape_t& x_shape,
                                        const float* x, const float* gamma, const float* beta,
                                        const float* running_mean, const float* running_var,
                                        float* y) {
  values_per_channel(x_shape);
  require_pointers({{x, "x"},
                    {gamma, "gamma"},
                    {beta, "beta"},
                    {running_mean, "running_mean"},
                    {running_var, "running_var"},
                    {y, "y"}});
  bn_plan& plan = impl_->plan(context, x_shape);
  const float one = 1.0f, zero = 0.0f;
  TROUPE_CUDA_CHECK(cudnnBatchNormalizationForwardInference(
    context.cudnn(), mode, &one, &zero, plan.x_desc, x, plan.x_desc, y, plan.channel_desc, gamma,
    beta, running_mean, running_var, static_cast<double>(params_.epsilon)));
}

// dbeta = sum(dy), dgamma = sum(dy * xhat), dx = gamma * inv_std * (dy - mean(dy) - xhat *
// mean(dy * xhat)), with the batch statistics of the last training forward (cuDNN's formula
// and batch_norm_op's are the same).
void batch_norm_cuda::backward(cuda_context& context, const shape_t& x_shape, const float* x,
                               const float* gamma, const float* dy, float* dx, float* dgamma,
                               float* dbeta) {
  values_per_channel(x_shape);
  require_pointers(
    {{x, "x"}, {gamma, "gamma"}, {dy, "dy"}, {dx, "dx"}, {dgamma, "dgamma"}, {dbeta, "dbeta"}});
  impl_->check_device(context);
  bn_plan* plan = impl_->plans.find(cpu::make_shape_key(x_shape));
  if (plan == nullptr || !plan->have_batch_stats)
    throw std::logic_error("batch_norm_cuda: backward for input " + shape_string(x_shape)
                           + " without a training forward of that shape");
  const float one = 1.0f, zero = 0.0f;
  TROUPE_CUDA_CHECK(cudnnBatchNormalizationBackward(
    context.cudnn(), mode, &one, &zero, &one, &zero, plan->x_desc, x, plan->x_desc, dy,
    plan->x_desc, dx, plan->channel_desc, gamma, dgamma, dbeta,
    static_cast<double>(params_.epsilon), plan->saved_mean(), plan->saved_inv_std()));
}

} // namespace troupe::cuda
