// sum_cuda against the CPU's copy-then-accumulate loop: K = 1, 2, 3, 8 (one launch), 9 and 17
// (two and three launches, the later ones starting from the total so far), at sizes around the
// block size; summing into the first input; sum_into against accumulate; argument errors.
//
// Tolerance: none, the sums must be identical (relative_error == 0): both sides add the inputs
// left to right in float, one rounding per addition, and additions never fuse.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include <troupe/kernels/elementwise.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/sum_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

TEST_CASE("cuda sum_buffers adds K buffers as the CPU accumulates them", "[cuda]") {
  cuda::cuda_context context(0);
  for (const int k : {1, 2, 3, 8, 9, 17}) {
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{257}, std::int64_t{65539}}) {
      INFO("K = " << k << ", n = " << n);
      const shape_t s{n};
      std::vector<tensor> inputs;
      std::vector<cuda::device_buffer> device_inputs;
      std::vector<const float*> pointers;
      for (int i = 0; i < k; ++i) {
        inputs.push_back(random_tensor(s, static_cast<std::uint32_t>(100 * k + i)));
        device_inputs.push_back(upload(inputs.back()));
        pointers.push_back(device_inputs.back().as<float>());
      }
      tensor want = inputs[0].clone();
      for (int i = 1; i < k; ++i)
        accumulate(inputs[i], want);

      cuda::device_buffer out(static_cast<std::size_t>(n) * sizeof(float));
      cuda::sum_buffers(context, pointers, out.as<float>(), n);
      CHECK(relative_error(download(out, s), want) == 0);
      // Into the first gradient, as a compute actor sums its peers' into its own.
      cuda::sum_buffers(context, pointers, device_inputs[0].as<float>(), n);
      CHECK(relative_error(download(device_inputs[0], s), want) == 0);
    }
  }
}

TEST_CASE("cuda sum_into adds one buffer as accumulate does", "[cuda]") {
  cuda::cuda_context context(0);
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{255}, std::int64_t{1000003}}) {
    INFO("n = " << n);
    const shape_t s{n};
    const tensor x = random_tensor(s, 1);
    tensor total = random_tensor(s, 2);
    auto gx = upload(x), gtotal = upload(total);
    accumulate(x, total);
    cuda::sum_into(context, gx.as<float>(), gtotal.as<float>(), n);
    CHECK(relative_error(download(gtotal, s), total) == 0);
  }
}

TEST_CASE("cuda sum argument errors throw before anything is queued", "[cuda]") {
  cuda::cuda_context context(0);
  const shape_t s{300};
  const tensor sentinel = random_tensor(s, 9);
  auto a = upload(random_tensor(s, 1)), b = upload(random_tensor(s, 2)), out = upload(sentinel);
  const float* pa = a.as<float>();
  const float* pb = b.as<float>();
  float* po = out.as<float>();

  CHECK_THROWS_WITH(cuda::sum_buffers(context, {}, po, 300), Catch::Contains("no inputs"));
  CHECK_THROWS_AS(cuda::sum_buffers(context, {pa, pb}, po, -1), std::invalid_argument);
  CHECK_THROWS_WITH(cuda::sum_buffers(context, {pa, nullptr}, po, 300),
                    Catch::Contains("input 1 is null"));
  CHECK_THROWS_AS(cuda::sum_buffers(context, {pa, pb}, nullptr, 300), std::invalid_argument);
  CHECK_THROWS_WITH(cuda::sum_buffers(context, {pa, pb, po}, po, 300),
                    Catch::Contains("out is input 2"));
  CHECK_THROWS_AS(cuda::sum_into(context, nullptr, po, 300), std::invalid_argument);
  CHECK(relative_error(download(out, s), sentinel) == 0); // nothing was written

  cuda::sum_buffers(context, {nullptr}, nullptr, 0); // nothing to sum: no pointers needed
}
