// sgd_cuda against sgd_update on the same weights, gradients and velocity: plain momentum and
// Nesterov, with and without weight decay and with apply_weight_decay off, writing in place or
// into another buffer, over three steps (the velocity carries between them), at sizes around
// the block size; and argument errors.
//
// Tolerance: relative_error <= 1e-5 for the weights and the velocity. The arithmetic is the
// same in the same order, but either compiler may fuse a multiply with the following addition
// (nvcc does by default, GCC with -march=x86-64-v3 may), which moves a result by an ulp or so.
#include <catch2/catch.hpp>

#include <stdexcept>

#include <troupe/kernels/sgd.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/sgd_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

namespace {

constexpr double tolerance = 1e-5;

} // namespace

TEST_CASE("cuda sgd_update follows the CPU update step by step", "[cuda]") {
  cuda::cuda_context context(0);
  for (const bool nesterov : {false, true})
    for (const float weight_decay : {0.0f, 5e-4f})
      for (const bool apply_weight_decay : {true, false})
        for (const bool in_place : {true, false})
          for (const std::int64_t n : {std::int64_t{1}, std::int64_t{257}, std::int64_t{100003}}) {
            INFO("nesterov " << nesterov << ", weight decay " << weight_decay << " applied "
                             << apply_weight_decay << ", in place " << in_place << ", n " << n);
            const shape_t s{n};
            const sgd_options options{0.9f, weight_decay, nesterov};
            const float lr = 0.1f;
            tensor weights = random_tensor(s, 1), velocity(s), out(s);
            auto gweights = upload(weights), gvelocity = upload(velocity), gout = upload(out);
            for (std::uint32_t step = 0; step < 3; ++step) {
              const tensor grad = random_tensor(s, 10 + step);
              auto ggrad = upload(grad);
              tensor& target = in_place ? weights : out;
              sgd_update(options, lr, weights, grad, velocity, target, apply_weight_decay);
              float* gtarget = in_place ? gweights.as<float>() : gout.as<float>();
              cuda::sgd_update(context, options, lr, gweights.as<float>(), ggrad.as<float>(),
                               gvelocity.as<float>(), gtarget, n, apply_weight_decay);
              CHECK(relative_error(download(in_place ? gweights : gout, s), target) <= tolerance);
              CHECK(relative_error(download(gvelocity, s), velocity) <= tolerance);
              if (!in_place) { // the next step starts from the new weights on both sides
                weights.copy_from(out);
                TROUPE_CUDA_CHECK(cudaMemcpy(gweights.get(), gout.get(), weights.bytes(),
                                             cudaMemcpyDeviceToDevice));
                CHECK(relative_error(download(gweights, s), weights) <= tolerance);
              }
            }
          }
}

TEST_CASE("cuda sgd_update argument errors throw before anything is queued", "[cuda]") {
  cuda::cuda_context context(0);
  const shape_t s{50};
  const tensor sentinel = random_tensor(s, 9);
  auto w = upload(random_tensor(s, 1)), g = upload(random_tensor(s, 2)), v = upload(sentinel);
  const sgd_options options{};
  CHECK_THROWS_AS(cuda::sgd_update(context, options, 0.1f, w.as<float>(), g.as<float>(),
                                   v.as<float>(), w.as<float>(), -1),
                  std::invalid_argument);
  CHECK_THROWS_WITH(cuda::sgd_update(context, options, 0.1f, w.as<float>(), nullptr, v.as<float>(),
                                     w.as<float>(), 50),
                    Catch::Contains("sgd_update: grad is null for 50 elements"));
  CHECK_THROWS_AS(cuda::sgd_update(context, options, 0.1f, w.as<float>(), g.as<float>(),
                                   v.as<float>(), nullptr, 50),
                  std::invalid_argument);
  CHECK(relative_error(download(v, s), sentinel) == 0); // the velocity was not touched
}

TEST_CASE("the public sgd_update runs on the GPU when its tensors are there", "[cuda]") {
  const shape_t s{4099};
  const sgd_options options{0.9f, 5e-4f, true};
  tensor weights = random_tensor(s, 1), velocity(s);
  auto gweights = weights.to_gpu(0), gvelocity = velocity.to_gpu(0);
  for (std::uint32_t step = 0; step < 3; ++step) {
    const tensor grad = random_tensor(s, 20 + step);
    const auto ggrad = grad.to_gpu(0);
    sgd_update(options, 0.1f, weights, grad, velocity, weights);
    sgd_update(options, 0.1f, gweights, ggrad, gvelocity, gweights);
    REQUIRE(gweights.device() == device_kind::cuda);
    CHECK(relative_error(gweights.to_host(), weights) <= tolerance);
    CHECK(relative_error(gvelocity.to_host(), velocity) <= tolerance);
  }
  // Mixed devices: refused before anything runs.
  const tensor host_grad = random_tensor(s, 30);
  const auto before = gweights.to_host();
  CHECK_THROWS_WITH(sgd_update(options, 0.1f, gweights, host_grad, gvelocity, gweights),
                    Catch::Contains("must be on one device"));
  CHECK(relative_error(gweights.to_host(), before) == 0);
}
