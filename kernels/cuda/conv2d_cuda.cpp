// 2-D convolution on cuDNN's legacy API: cudnnConvolutionForward plus cudnnAddTensor for the
// bias, cudnnConvolutionBackwardData / BackwardFilter / BackwardBias for the gradients, all with
// beta = 0 (written, as conv2d_op writes them).
//
// A conv2d_plan per input shape holds the descriptors (x and y as NCHW float tensors, w as an
// NCHW filter [K, C/g, R, S] with the group count on the convolution descriptor, the bias as
// [1, K, 1, 1]) and, per direction, the algorithm chosen on that direction's first call with
// its workspace size. Choosing means cudnnFind* (every algorithm timed once) or cudnnGet*_v7
// (cuDNN's ranking, nothing run), then the first result, fastest first, that succeeded, fits
// the workspace limit and runs in FMA math. FMA because CUDNN_DEFAULT_MATH lets cuDNN use TF32
// tensor cores for float32 on Ampere and later: inputs rounded to a 10-bit mantissa, ~1e-3
// relative error, far outside the float32 tolerance the CPU op is held to. The descriptor asks
// for CUDNN_FMA_MATH and results in any other math type are refused. For the same reason the
// FFT and non-fused Winograd algorithms are passed over unless the options allow them: they
// transform the data and lose precision doing it (on an H100, LeNet's 5x5 backward-data by
// FFT/Winograd was 2.9e-3 off the CPU op, and a whole LeNet step's weight gradients 2e-2).
//
// cudnnFind* runs under cuda::algorithm_search_lock() held exclusively (cuda_check.hpp).
#include "kernels/cuda/conv2d_cuda.hpp"
#include "kernels/cuda/cudnn_descriptor.hpp"

#include <algorithm>
#include <climits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/shape_cache.hpp"

namespace troupe::cuda {

namespace {

// Extents as cuDNN's ints (output_shape has checked that they fit).
int as_int(std::int64_t v) {
  return static_cast<int>(v);
}

template <class Algo> struct chosen_algorithm {
  Algo algo;
  std::size_t workspace_bytes;
};

// Descriptors and chosen algorithms for one input shape (the op's parameters are fixed).
class conv2d_plan {
public:
  conv2d_plan(const conv2d_params& p, const shape_t& x, const shape_t& w, const shape_t& y)
      : shapes("input " + shape_string(x) + " and weights " + shape_string(w)) {
    TROUPE_CUDA_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                 as_int(x[0]), as_int(x[1]), as_int(x[2]),
                                                 as_int(x[3])));
    TROUPE_CUDA_CHECK(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                 as_int(y[0]), as_int(y[1]), as_int(y[2]),
                                                 as_int(y[3])));
    TROUPE_CUDA_CHECK(cudnnSetTensor4dDescriptor(bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                                 as_int(w[0]), 1, 1));
    // Filter dims are [K, C/g, R, S]: the per-group input channels, as in OIHW weights.
    TROUPE_CUDA_CHECK(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                 as_int(w[0]), as_int(w[1]), as_int(w[2]),
                                                 as_int(w[3])));
    // Cross-correlation (no kernel flip), as conv2d_op and every framework compute it.
    TROUPE_CUDA_CHECK(cudnnSetConvolution2dDescriptor(conv_desc, as_int(p.pad_h), as_int(p.pad_w),
                                                      as_int(p.stride_h), as_int(p.stride_w), 1, 1,
                                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    TROUPE_CUDA_CHECK(cudnnSetConvolutionGroupCount(conv_desc, as_int(p.groups)));
    TROUPE_CUDA_CHECK(cudnnSetConvolutionMathType(conv_desc, CUDNN_FMA_MATH));
    // Our output shape and cuDNN's must agree, or every call below would be wrong.
    int n = 0, k = 0, h = 0, wd = 0;
    TROUPE_CUDA_CHECK(
      cudnnGetConvolution2dForwardOutputDim(conv_desc, x_desc, w_desc, &n, &k, &h, &wd));
    if (shape_t{n, k, h, wd} != y)
      throw std::logic_error("conv2d_cuda: cuDNN computes output " + shape_string({n, k, h, wd})
                             + " for input " + shape_string(x) + " and weights " + shape_string(w)
                             + ", the op " + shape_string(y));
  }

  std::string shapes; // for error messages
  tensor_descriptor x_desc, y_desc, bias_desc;
  filter_descriptor w_desc;
  convolution_descriptor conv_desc;
  std::optional<chosen_algorithm<cudnnConvolutionFwdAlgo_t>> forward;
  std::optional<chosen_algorithm<cudnnConvolutionBwdDataAlgo_t>> backward_data;
  std::optional<chosen_algorithm<cudnnConvolutionBwdFilterAlgo_t>> backward_filter;
};

} // namespace

bool transforms_data(cudnnConvolutionFwdAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING
         || algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool transforms_data(cudnnConvolutionBwdDataAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT
         || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING
         || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool transforms_data(cudnnConvolutionBwdFilterAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT
         || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING
         || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

namespace {

// The first of cuDNN's results (sorted fastest first) that ran, fits, computes in FMA math and
// (unless `o` allows them) does not transform the data; `search(count, &returned, results)` is
// cudnnFind* or cudnnGet*_v7 for one direction and `workspace(algo, &bytes)` its
// cudnnGet*WorkspaceSize.
template <class Perf, class Search, class Workspace>
auto choose(const char* direction, const conv2d_plan& plan, const conv2d_cuda_options& o,
            int max_count, Search search, Workspace workspace) {
  const std::size_t limit = o.workspace_limit;
  std::vector<Perf> results(static_cast<std::size_t>(std::max(max_count, 1)));
  int returned = 0;
  {
    // Timing runs (cudnnFind*) keep other threads' allocations out (cuda_check.hpp).
    std::unique_lock<std::shared_mutex> searching(algorithm_search_lock(), std::defer_lock);
    if (o.benchmark)
      searching.lock();
    search(static_cast<int>(results.size()), &returned, results.data());
  }
  for (int i = 0; i < returned; ++i) {
    const Perf& r = results[static_cast<std::size_t>(i)];
    if (r.status != CUDNN_STATUS_SUCCESS || r.mathType != CUDNN_FMA_MATH || r.memory > limit)
      continue;
    if (!o.transforming_algorithms && transforms_data(r.algo))
      continue;
    std::size_t bytes = 0;
    workspace(r.algo, &bytes);
    if (bytes <= limit)
      return chosen_algorithm<decltype(r.algo)>{r.algo, bytes};
  }
  throw cuda_error(std::string("conv2d_cuda: none of cuDNN's ") + std::to_string(returned) + " "
                   + direction + " algorithms for " + plan.shapes
                   + " runs in FMA math within the workspace limit of " + std::to_string(limit)
                   + " bytes"
                   + (o.transforming_algorithms ? "" : " without FFT or non-fused Winograd"));
}

void choose_forward(cudnnHandle_t h, conv2d_plan& p, const conv2d_cuda_options& o) {
  int max_count = 0;
  TROUPE_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
  p.forward = choose<cudnnConvolutionFwdAlgoPerf_t>(
    "forward", p, o, max_count,
    [&](int count, int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
      if (o.benchmark)
        TROUPE_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithm(h, p.x_desc, p.w_desc, p.conv_desc,
                                                               p.y_desc, count, returned, results));
      else
        TROUPE_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          h, p.x_desc, p.w_desc, p.conv_desc, p.y_desc, count, returned, results));
    },
    [&](cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) {
      TROUPE_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, p.x_desc, p.w_desc, p.conv_desc,
                                                                p.y_desc, algo, bytes));
    });
}

void choose_backward_data(cudnnHandle_t h, conv2d_plan& p, const conv2d_cuda_options& o) {
  int max_count = 0;
  TROUPE_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
  p.backward_data = choose<cudnnConvolutionBwdDataAlgoPerf_t>(
    "backward-data", p, o, max_count,
    [&](int count, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
      if (o.benchmark)
        TROUPE_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
          h, p.w_desc, p.y_desc, p.conv_desc, p.x_desc, count, returned, results));
      else
        TROUPE_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, p.w_desc, p.y_desc, p.conv_desc, p.x_desc, count, returned, results));
    },
    [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
      TROUPE_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, p.w_desc, p.y_desc, p.conv_desc, p.x_desc, algo, bytes));
    });
}

void choose_backward_filter(cudnnHandle_t h, conv2d_plan& p, const conv2d_cuda_options& o) {
  int max_count = 0;
  TROUPE_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
  p.backward_filter = choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
    "backward-filter", p, o, max_count,
    [&](int count, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
      if (o.benchmark)
        TROUPE_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
          h, p.x_desc, p.y_desc, p.conv_desc, p.w_desc, count, returned, results));
      else
        TROUPE_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, p.x_desc, p.y_desc, p.conv_desc, p.w_desc, count, returned, results));
    },
    [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
      TROUPE_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, p.x_desc, p.y_desc, p.conv_desc, p.w_desc, algo, bytes));
    });
}

void require_pointer(const void* p, const char* what) {
  if (p == nullptr)
    throw std::invalid_argument(std::string("conv2d_cuda: ") + what + " is null");
}

} // namespace

struct conv2d_cuda::impl {
  cpu::shape_cache<conv2d_plan> plans;
  int device = -1; // of the first context: plans and algorithms belong to it

  conv2d_plan& plan(const cuda_context& context, const conv2d_params& p, const shape_t& x,
                    const shape_t& w, const shape_t& y) {
    if (device < 0)
      device = context.device();
    if (context.device() != device)
      throw std::logic_error("conv2d_cuda: used on gpu:" + std::to_string(context.device())
                             + " after gpu:" + std::to_string(device));
    return plans.get(cpu::make_shape_key(x, w),
                     [&] { return std::make_unique<conv2d_plan>(p, x, w, y); });
  }
};

conv2d_cuda::conv2d_cuda(conv2d_params params, conv2d_cuda_options options)
    : params_(params), options_(options), rules_(params), impl_(std::make_unique<impl>()) {
  if (params.stride_h > INT_MAX || params.stride_w > INT_MAX || params.pad_h > INT_MAX
      || params.pad_w > INT_MAX || params.groups > INT_MAX)
    throw std::invalid_argument(
      "conv2d_cuda: cuDNN takes strides, padding and groups up to INT_MAX (stride "
      + std::to_string(params.stride_h) + "x" + std::to_string(params.stride_w) + ", pad "
      + std::to_string(params.pad_h) + "x" + std::to_string(params.pad_w) + ", groups "
      + std::to_string(params.groups) + ")");
}

conv2d_cuda::~conv2d_cuda() = default;
conv2d_cuda::conv2d_cuda(conv2d_cuda&&) noexcept = default;
conv2d_cuda& conv2d_cuda::operator=(conv2d_cuda&&) noexcept = default;

conv2d_algorithms conv2d_cuda::algorithms(const shape_t& x_shape, const shape_t& w_shape) const {
  conv2d_algorithms chosen;
  if (const conv2d_plan* plan = impl_->plans.find(cpu::make_shape_key(x_shape, w_shape))) {
    if (plan->forward)
      chosen.forward = plan->forward->algo;
    if (plan->backward_data)
      chosen.backward_data = plan->backward_data->algo;
    if (plan->backward_filter)
      chosen.backward_filter = plan->backward_filter->algo;
  }
  return chosen;
}

// conv2d_op::output_shape's rules, plus cuDNN's: every extent must fit an int.
shape_t conv2d_cuda::output_shape(const shape_t& x, const shape_t& w) const {
  for (const auto* shape : {&x, &w})
    for (auto d : *shape)
      if (d > INT_MAX)
        throw std::invalid_argument("conv2d_cuda: input " + shape_string(x) + " and weights "
                                    + shape_string(w)
                                    + " do not fit: cuDNN takes extents up to INT_MAX");
  return rules_.output_shape(x, w);
}

void conv2d_cuda::forward(cuda_context& context, const shape_t& x_shape, const shape_t& w_shape,
                          const float* x, const float* w, const float* b, float* y) {
  shape_t y_shape = output_shape(x_shape, w_shape);
  require_pointer(x, "x");
  require_pointer(w, "w");
  require_pointer(y, "y");
  conv2d_plan& plan = impl_->plan(context, params_, x_shape, w_shape, y_shape);
  const cudnnHandle_t h = context.cudnn();
  if (!plan.forward)
    choose_forward(h, plan, options_);
  const auto& f = *plan.forward;
  void* workspace = f.workspace_bytes ? context.workspace(f.workspace_bytes) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  TROUPE_CUDA_CHECK(cudnnConvolutionForward(h, &one, plan.x_desc, x, plan.w_desc, w, plan.conv_desc,
                                            f.algo, workspace, f.workspace_bytes, &zero,
                                            plan.y_desc, y));
  if (b != nullptr) // y += b, broadcast over N, P and Q
    TROUPE_CUDA_CHECK(cudnnAddTensor(h, &one, plan.bias_desc, b, &one, plan.y_desc, y));
}

void conv2d_cuda::backward(cuda_context& context, const shape_t& x_shape, const shape_t& w_shape,
                           const float* x, const float* w, const float* dy, float* dx, float* dw,
                           float* db) {
  shape_t y_shape = output_shape(x_shape, w_shape);
  require_pointer(x, "x");
  require_pointer(dy, "dy");
  require_pointer(dw, "dw");
  if (dx != nullptr)
    require_pointer(w, "w (needed for dx)");
  conv2d_plan& plan = impl_->plan(context, params_, x_shape, w_shape, y_shape);
  const cudnnHandle_t h = context.cudnn();
  if (!plan.backward_filter)
    choose_backward_filter(h, plan, options_);
  if (dx != nullptr && !plan.backward_data)
    choose_backward_data(h, plan, options_);
  // One workspace serves both calls: they run one after the other on the stream.
  const auto& bf = *plan.backward_filter;
  std::size_t bytes = bf.workspace_bytes;
  if (dx != nullptr)
    bytes = std::max(bytes, plan.backward_data->workspace_bytes);
  void* workspace = bytes ? context.workspace(bytes) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  TROUPE_CUDA_CHECK(cudnnConvolutionBackwardFilter(h, &one, plan.x_desc, x, plan.y_desc, dy,
                                                   plan.conv_desc, bf.algo, workspace,
                                                   bf.workspace_bytes, &zero, plan.w_desc, dw));
  if (db != nullptr) // db[k] = sum of dy over N, P and Q
    TROUPE_CUDA_CHECK(
      cudnnConvolutionBackwardBias(h, &one, plan.y_desc, dy, &zero, plan.bias_desc, db));
  if (dx != nullptr) {
    const auto& bd = *plan.backward_data;
    TROUPE_CUDA_CHECK(cudnnConvolutionBackwardData(h, &one, plan.w_desc, w, plan.y_desc, dy,
                                                   plan.conv_desc, bd.algo, workspace,
                                                   bd.workspace_bytes, &zero, plan.x_desc, dx));
  }
}

} // namespace troupe::cuda
