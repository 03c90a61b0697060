// pool2d_cuda against pool2d_op on the same inputs: forward and backward for max, average and
// global-average pooling at LeNet-, ResNet- and VGG-like layers, padding (which average
// pooling counts), ceil mode with windows past the input, and rectangular windows; and the
// errors of bad calls, including the one configuration the cuDNN op refuses.
//
// Inputs are distinct values (a shuffled ramp), so every window has a single maximum and both
// ops route max pooling's gradient to the same cell (ties may be broken differently).
// Tolerance: relative_error <= 1e-5. Max pooling copies values, so y is exact and dx differs
// only in the order overlapping windows add into a cell (a few ulps); average pooling sums at
// most 64 values (the global case) and divides, a few ulps of the result either way.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <troupe/kernels/pooling.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/pooling_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

namespace {

constexpr double tolerance = 1e-5;

// Distinct values in [-1, 1) in a random order, reproducible from `seed`.
tensor distinct_tensor(const shape_t& shape, std::uint32_t seed) {
  tensor t(shape);
  std::vector<std::int64_t> order(static_cast<std::size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  const double step = 2.0 / static_cast<double>(t.numel());
  for (std::size_t i = 0; i < order.size(); ++i)
    t.data()[i] = static_cast<float>(-1.0 + step * static_cast<double>(order[i]));
  return t;
}

struct pool_case {
  const char* name;
  shape_t x;
  pool2d_params params; // kind, kernel h/w, stride h/w, pad h/w, ceil mode
};

constexpr auto max_pooling = pool_kind::max;
constexpr auto average_pooling = pool_kind::average;

const pool_case cases[] = {
  {"LeNet max 2x2 s2", {4, 6, 24, 24}, {max_pooling, 2, 2, 2, 2, 0, 0, false}},
  {"VGG max 2x2 s2", {2, 64, 16, 16}, {max_pooling, 2, 2, 2, 2, 0, 0, false}},
  {"ResNet stem max 3x3 s2 p1", {4, 16, 32, 32}, {max_pooling, 3, 3, 2, 2, 1, 1, false}},
  {"average 2x2 s2", {4, 6, 24, 24}, {average_pooling, 2, 2, 2, 2, 0, 0, false}},
  {"average 3x3 s2 p1 (pad counts)", {4, 16, 32, 32}, {average_pooling, 3, 3, 2, 2, 1, 1, false}},
  {"average 3x3 s1 p1", {2, 8, 10, 10}, {average_pooling, 3, 3, 1, 1, 1, 1, false}},
  {"ResNet-20 global average", {4, 64, 8, 8}, {pool_kind::global_average}},
  {"max 3x3 s2, ceil past the input", {2, 8, 8, 8}, {max_pooling, 3, 3, 2, 2, 0, 0, true}},
  {"max 3x3 s2 p1, ceil past the pad", {2, 8, 8, 8}, {max_pooling, 3, 3, 2, 2, 1, 1, true}},
  {"average 3x3 s2, ceil past the input", {2, 8, 8, 8}, {average_pooling, 3, 3, 2, 2, 0, 0, true}},
  {"average 3x3 s1 p1, ceil rounds 0", {2, 8, 7, 7}, {average_pooling, 3, 3, 1, 1, 1, 1, true}},
  {"max 3x2 s2x1 p1x0", {2, 4, 9, 7}, {max_pooling, 3, 2, 2, 1, 1, 0, false}},
  {"average 3x2 s2x1 p1x0", {2, 4, 9, 7}, {average_pooling, 3, 2, 2, 1, 1, 0, false}},
};

void check_against_cpu(const pool_case& c) {
  INFO(c.name);
  pool2d_op cpu(c.params);
  cuda::pool2d_cuda gpu(c.params);
  const shape_t y_shape = cpu.output_shape(c.x);
  REQUIRE(gpu.output_shape(c.x) == y_shape); // sizes before contents
  const tensor x = distinct_tensor(c.x, 1), dy = random_tensor(y_shape, 2);
  tensor y(y_shape), dx(c.x);
  cpu.forward(x, y, true);
  cpu.backward(dy, dx);

  cuda::cuda_context context(0);
  const auto x_d = upload(x), dy_d = upload(dy);
  cuda::device_buffer y_d(y.bytes()), dx_d(dx.bytes());
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize()); // uploads land before the op's stream reads them
  gpu.forward(context, c.x, x_d.as<float>(), y_d.as<float>());
  gpu.backward(context, c.x, x_d.as<float>(), y_d.as<float>(), dy_d.as<float>(), dx_d.as<float>());
  context.synchronize();
  CHECK(relative_error(download(y_d, y_shape), y) <= tolerance);
  CHECK(relative_error(download(dx_d, c.x), dx) <= tolerance);
}

} // namespace

TEST_CASE("pool2d_cuda matches pool2d_op forward and backward", "[cuda]") {
  for (const auto& c : cases)
    check_against_cpu(c);
}

TEST_CASE("pool2d_cuda refuses average pooling whose ceil-mode window passes the padding",
          "[cuda]") {
  // pool2d_op divides such a window by its part inside the padded input; cuDNN counts either
  // all padding or none, so the CUDA op says so instead of differing at the border.
  const pool2d_params p{average_pooling, 3, 3, 2, 2, 1, 1, true};
  const shape_t x{2, 8, 8, 8};
  CHECK(pool2d_op(p).output_shape(x) == shape_t{2, 8, 5, 5});
  CHECK_THROWS_AS(cuda::pool2d_cuda(p).output_shape(x), std::invalid_argument);
  CHECK_THROWS_WITH(cuda::pool2d_cuda(p).output_shape(x), Catch::Contains("[2, 8, 8, 8]"));
}

TEST_CASE("pool2d_cuda rejects bad calls before queuing anything", "[cuda]") {
  cuda::cuda_context context(0);
  cuda::pool2d_cuda op({max_pooling, 3, 3, 2, 2, 1, 1, false});
  // Null buffers throughout: had anything reached cuDNN, it would fail with a cuda_error.
  CHECK_THROWS_AS(op.forward(context, {4, 16, 32}, nullptr, nullptr), std::invalid_argument);
  CHECK_THROWS_WITH(op.forward(context, {4, 16, 32}, nullptr, nullptr),
                    Catch::Contains("[4, 16, 32]"));
  CHECK_THROWS_AS(op.backward(context, {4, 16, 32}, nullptr, nullptr, nullptr, nullptr),
                  std::invalid_argument);
  cuda::pool2d_cuda unpadded({max_pooling, 3, 3, 2, 2, 0, 0, false});
  CHECK_THROWS_WITH(unpadded.backward(context, {4, 16, 2, 2}, nullptr, nullptr, nullptr, nullptr),
                    Catch::Contains("does not fit"));
  CHECK_THROWS_AS(op.forward(context, {0, 16, 8, 8}, nullptr, nullptr), std::invalid_argument);
  CHECK_THROWS_WITH(op.forward(context, {4, 16, 8, 8}, nullptr, nullptr),
                    Catch::Contains("x is null"));
  CHECK_THROWS_AS(cuda::pool2d_cuda({max_pooling, 2, 2, 0, 2, 0, 0, false}), std::invalid_argument);
  CHECK_THROWS_AS(cuda::pool2d_cuda({max_pooling, 2, 2, 2, 2, 2, 0, false}), std::invalid_argument);
  context.synchronize();
}
