// batch_norm_cuda against batch_norm_op on the same random inputs: training forward (y and
// the updated running statistics), backward (dx, dgamma, dbeta) and inference forward, at
// LeNet-, ResNet-20- and VGG-like activations and an NC input, with non-default epsilon and
// momentum, a momentum of 0, and a mean far from zero; and the errors of bad calls.
//
// Tolerance: relative_error <= 1e-4. Each channel's statistics reduce M = N*H*W values (up to
// 16384 here) in float32 on cuDNN (tree-shaped, ~eps*log2(M) relative) and in double on the
// CPU; y, dx, and the running statistics are a few float operations on top, and dgamma /
// dbeta are sums of M terms (~eps*sqrt(M) relative to their scale). All of that is ~1e-5 at
// most, also for inputs in [2, 4) where E[x^2] - E[x]^2 would cancel a factor ~30 if cuDNN
// formed it naively.
#include <catch2/catch.hpp>

#include <stdexcept>

#include <troupe/kernels/batch_norm.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/batch_norm_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

namespace {

constexpr double tolerance = 1e-4;

struct bn_case {
  const char* name;
  shape_t x;
  batch_norm_params params;
  float lo = -1.0f, hi = 1.0f; // range of x
};

const bn_case cases[] = {
  {"LeNet-sized [4, 6, 24, 24]", {4, 6, 24, 24}, {}},
  {"ResNet-20 [4, 16, 32, 32]", {4, 16, 32, 32}, {}},
  {"VGG-like [2, 128, 8, 8], eps 1e-3, momentum 0.3", {2, 128, 8, 8}, {1e-3f, 0.3f}},
  {"NC input [16, 100]", {16, 100}, {}},
  {"momentum 0 leaves the running statistics", {4, 8, 4, 4}, {1e-5f, 0.0f}},
  {"mean far from zero, x in [2, 4)", {4, 8, 16, 16}, {}, 2.0f, 4.0f},
};

void check_against_cpu(const bn_case& c) {
  INFO(c.name);
  const shape_t ch{c.x[1]};
  const tensor x = random_tensor(c.x, 1, c.lo, c.hi), dy = random_tensor(c.x, 2);
  const tensor gamma = random_tensor(ch, 3, 0.5f, 1.5f), beta = random_tensor(ch, 4, -0.5f, 0.5f);
  const tensor mean0 = random_tensor(ch, 5, -0.1f, 0.1f), var0 = random_tensor(ch, 6, 0.5f, 1.5f);

  batch_norm_op cpu(c.params);
  tensor y(c.x), dx(c.x), dgamma(ch), dbeta(ch), y_inference(c.x);
  tensor running_mean = mean0.clone(), running_var = var0.clone();
  cpu.forward_training(x, gamma, beta, y, running_mean, running_var);
  cpu.backward(x, gamma, dy, dx, dgamma, dbeta);
  cpu.forward_inference(x, gamma, beta, running_mean, running_var, y_inference);

  cuda::cuda_context context(0);
  cuda::batch_norm_cuda gpu(c.params);
  const auto x_d = upload(x), dy_d = upload(dy), gamma_d = upload(gamma), beta_d = upload(beta);
  auto mean_d = upload(mean0), var_d = upload(var0);
  cuda::device_buffer y_d(y.bytes()), dx_d(dx.bytes()), dgamma_d(dgamma.bytes()),
    dbeta_d(dbeta.bytes()), y_inference_d(y.bytes());
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize()); // uploads land before the op's stream reads them
  gpu.forward_training(context, c.x, x_d.as<float>(), gamma_d.as<float>(), beta_d.as<float>(),
                       y_d.as<float>(), mean_d.as<float>(), var_d.as<float>());
  gpu.backward(context, c.x, x_d.as<float>(), gamma_d.as<float>(), dy_d.as<float>(),
               dx_d.as<float>(), dgamma_d.as<float>(), dbeta_d.as<float>());
  gpu.forward_inference(context, c.x, x_d.as<float>(), gamma_d.as<float>(), beta_d.as<float>(),
                        mean_d.as<float>(), var_d.as<float>(), y_inference_d.as<float>());
  context.synchronize();

  CHECK(relative_error(download(y_d, c.x), y) <= tolerance);
  CHECK(relative_error(download(mean_d, ch), running_mean) <= tolerance);
  CHECK(relative_error(download(var_d, ch), running_var) <= tolerance);
  CHECK(relative_error(download(dx_d, c.x), dx) <= tolerance);
  CHECK(relative_error(download(dgamma_d, ch), dgamma) <= tolerance);
  CHECK(relative_error(download(dbeta_d, ch), dbeta) <= tolerance);
  CHECK(relative_error(download(y_inference_d, c.x), y_inference) <= tolerance);
}

} // namespace

TEST_CASE("batch_norm_cuda matches batch_norm_op in training, backward and inference", "[cuda]") {
  for (const auto& c : cases)
    check_against_cpu(c);
}

TEST_CASE("batch_norm_cuda with momentum 0 leaves the running statistics exactly", "[cuda]") {
  const shape_t x_shape{4, 8, 4, 4}, ch{8};
  const tensor x = random_tensor(x_shape, 7), gamma = random_tensor(ch, 8);
  const tensor beta = random_tensor(ch, 9), mean0 = random_tensor(ch, 10);
  const tensor var0 = random_tensor(ch, 11, 0.5f, 1.5f);
  cuda::cuda_context context(0);
  cuda::batch_norm_cuda gpu({1e-5f, 0.0f});
  const auto x_d = upload(x), gamma_d = upload(gamma), beta_d = upload(beta);
  auto mean_d = upload(mean0), var_d = upload(var0);
  cuda::device_buffer y_d(x.bytes());
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
  gpu.forward_training(context, x_shape, x_d.as<float>(), gamma_d.as<float>(), beta_d.as<float>(),
                       y_d.as<float>(), mean_d.as<float>(), var_d.as<float>());
  context.synchronize();
  CHECK(relative_error(download(mean_d, ch), mean0) == 0.0);
  CHECK(relative_error(download(var_d, ch), var0) == 0.0);
}

TEST_CASE("batch_norm_cuda rejects bad calls before queuing anything", "[cuda]") {
  cuda::cuda_context context(0);
  cuda::batch_norm_cuda op;
  // Null buffers throughout: had anything reached cuDNN, it would fail with a cuda_error.
  CHECK_THROWS_AS(
    op.forward_training(context, {4, 8, 16}, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
    std::invalid_argument);
  CHECK_THROWS_WITH(
    op.forward_inference(context, {4, 8, 16}, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
    Catch::Contains("[4, 8, 16]"));
  CHECK_THROWS_WITH(
    op.forward_training(context, {1, 8}, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
    Catch::Contains("more than one value per channel"));
  CHECK_THROWS_AS(op.forward_training(context, {0, 8, 4, 4}, nullptr, nullptr, nullptr, nullptr,
                                      nullptr, nullptr),
                  std::invalid_argument);
  CHECK_THROWS_WITH(op.forward_training(context, {2, 8, 4, 4}, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr),
                    Catch::Contains("x is null"));
  // Backward needs the statistics of a training forward of the same shape.
  cuda::device_buffer any(4 * 8 * 4 * 4 * sizeof(float));
  float* p = any.as<float>();
  CHECK_THROWS_AS(op.backward(context, {4, 8, 4, 4}, p, p, p, p, p, p), std::logic_error);
  CHECK_THROWS_AS(cuda::batch_norm_cuda({0.0f, 0.1f}), std::invalid_argument);
  CHECK_THROWS_AS(cuda::batch_norm_cuda({1e-5f, 1.5f}), std::invalid_argument);
  context.synchronize();
}
