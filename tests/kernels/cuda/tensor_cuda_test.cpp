// Tensors on a GPU: values survive host -> GPU -> host exactly; clone, fill, copy_from and
// flat_slice work on device memory; serialization saves a GPU tensor's values.
#include <catch2/catch.hpp>

#include <cstring>

#include <troupe/kernels/tensor.hpp>

#include "tests/kernels/cuda/gpu_compare.hpp"

using namespace troupe;

TEST_CASE("values go to a GPU and back unchanged", "[cuda]") {
  const auto host = cuda_test::random_tensor({3, 5, 7}, 11);
  const auto there = host.to_gpu(0);
  CHECK(there.device() == device_kind::cuda);
  CHECK(there.device_index() == 0);
  CHECK(there.shape() == host.shape());
  CHECK_THROWS_AS(there.data(), std::logic_error);   // host access to device memory is refused
  CHECK(there.to_gpu(0).shares_storage_with(there)); // already there: no copy
  const auto back = there.to_host();
  REQUIRE(back.numel() == host.numel());
  CHECK(std::memcmp(back.data(), host.data(), host.bytes()) == 0);
}

TEST_CASE("clone, fill, copy_from and flat_slice work on device memory", "[cuda]") {
  auto zeros = tensor::on_gpu({1000}, 0);
  const auto z = zeros.to_host();
  REQUIRE(z.numel() == 1000);
  for (std::int64_t i = 0; i < z.numel(); ++i)
    REQUIRE(z.data()[i] == 0.0f);
  zeros.fill(2.5f);
  auto copy = zeros.clone();
  CHECK_FALSE(copy.shares_storage_with(zeros));
  zeros.fill(0.0f); // the clone keeps its own values
  const auto c = copy.to_host();
  for (std::int64_t i = 0; i < c.numel(); ++i)
    REQUIRE(c.data()[i] == 2.5f);
  const auto values = cuda_test::random_tensor({1000}, 5);
  copy.copy_from(values); // host into device
  auto slice = copy.flat_slice(100, 10);
  CHECK(slice.device() == device_kind::cuda);
  const auto s = slice.to_host();
  REQUIRE(s.numel() == 10);
  CHECK(std::memcmp(s.data(), values.data() + 100, 10 * sizeof(float)) == 0);
  tensor host_again({1000});
  host_again.copy_from(copy); // device into host
  CHECK(std::memcmp(host_again.data(), values.data(), values.bytes()) == 0);
}
