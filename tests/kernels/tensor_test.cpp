// tensor basics the ops rely on: shapes and sizes, shared storage for copies and reshapes,
// deep clones, unique(), from_values and copy_from validation, alignment.
#include <catch2/catch.hpp>

#include <cstdint>

#include <troupe/kernels/device_info.hpp>
#include <troupe/kernels/tensor.hpp>

using namespace troupe;

TEST_CASE("tensor shape, size and zero fill", "[tensor]") {
  tensor t({2, 3, 4});
  CHECK(t.rank() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.bytes() == 96);
  CHECK(t.dim(2) == 4);
  CHECK_THROWS_AS(t.dim(3), std::out_of_range);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    REQUIRE(t.data()[i] == 0.0f);
  CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
  CHECK(shape_string({128, 1, 28, 28}) == "[128, 1, 28, 28]");
  CHECK(shape_numel({}) == 1);
  CHECK_THROWS_AS(shape_numel({2, -1}), std::invalid_argument);
  tensor empty;
  CHECK(empty.empty());
  CHECK(empty.numel() == 0);
}

TEST_CASE("a flat slice is a counted view of a range of the elements", "[tensor]") {
  tensor a = tensor::from_values({2, 3}, {1, 2, 3, 4, 5, 6});
  {
    tensor middle = a.flat_slice(2, 3);
    CHECK(middle.shape() == shape_t{3});
    CHECK(middle.data()[0] == 3);
    CHECK(middle.shares_storage_with(a));
    CHECK_FALSE(a.unique()); // a writer must not reuse a's buffer while the slice lives
    middle.data()[2] = 50;
    CHECK(a.data()[4] == 50);
    CHECK(a.flat_slice(0, 6).shares_storage_with(middle));
  }
  CHECK(a.unique());
  CHECK(a.flat_slice(6, 0).numel() == 0);
  CHECK_THROWS_WITH(a.flat_slice(4, 3), Catch::Contains("elements [4, 7) of a tensor of 6"));
  CHECK_THROWS_AS(a.flat_slice(-1, 1), std::out_of_range);
}

TEST_CASE("copies and reshapes share storage, clones do not", "[tensor]") {
  tensor a = tensor::from_values({2, 2}, {1, 2, 3, 4});
  CHECK(a.unique());
  tensor view = a.reshaped({4});
  CHECK(view.shares_storage_with(a));
  CHECK_FALSE(a.unique());
  view.data()[0] = 10;
  CHECK(a.data()[0] == 10);
  tensor deep = a.clone();
  CHECK_FALSE(deep.shares_storage_with(a));
  CHECK(deep.unique());
  deep.data()[1] = 20;
  CHECK(a.data()[1] == 2);
  {
    tensor copy = deep;
    CHECK_FALSE(deep.unique());
  }
  CHECK(deep.unique());
  REQUIRE_THROWS_WITH(a.reshaped({3}), Catch::Contains("[2, 2]") && Catch::Contains("[3]"));
}

TEST_CASE("from_values and copy_from check sizes", "[tensor]") {
  REQUIRE_THROWS_WITH(tensor::from_values({2, 2}, {1, 2, 3}),
                      Catch::Contains("3 values") && Catch::Contains("[2, 2]"));
  tensor a({2, 3}), b = tensor::from_values({3, 2}, {1, 2, 3, 4, 5, 6});
  a.copy_from(b); // same numel, different shape: allowed
  CHECK(a.data()[5] == 6);
  tensor c({5});
  REQUIRE_THROWS_WITH(c.copy_from(b), Catch::Contains("[3, 2]") && Catch::Contains("[5]"));
  a.fill(2.5f);
  CHECK(a.data()[4] == 2.5f);
}

TEST_CASE("a CPU tensor's host copy is itself, and a GPU the process lacks is refused") {
  tensor t = tensor::from_values({2}, {1.0f, 2.0f});
  CHECK(t.device() == device_kind::cpu);
  CHECK(t.device_index() == 0);
  CHECK(t.device_data() == t.data());
  const tensor host = t.to_host();
  CHECK(host.shares_storage_with(t)); // no copy
  CHECK_THROWS_AS(tensor::on_gpu({4}, -1), std::invalid_argument);
  if (query_devices().gpus.empty()) {
    // A build without CUDA, or no GPU or driver here: the error says so, nothing is made.
    CHECK_THROWS_AS(tensor::on_gpu({4}, 0), std::runtime_error);
    CHECK_THROWS_AS(t.to_gpu(0), std::runtime_error);
  }
}
