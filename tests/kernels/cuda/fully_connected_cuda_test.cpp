// fully_connected_cuda against fully_connected_op on the same random inputs: forward, and
// backward with and without dx and db, at MLP, LeNet and VGG classifier sizes (a conv output
// of rank 4 flattened included, and a batch of one); the bias's vector of ones growing with the
// batch; and the errors of bad calls.
//
// Tolerance: relative_error <= 1e-4. y sums IN products (up to 4096 here), dx sums OUT (up to
// 120), dw and db sum N (up to 8), of values in [-1, 1); float32 in any order (cuBLAS may
// split the reduction) loses ~eps*sqrt(IN) ~ 4e-6 relative to the result's scale at worst
// here. Any transposition mistake shows up as errors of order 1 (or as a cuBLAS error).
#include <catch2/catch.hpp>

#include <stdexcept>

#include <troupe/kernels/fully_connected.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/fully_connected_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

namespace {

constexpr double tolerance = 1e-4;

struct fc_case {
  const char* name;
  shape_t x, w;
};

const fc_case cases[] = {
  {"MNIST MLP 784 -> 100", {8, 784}, {100, 784}},
  {"MLP 100 -> 10", {8, 100}, {10, 100}},
  {"LeNet fc1 from a conv output [4, 16, 5, 5] -> 120", {4, 16, 5, 5}, {120, 400}},
  {"VGG classifier 4096 -> 10", {4, 4096}, {10, 4096}},
  {"batch of one, 50 -> 20", {1, 50}, {20, 50}},
};

void check_against_cpu(const fc_case& c, bool with_bias_dx_db, cuda::fully_connected_cuda& gpu,
                       std::uint32_t seed = 1) {
  INFO(c.name << (with_bias_dx_db ? ", with bias, dx and db" : ", without bias, dx and db"));
  fully_connected_op cpu;
  const shape_t y_shape = cpu.output_shape(c.x, c.w);
  REQUIRE(gpu.output_shape(c.x, c.w) == y_shape); // sizes before contents
  const shape_t b_shape{c.w[0]};
  const tensor x = random_tensor(c.x, seed), w = random_tensor(c.w, seed + 1);
  const tensor b = random_tensor(b_shape, seed + 2), dy = random_tensor(y_shape, seed + 3);
  tensor y(y_shape), dx(c.x), dw(c.w), db(b_shape);
  cpu.forward(x, w, with_bias_dx_db ? &b : nullptr, y);
  cpu.backward(x, w, dy, with_bias_dx_db ? &dx : nullptr, dw, with_bias_dx_db ? &db : nullptr);

  cuda::cuda_context context(0);
  const auto x_d = upload(x), w_d = upload(w), b_d = upload(b), dy_d = upload(dy);
  cuda::device_buffer y_d(y.bytes()), dx_d(dx.bytes()), dw_d(dw.bytes()), db_d(db.bytes());
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize()); // uploads land before the op's stream reads them
  gpu.forward(context, c.x, c.w, x_d.as<float>(), w_d.as<float>(),
              with_bias_dx_db ? b_d.as<float>() : nullptr, y_d.as<float>());
  gpu.backward(context, c.x, c.w, x_d.as<float>(), w_d.as<float>(), dy_d.as<float>(),
               with_bias_dx_db ? dx_d.as<float>() : nullptr, dw_d.as<float>(),
               with_bias_dx_db ? db_d.as<float>() : nullptr);
  context.synchronize();
  CHECK(relative_error(download(y_d, y_shape), y) <= tolerance);
  CHECK(relative_error(download(dw_d, c.w), dw) <= tolerance);
  if (with_bias_dx_db) {
    CHECK(relative_error(download(dx_d, c.x), dx) <= tolerance);
    CHECK(relative_error(download(db_d, b_shape), db) <= tolerance);
  }
}

} // namespace

TEST_CASE("fully_connected_cuda matches fully_connected_op forward and backward", "[cuda]") {
  for (const auto& c : cases) {
    cuda::fully_connected_cuda gpu;
    check_against_cpu(c, true, gpu);
    check_against_cpu(c, false, gpu);
  }
}

TEST_CASE("fully_connected_cuda grows its vector of ones with the batch", "[cuda]") {
  // One op object, batch sizes up and down: the bias and db must cover every row each time.
  cuda::fully_connected_cuda gpu;
  check_against_cpu({"batch 4", {4, 784}, {100, 784}}, true, gpu, 10);
  check_against_cpu({"batch 16", {16, 784}, {100, 784}}, true, gpu, 20);
  check_against_cpu({"batch 3", {3, 784}, {100, 784}}, true, gpu, 30);
}

TEST_CASE("fully_connected_cuda rejects bad calls before queuing anything", "[cuda]") {
  cuda::cuda_context context(0);
  cuda::fully_connected_cuda op;
  // Null buffers throughout: had anything reached cuBLAS, it would fail with a cuda_error.
  CHECK_THROWS_AS(op.forward(context, {8, 784}, {100, 785}, nullptr, nullptr, nullptr, nullptr),
                  std::invalid_argument);
  CHECK_THROWS_WITH(op.forward(context, {8, 784}, {100, 785}, nullptr, nullptr, nullptr, nullptr),
                    Catch::Contains("[8, 784]") && Catch::Contains("[100, 785]"));
  CHECK_THROWS_AS(op.backward(context, {8, 784}, {100, 785}, nullptr, nullptr, nullptr, nullptr,
                              nullptr, nullptr),
                  std::invalid_argument);
  CHECK_THROWS_AS(op.output_shape({784}, {100, 784}), std::invalid_argument);
  CHECK_THROWS_AS(op.output_shape({8, 784}, {100, 784, 1}), std::invalid_argument);
  CHECK_THROWS_WITH(op.forward(context, {8, 784}, {100, 784}, nullptr, nullptr, nullptr, nullptr),
                    Catch::Contains("x is null"));
  context.synchronize();
}
