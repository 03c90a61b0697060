// dropout_cuda against dropout_op: for several probabilities, seeds and call counts the GPU
// must drop exactly the elements the CPU drops (the mask is compared byte for byte), at sizes
// around the block size; the backward reuses the mask; inference is the identity; the shared
// hash gives splitmix64's known first output; and argument errors throw before anything runs.
//
// Tolerance: none, everything must be identical. The mask is the same integer hash; y and dx
// are one multiplication by the same float scale (or zero).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include <troupe/kernels/dropout.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/dropout_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

namespace {

std::vector<std::uint8_t> download_mask(const cuda::device_buffer& mask, std::int64_t n) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
  TROUPE_CUDA_CHECK(cudaMemcpy(bytes.data(), mask.get(), bytes.size(), cudaMemcpyDeviceToHost));
  return bytes;
}

} // namespace

TEST_CASE("cuda dropout_mix64 is splitmix64's finalizer", "[cuda]") {
  // splitmix64 seeded with 0 first returns 0xe220a8397b1dcdaf (Vigna's reference code).
  CHECK(cuda::dropout_mix64(0) == 0xe220a8397b1dcdafull);
}

TEST_CASE("cuda dropout drops the elements the CPU op drops", "[cuda]") {
  cuda::cuda_context context(0);
  for (const float p : {0.0f, 0.3f, 0.5f})
    for (const std::uint64_t seed : {std::uint64_t{7}, std::uint64_t{42}})
      for (const std::uint64_t call : {std::uint64_t{0}, std::uint64_t{2}})
        for (const std::int64_t n : {std::int64_t{1}, std::int64_t{257}, std::int64_t{1048579}}) {
          INFO("p " << p << ", seed " << seed << ", call " << call << ", n " << n);
          const shape_t s{n};
          // Inputs in [0.5, 1.5): a kept element is never zero, so the mask shows in dx below.
          const tensor x = random_tensor(s, 1, 0.5f, 1.5f), dy = random_tensor(s, 2);
          tensor y(s), dx(s), ones(s), kept(s);
          ones.fill(1.0f);
          dropout_op cpu(p, seed);
          for (std::uint64_t i = 0; i <= call; ++i)
            cpu.forward(x, y, true);
          cpu.backward(ones, kept); // 1/(1-p) where kept, 0 where dropped
          cpu.backward(dy, dx);
          std::vector<std::uint8_t> want_mask(static_cast<std::size_t>(n));
          for (std::int64_t i = 0; i < n; ++i)
            want_mask[static_cast<std::size_t>(i)] = kept.data()[i] != 0.0f;

          auto gx = upload(x), gy = upload(tensor(s)), gdy = upload(dy), gdx = upload(tensor(s));
          cuda::device_buffer mask(static_cast<std::size_t>(n));
          cuda::dropout_forward(context, p, seed, call, gx.as<float>(), gy.as<float>(),
                                mask.as<std::uint8_t>(), n);
          CHECK(download_mask(mask, n) == want_mask);
          CHECK(relative_error(download(gy, s), y) == 0);
          cuda::dropout_backward(context, p, mask.as<std::uint8_t>(), gdy.as<float>(),
                                 gdx.as<float>(), n);
          CHECK(relative_error(download(gdx, s), dx) == 0);
          // In place, both ways.
          cuda::dropout_forward(context, p, seed, call, gx.as<float>(), gx.as<float>(),
                                mask.as<std::uint8_t>(), n);
          CHECK(relative_error(download(gx, s), y) == 0);
          cuda::dropout_backward(context, p, mask.as<std::uint8_t>(), gdy.as<float>(),
                                 gdy.as<float>(), n);
          CHECK(relative_error(download(gdy, s), dx) == 0);
        }
}

TEST_CASE("cuda dropout inference is the identity", "[cuda]") {
  cuda::cuda_context context(0);
  const shape_t s{3, 1001};
  const tensor x = random_tensor(s, 1);
  auto gx = upload(x), gy = upload(tensor(s));
  cuda::dropout_inference(context, gx.as<float>(), gy.as<float>(), x.numel());
  CHECK(relative_error(download(gy, s), x) == 0);
  cuda::dropout_inference(context, gx.as<float>(), gx.as<float>(), x.numel());
  CHECK(relative_error(download(gx, s), x) == 0);
}

TEST_CASE("cuda dropout argument errors throw before anything is queued", "[cuda]") {
  cuda::cuda_context context(0);
  const shape_t s{40};
  const tensor sentinel = random_tensor(s, 9);
  auto x = upload(random_tensor(s, 1)), y = upload(sentinel);
  cuda::device_buffer mask(40);
  float* px = x.as<float>();
  float* py = y.as<float>();
  std::uint8_t* pm = mask.as<std::uint8_t>();

  CHECK_THROWS_WITH(cuda::dropout_forward(context, 1.0f, 1, 0, px, py, pm, 40),
                    Catch::Contains("probability must be in [0, 1)"));
  CHECK_THROWS_AS(cuda::dropout_forward(context, -0.1f, 1, 0, px, py, pm, 40),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::dropout_forward(context, 0.5f, 1, 0, px, py, nullptr, 40),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::dropout_forward(context, 0.5f, 1, 0, px, py, pm, -1),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::dropout_inference(context, nullptr, py, 40), std::invalid_argument);
  CHECK_THROWS_AS(cuda::dropout_backward(context, 0.5f, nullptr, px, py, 40),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::dropout_backward(context, 1.5f, pm, px, py, 40), std::invalid_argument);
  CHECK(relative_error(download(y, s), sentinel) == 0); // nothing was written
}
