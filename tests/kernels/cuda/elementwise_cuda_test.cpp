// elementwise_cuda against the CPU ops of elementwise.hpp on the same random inputs: ReLU,
// add and accumulate at flat sizes around the block size (1, 255, 256, 257, ~1M) and one past
// the grid cap, so the grid-stride loop wraps; concatenation and the option-A shortcut at
// ResNet shapes, odd sizes, and batches or planes beyond the 65535 a grid's y covers; in-place
// and aliased calls; and argument errors, which must throw before anything is queued.
//
// Tolerance: none, the results must be identical (relative_error == 0). ReLU is a comparison,
// add and accumulate one float addition of the same operands, concatenation and the shortcut
// copies and zeros.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <troupe/kernels/elementwise.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/elementwise_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

namespace {

const std::int64_t flat_sizes[] = {1, 255, 256, 257, 1000003};

float* device_floats(const cuda::device_buffer& buffer) {
  return buffer.as<float>();
}

} // namespace

TEST_CASE("cuda relu forward and backward equal the CPU op", "[cuda]") {
  cuda::cuda_context context(0);
  for (const std::int64_t n : flat_sizes) {
    INFO("n = " << n);
    const shape_t s{n};
    tensor x = random_tensor(s, 1), dy = random_tensor(s, 2), y(s), dx(s);
    x.data()[n - 1] = -0.0f; // max(-0, 0) is -0 on the CPU; the GPU must agree
    relu_forward(x, y);
    relu_backward(y, dy, dx);

    auto gx = upload(x), gy = upload(tensor(s)), gdy = upload(dy), gdx = upload(tensor(s));
    cuda::relu_forward(context, device_floats(gx), device_floats(gy), n);
    cuda::relu_backward(context, device_floats(gy), device_floats(gdy), device_floats(gdx), n);
    const tensor got_y = download(gy, s);
    CHECK(relative_error(got_y, y) == 0);
    CHECK(std::signbit(got_y.data()[n - 1]));
    CHECK(relative_error(download(gdx, s), dx) == 0);

    // In place, as layers call them.
    cuda::relu_forward(context, device_floats(gx), device_floats(gx), n);
    CHECK(relative_error(download(gx, s), y) == 0);
    cuda::relu_backward(context, device_floats(gy), device_floats(gdy), device_floats(gdy), n);
    CHECK(relative_error(download(gdy, s), dx) == 0);
  }
}

TEST_CASE("cuda relu covers a tensor larger than one grid", "[cuda][large]") {
  // 65535 * 8 blocks of 256 threads is the capped grid: every thread loops once more.
  const std::int64_t n = std::int64_t{65535} * 8 * 256 + 12345;
  const shape_t s{n};
  cuda::cuda_context context(0);
  tensor x = random_tensor(s, 3), y(s);
  relu_forward(x, y);
  auto gx = upload(x);
  cuda::device_buffer gy(static_cast<std::size_t>(n) * sizeof(float));
  cuda::relu_forward(context, device_floats(gx), device_floats(gy), n);
  CHECK(relative_error(download(gy, s), y) == 0);
}

TEST_CASE("cuda add and accumulate equal the CPU ops", "[cuda]") {
  cuda::cuda_context context(0);
  for (const std::int64_t n : flat_sizes) {
    INFO("n = " << n);
    const shape_t s{n};
    tensor a = random_tensor(s, 1), b = random_tensor(s, 2), y(s);
    add_forward(a, b, y);
    tensor accumulated = a.clone();
    accumulate(b, accumulated);

    auto ga = upload(a), gb = upload(b), gy = upload(tensor(s));
    cuda::add_forward(context, device_floats(ga), device_floats(gb), device_floats(gy), n);
    CHECK(relative_error(download(gy, s), y) == 0);
    cuda::accumulate(context, device_floats(gb), device_floats(ga), n); // a += b
    CHECK(relative_error(download(ga, s), accumulated) == 0);
    // y aliasing an operand: b = (a + b) + b, against the CPU doing the same.
    add_forward(accumulated, b, b);
    cuda::add_forward(context, device_floats(ga), device_floats(gb), device_floats(gb), n);
    CHECK(relative_error(download(gb, s), b) == 0);
  }
}

TEST_CASE("cuda concat_channels forward and backward equal the CPU op", "[cuda]") {
  const std::vector<std::vector<shape_t>> cases = {
    {{4, 3, 5, 7}, {4, 5, 5, 7}},                  // odd planes
    {{2, 64, 8, 8}, {2, 64, 8, 8}, {2, 32, 8, 8}}, // Inception-like, three inputs
    {{1, 1}, {1, 4}, {1, 2}},                      // [N, C], a batch of one
    {{70000, 2, 1, 1}, {70000, 3, 1, 1}},          // more samples than a grid's y
  };
  cuda::cuda_context context(0);
  std::uint32_t seed = 1;
  for (const auto& shapes : cases) {
    const shape_t out = concat_channels_shape(shapes);
    INFO("y " << shape_string(out));
    std::vector<tensor> inputs;
    std::vector<cuda::device_buffer> device_inputs;
    std::vector<const tensor*> input_pointers;
    std::vector<const float*> device_pointers;
    for (const shape_t& s : shapes) {
      inputs.push_back(random_tensor(s, seed++));
      device_inputs.push_back(upload(inputs.back()));
      device_pointers.push_back(device_floats(device_inputs.back()));
    }
    for (const tensor& t : inputs)
      input_pointers.push_back(&t);
    tensor y(out);
    concat_channels_forward(input_pointers, y);
    cuda::device_buffer gy = upload(tensor(out));
    cuda::concat_channels_forward(context, device_pointers, shapes, device_floats(gy), out);
    CHECK(relative_error(download(gy, out), y) == 0);

    // Backward: split a fresh dy into fresh gradients.
    const tensor dy = random_tensor(out, seed++);
    std::vector<tensor> dinputs;
    std::vector<tensor*> dinput_pointers;
    std::vector<cuda::device_buffer> device_dinputs;
    std::vector<float*> device_dpointers;
    for (const shape_t& s : shapes) {
      dinputs.emplace_back(s);
      device_dinputs.push_back(upload(tensor(s)));
      device_dpointers.push_back(device_floats(device_dinputs.back()));
    }
    for (tensor& t : dinputs)
      dinput_pointers.push_back(&t);
    concat_channels_backward(dy, dinput_pointers);
    cuda::device_buffer gdy = upload(dy);
    cuda::concat_channels_backward(context, device_floats(gdy), out, device_dpointers, shapes);
    for (std::size_t i = 0; i < shapes.size(); ++i)
      CHECK(relative_error(download(device_dinputs[i], shapes[i]), dinputs[i]) == 0);
  }
}

TEST_CASE("cuda shortcut_pad forward and backward equal the CPU op", "[cuda]") {
  struct pad_case {
    shape_t x;
    std::int64_t out_channels, stride;
  };
  const pad_case cases[] = {
    {{4, 16, 32, 32}, 32, 2},   // ResNet-20 stage change
    {{4, 32, 16, 16}, 64, 2},   // ResNet-20 stage 3 (the model test missed upstream of it)
    {{2, 3, 7, 5}, 8, 2},       // odd extents, uneven padding (front 2, back 3)
    {{3, 4, 5, 5}, 4, 1},       // identity
    {{2, 2, 7, 8}, 6, 3},       // stride 3
    {{1, 1, 1, 1}, 1, 1},       // one element
    {{1100, 64, 1, 1}, 128, 1}, // 140800 output planes: more than a grid's y
  };
  cuda::cuda_context context(0);
  std::uint32_t seed = 1;
  for (const auto& c : cases) {
    const shape_t out = shortcut_pad_shape(c.x, c.out_channels, c.stride);
    INFO("x " << shape_string(c.x) << " to " << shape_string(out) << ", stride " << c.stride);
    const tensor x = random_tensor(c.x, seed++), dy = random_tensor(out, seed++);
    tensor y(out), dx(c.x);
    shortcut_pad_forward(x, c.stride, y);
    shortcut_pad_backward(dy, c.stride, dx);

    // Outputs start as garbage (not zero), so the padding must be written, not assumed.
    auto gx = upload(x), gy = upload(random_tensor(out, seed++)), gdy = upload(dy),
         gdx = upload(random_tensor(c.x, seed++));
    cuda::shortcut_pad_forward(context, device_floats(gx), c.x, c.stride, device_floats(gy), out);
    CHECK(relative_error(download(gy, out), y) == 0);
    cuda::shortcut_pad_backward(context, device_floats(gdy), out, c.stride, device_floats(gdx),
                                c.x);
    CHECK(relative_error(download(gdx, c.x), dx) == 0);
  }
}

TEST_CASE("cuda element-wise argument errors throw before anything is queued", "[cuda]") {
  cuda::cuda_context context(0);
  const shape_t s{2, 3, 4, 4};
  const tensor sentinel = random_tensor(s, 9);
  auto x = upload(random_tensor(s, 1)), y = upload(sentinel);
  float* px = device_floats(x);
  float* py = device_floats(y);
  const std::int64_t n = shape_numel(s);

  CHECK_THROWS_AS(cuda::relu_forward(context, px, py, -1), std::invalid_argument);
  CHECK_THROWS_WITH(cuda::relu_forward(context, nullptr, py, n),
                    Catch::Contains("relu_forward: x is null for 96 elements"));
  CHECK_THROWS_AS(cuda::relu_backward(context, px, nullptr, py, n), std::invalid_argument);
  CHECK_THROWS_AS(cuda::add_forward(context, px, nullptr, py, n), std::invalid_argument);
  CHECK_THROWS_WITH(cuda::accumulate(context, px, py, -5), Catch::Contains("accumulate"));
  // Shapes: y too small for the concatenation, inputs that differ in H, pointers and shapes
  // that do not pair up.
  CHECK_THROWS_WITH(cuda::concat_channels_forward(context, {px, px}, {s, s}, py, s),
                    Catch::Contains("y has shape [2, 3, 4, 4], expected [2, 6, 4, 4]"));
  CHECK_THROWS_AS(
    cuda::concat_channels_forward(context, {px, px}, {s, {2, 3, 5, 4}}, py, {2, 6, 4, 4}),
    std::invalid_argument);
  CHECK_THROWS_AS(cuda::concat_channels_forward(context, {px}, {s, s}, py, {2, 6, 4, 4}),
                  std::invalid_argument);
  CHECK_THROWS_AS(
    cuda::concat_channels_backward(context, px, s, {py, nullptr}, {{2, 1, 4, 4}, {2, 2, 4, 4}}),
    std::invalid_argument);
  // The shortcut: stride 0, fewer output channels than input ones, a y of the wrong size, a
  // dx that is not NCHW.
  CHECK_THROWS_AS(cuda::shortcut_pad_forward(context, px, s, 0, py, s), std::invalid_argument);
  CHECK_THROWS_AS(cuda::shortcut_pad_forward(context, px, s, 1, py, {2, 2, 4, 4}),
                  std::invalid_argument);
  CHECK_THROWS_WITH(cuda::shortcut_pad_forward(context, px, s, 2, py, s),
                    Catch::Contains("expected [2, 3, 2, 2]"));
  CHECK_THROWS_AS(cuda::shortcut_pad_backward(context, px, s, 1, py, {96}), std::invalid_argument);

  CHECK(relative_error(download(y, s), sentinel) == 0); // nothing was written
}
