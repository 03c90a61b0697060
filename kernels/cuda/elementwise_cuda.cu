// Element-wise and shape ops as grid-stride loops, one output element per thread iteration:
// each op is a single streaming pass, bound by memory bandwidth, so the kernels stay plain
// (no shared memory, no vector loads that would demand 16-byte aligned views).
//
// The flat ops use a 1-D grid over the elements. Concatenation and the shortcut use a 2-D
// grid: y over samples (or channel planes), x over the elements inside one, so the only
// division per element is the shortcut's split of a plane index into row and column.
// Concatenation launches once per input; the models we run concatenate two to four.
#include "kernels/cuda/elementwise_cuda.hpp"
#include "kernels/cuda/op_checks.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <troupe/kernels/elementwise.hpp>

namespace troupe::cuda {

namespace {

// A grid of `outer` rows (capped at the 65535 a grid's y allows) by enough blocks to cover
// `inner` elements, the total capped as grid_for caps it: both loops stride past the cap.
dim3 grid_2d(std::int64_t outer, std::int64_t inner) {
  const auto rows = static_cast<unsigned>(std::min<std::int64_t>(outer, 65535));
  const unsigned columns_cap = std::max(1u, 65535u * 8 / rows);
  return dim3(std::min(grid_for(static_cast<std::size_t>(inner)), columns_cap), rows);
}

__global__ void relu_forward_kernel(const float* x, float* y, std::int64_t n) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v; // std::max(v, 0.0f) exactly: keeps -0.0 and NaN as they are
  }
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, std::int64_t n) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void add_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = a[i] + b[i];
}

// Sample s's channel block is part[s * block, (s + 1) * block) and
// whole[s * whole_sample + offset, ... + block). `gather` copies part -> whole.
__global__ void copy_channel_block_kernel(const float* from, float* to, std::int64_t samples,
                                          std::int64_t block, std::int64_t whole_sample,
                                          std::int64_t offset, bool gather) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t s = blockIdx.y; s < samples; s += gridDim.y)
    for (std::int64_t r = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; r < block;
         r += step) {
      const std::int64_t part = s * block + r, whole = s * whole_sample + offset + r;
      to[gather ? whole : part] = from[gather ? part : whole];
    }
}

// Both sides of the option-A shortcut: x (small) [batch, channels, height, width], y (big)
// [batch, out_channels, out_height, out_width]; small channel c is big channel c + front.
struct shortcut_geometry {
  std::int64_t batch, channels, height, width;
  std::int64_t out_channels, out_height, out_width;
  std::int64_t front, stride;
};

// One y plane per grid row: a copied channel reads x with the stride, a padded one is zero.
__global__ void shortcut_pad_forward_kernel(const float* x, float* y, shortcut_geometry g) {
  const std::int64_t planes = g.batch * g.out_channels, plane_size = g.out_height * g.out_width;
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
    const std::int64_t n = p / g.out_channels, c = p - n * g.out_channels - g.front;
    const float* src =
      c >= 0 && c < g.channels ? x + (n * g.channels + c) * g.height * g.width : nullptr;
    float* dst = y + p * plane_size;
    for (std::int64_t r = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; r < plane_size;
         r += step) {
      const std::int64_t h = r / g.out_width, w = r - h * g.out_width;
      dst[r] = src != nullptr ? src[h * g.stride * g.width + w * g.stride] : 0.0f;
    }
  }
}

// One dx plane per grid row (every dx element written once, so no zero-fill pass first):
// positions on the stride's lattice take dy's value, the others zero. Channel c + front is
// always inside dy, since front = (out_channels - channels) / 2.
__global__ void shortcut_pad_backward_kernel(const float* dy, float* dx, shortcut_geometry g) {
  const std::int64_t planes = g.batch * g.channels, plane_size = g.height * g.width;
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
    const std::int64_t n = p / g.channels, c = p - n * g.channels;
    const float* src = dy + (n * g.out_channels + c + g.front) * g.out_height * g.out_width;
    float* dst = dx + p * plane_size;
    for (std::int64_t r = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; r < plane_size;
         r += step) {
      const std::int64_t h = r / g.width, w = r - h * g.width;
      const bool sampled = h % g.stride == 0 && w % g.stride == 0;
      dst[r] = sampled ? src[(h / g.stride) * g.out_width + w / g.stride] : 0.0f;
    }
  }
}

void launch_add(const char* op, cuda_context& context, const float* a, const float* b, float* y,
                std::int64_t n) {
  require_count(op, n);
  require_memory(op, "a", a, n);
  require_memory(op, "b", b, n);
  require_memory(op, "y", y, n);
  if (n == 0)
    return;
  add_kernel<<<grid_for(n), block_threads, 0, context.stream()>>>(a, b, y, n);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

// Moves every part's channel block between the parts and the whole (see the kernel).
void copy_channel_blocks(cuda_context& context, float* whole, const shape_t& whole_shape,
                         const std::vector<float*>& parts, const std::vector<shape_t>& part_shapes,
                         bool gather) {
  const std::int64_t samples = whole_shape[0], whole_numel = shape_numel(whole_shape);
  if (whole_numel == 0)
    return;
  const std::int64_t whole_sample = whole_numel / samples;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::int64_t block = shape_numel(part_shapes[i]) / samples;
    if (block > 0) {
      copy_channel_block_kernel<<<grid_2d(samples, block), block_threads, 0, context.stream()>>>(
        gather ? parts[i] : whole, gather ? whole : parts[i], samples, block, whole_sample, offset,
        gather);
      TROUPE_CUDA_CHECK(cudaGetLastError());
    }
    offset += block;
  }
}

void require_rank4(const char* op, const char* name, const shape_t& shape) {
  if (shape.size() != 4)
    throw std::invalid_argument(std::string(op) + ": " + name + " " + shape_string(shape)
                                + " must be [N, C, H, W]");
}

shortcut_geometry geometry(const shape_t& small, const shape_t& big, std::int64_t stride) {
  return {small[0], small[1], small[2], small[3], big[1], big[2], big[3], (big[1] - small[1]) / 2,
          stride};
}

} // namespace

void relu_forward(cuda_context& context, const float* x, float* y, std::int64_t n) {
  require_count("relu_forward", n);
  require_memory("relu_forward", "x", x, n);
  require_memory("relu_forward", "y", y, n);
  if (n == 0)
    return;
  relu_forward_kernel<<<grid_for(n), block_threads, 0, context.stream()>>>(x, y, n);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void relu_backward(cuda_context& context, const float* y, const float* dy, float* dx,
                   std::int64_t n) {
  require_count("relu_backward", n);
  require_memory("relu_backward", "y", y, n);
  require_memory("relu_backward", "dy", dy, n);
  require_memory("relu_backward", "dx", dx, n);
  if (n == 0)
    return;
  relu_backward_kernel<<<grid_for(n), block_threads, 0, context.stream()>>>(y, dy, dx, n);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void add_forward(cuda_context& context, const float* a, const float* b, float* y, std::int64_t n) {
  launch_add("add_forward", context, a, b, y, n);
}

void accumulate(cuda_context& context, const float* x, float* y, std::int64_t n) {
  require_memory("accumulate", "x", x, n); // named here: launch_add calls them a, b, y
  require_memory("accumulate", "y", y, n);
  launch_add("accumulate", context, y, x, y, n); // y + x, as the CPU's y += x
}

void concat_channels_forward(cuda_context& context, const std::vector<const float*>& inputs,
                             const std::vector<shape_t>& input_shapes, float* y,
                             const shape_t& y_shape) {
  if (inputs.size() != input_shapes.size())
    throw std::invalid_argument("concat_channels_forward: " + std::to_string(inputs.size())
                                + " inputs but " + std::to_string(input_shapes.size()) + " shapes");
  const shape_t out = concat_channels_shape(input_shapes);
  if (y_shape != out)
    throw std::invalid_argument("concat_channels_forward: y has shape " + shape_string(y_shape)
                                + ", expected " + shape_string(out));
  for (std::size_t i = 0; i < inputs.size(); ++i)
    require_memory("concat_channels_forward", ("input " + std::to_string(i)).c_str(), inputs[i],
                   shape_numel(input_shapes[i]));
  require_memory("concat_channels_forward", "y", y, shape_numel(out));
  // The parts are only read when gathering; the CPU op shares the copy loop the same way.
  std::vector<float*> parts;
  for (const float* input : inputs)
    parts.push_back(const_cast<float*>(input));
  copy_channel_blocks(context, y, out, parts, input_shapes, true);
}

void concat_channels_backward(cuda_context& context, const float* dy, const shape_t& dy_shape,
                              const std::vector<float*>& dinputs,
                              const std::vector<shape_t>& dinput_shapes) {
  if (dinputs.size() != dinput_shapes.size())
    throw std::invalid_argument("concat_channels_backward: " + std::to_string(dinputs.size())
                                + " gradients but " + std::to_string(dinput_shapes.size())
                                + " shapes");
  const shape_t out = concat_channels_shape(dinput_shapes);
  if (dy_shape != out)
    throw std::invalid_argument("concat_channels_backward: dy has shape " + shape_string(dy_shape)
                                + ", expected " + shape_string(out));
  require_memory("concat_channels_backward", "dy", dy, shape_numel(out));
  for (std::size_t i = 0; i < dinputs.size(); ++i)
    require_memory("concat_channels_backward", ("gradient " + std::to_string(i)).c_str(),
                   dinputs[i], shape_numel(dinput_shapes[i]));
  // dy is only read when scattering.
  copy_channel_blocks(context, const_cast<float*>(dy), out, dinputs, dinput_shapes, false);
}

void shortcut_pad_forward(cuda_context& context, const float* x, const shape_t& x_shape,
                          std::int64_t stride, float* y, const shape_t& y_shape) {
  require_rank4("shortcut_pad_forward", "x", x_shape);
  const shape_t want =
    shortcut_pad_shape(x_shape, y_shape.size() == 4 ? y_shape[1] : x_shape[1], stride);
  if (y_shape != want)
    throw std::invalid_argument("shortcut_pad_forward: y has shape " + shape_string(y_shape)
                                + ", expected " + shape_string(want) + " for x "
                                + shape_string(x_shape) + " and stride " + std::to_string(stride));
  require_memory("shortcut_pad_forward", "x", x, shape_numel(x_shape));
  require_memory("shortcut_pad_forward", "y", y, shape_numel(want));
  const shortcut_geometry g = geometry(x_shape, want, stride);
  if (shape_numel(want) == 0)
    return;
  shortcut_pad_forward_kernel<<<grid_2d(g.batch * g.out_channels, g.out_height * g.out_width),
                                block_threads, 0, context.stream()>>>(x, y, g);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void shortcut_pad_backward(cuda_context& context, const float* dy, const shape_t& dy_shape,
                           std::int64_t stride, float* dx, const shape_t& dx_shape) {
  require_rank4("shortcut_pad_backward", "dx", dx_shape);
  const shape_t want =
    shortcut_pad_shape(dx_shape, dy_shape.size() == 4 ? dy_shape[1] : dx_shape[1], stride);
  if (dy_shape != want)
    throw std::invalid_argument("shortcut_pad_backward: dy has shape " + shape_string(dy_shape)
                                + ", expected " + shape_string(want) + " for dx "
                                + shape_string(dx_shape) + " and stride " + std::to_string(stride));
  require_memory("shortcut_pad_backward", "dy", dy, shape_numel(want));
  require_memory("shortcut_pad_backward", "dx", dx, shape_numel(dx_shape));
  const shortcut_geometry g = geometry(dx_shape, want, stride);
  if (shape_numel(dx_shape) == 0)
    return;
  shortcut_pad_backward_kernel<<<grid_2d(g.batch * g.channels, g.height * g.width), block_threads,
                                 0, context.stream()>>>(dy, dx, g);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

} // namespace troupe::cuda
