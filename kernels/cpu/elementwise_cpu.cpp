// Element-wise and shape ops as plain loops: each is one streaming pass over memory, which a
// vectorized loop already runs at memory speed, so oneDNN's eltwise would only add a primitive
// and its call overhead. Loops below `elementwise_grain` elements run on the calling thread.
#include <troupe/kernels/elementwise.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu/parallel.hpp"

namespace troupe {

namespace {

using cpu::elementwise_grain;
using cpu::parallel_range;

void require_same(const char* op, const char* a_name, const tensor& a, const char* b_name,
                  const tensor& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(std::string(op) + ": " + a_name + " " + shape_string(a.shape())
                                + " and " + b_name + " " + shape_string(b.shape())
                                + " must have the same shape");
}

void require_rank4(const char* op, const char* name, const shape_t& s) {
  if (s.size() != 4)
    throw std::invalid_argument(std::string(op) + ": " + name + " " + shape_string(s)
                                + " must be [N, C, H, W]");
}

// Extent of x[:, :, ::stride] along one axis.
std::int64_t subsampled(std::int64_t extent, std::int64_t stride) {
  return extent == 0 ? 0 : (extent - 1) / stride + 1;
}

} // namespace

void relu_forward(const tensor& x, tensor& y) {
  require_same("relu_forward", "x", x, "y", y);
  const float* in = x.data();
  float* out = y.data();
  parallel_range(x.numel(), elementwise_grain, [=](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      out[i] = std::max(in[i], 0.0f);
  });
}

void relu_backward(const tensor& y, const tensor& dy, tensor& dx) {
  require_same("relu_backward", "y", y, "dy", dy);
  require_same("relu_backward", "dy", dy, "dx", dx);
  const float* out = y.data();
  const float* grad = dy.data();
  float* result = dx.data();
  parallel_range(y.numel(), elementwise_grain, [=](std::int64_t b, std::int64_t e) {
    // Both operands are loaded unconditionally so the select vectorizes (no branch per element).
    for (std::int64_t i = b; i < e; ++i) {
      float g = grad[i];
      result[i] = out[i] > 0.0f ? g : 0.0f;
    }
  });
}

void add_forward(const tensor& a, const tensor& b, tensor& y) {
  require_same("add_forward", "a", a, "b", b);
  require_same("add_forward", "a", a, "y", y);
  const float* pa = a.data();
  const float* pb = b.data();
  float* out = y.data();
  parallel_range(a.numel(), elementwise_grain, [=](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i)
      out[i] = pa[i] + pb[i];
  });
}

void accumulate(const tensor& x, tensor& y) {
  require_same("accumulate", "x", x, "y", y);
  const float* in = x.data();
  float* out = y.data();
  parallel_range(x.numel(), elementwise_grain, [=](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      out[i] += in[i];
  });
}

shape_t concat_channels_shape(const std::vector<shape_t>& inputs) {
  if (inputs.empty())
    throw std::invalid_argument("concat_channels: no inputs");
  shape_t out = inputs.front();
  if (out.size() != 2 && out.size() != 4)
    throw std::invalid_argument("concat_channels: input " + shape_string(out)
                                + " must be [N, C, H, W] or [N, C]");
  // Every input must equal the first one with its channel count blanked out.
  shape_t pattern = out;
  pattern[1] = 0;
  out[1] = 0;
  for (const auto& s : inputs) {
    shape_t rest = s;
    if (rest.size() == pattern.size())
      rest[1] = 0;
    if (rest != pattern) {
      std::string all;
      for (const auto& t : inputs)
        all += (all.empty() ? "" : ", ") + shape_string(t);
      throw std::invalid_argument("concat_channels: inputs " + all
                                  + " differ in rank or in a dimension other than channels");
    }
    out[1] += s[1];
  }
  return out;
}

namespace {

// Moves each sample's channel block between the parts and the whole: per sample n, part i
// occupies channels [offset_i, offset_i + C_i) of the whole. `gather` copies parts -> whole.
void copy_channel_blocks(float* whole, const shape_t& whole_shape, const std::vector<float*>& parts,
                         const std::vector<shape_t>& part_shapes, bool gather) {
  std::int64_t n = whole_shape[0];
  std::int64_t sample = shape_numel(whole_shape) / n;
  parallel_range(n,
                 std::max<std::int64_t>(1, elementwise_grain / std::max<std::int64_t>(1, sample)),
                 [&](std::int64_t b, std::int64_t e) {
                   for (std::int64_t s = b; s < e; ++s) {
                     float* row = whole + s * sample;
                     for (std::size_t i = 0; i < parts.size(); ++i) {
                       std::int64_t block = shape_numel(part_shapes[i]) / n;
                       float* part = parts[i] + s * block;
                       std::size_t bytes = static_cast<std::size_t>(block) * sizeof(float);
                       if (gather)
                         std::memcpy(row, part, bytes);
                       else
                         std::memcpy(part, row, bytes);
                       row += block;
                     }
                   }
                 });
}

} // namespace

void concat_channels_forward(const std::vector<const tensor*>& inputs, tensor& y) {
  std::vector<shape_t> shapes;
  std::vector<float*> parts;
  for (const tensor* t : inputs) {
    shapes.push_back(t->shape());
    parts.push_back(const_cast<float*>(t->data()));
  }
  shape_t out = concat_channels_shape(shapes);
  if (y.shape() != out)
    throw std::invalid_argument("concat_channels_forward: y has shape " + shape_string(y.shape())
                                + ", expected " + shape_string(out));
  copy_channel_blocks(y.data(), out, parts, shapes, true);
}

void concat_channels_backward(const tensor& dy, const std::vector<tensor*>& dinputs) {
  std::vector<shape_t> shapes;
  std::vector<float*> parts;
  for (tensor* t : dinputs) {
    shapes.push_back(t->shape());
    parts.push_back(t->data());
  }
  shape_t out = concat_channels_shape(shapes);
  if (dy.shape() != out)
    throw std::invalid_argument("concat_channels_backward: dy has shape " + shape_string(dy.shape())
                                + ", expected " + shape_string(out));
  copy_channel_blocks(const_cast<float*>(dy.data()), out, parts, shapes, false);
}

tensor flatten(const tensor& x) {
  if (x.rank() == 0)
    throw std::invalid_argument("flatten: input " + shape_string(x.shape()) + " has no batch axis");
  std::int64_t n = x.dim(0);
  return x.reshaped({n, n == 0 ? 0 : x.numel() / n});
}

shape_t shortcut_pad_shape(const shape_t& x, std::int64_t out_channels, std::int64_t stride) {
  require_rank4("shortcut_pad", "x", x);
  if (stride < 1 || out_channels < x[1])
    throw std::invalid_argument("shortcut_pad: x " + shape_string(x) + " to "
                                + std::to_string(out_channels) + " channels with stride "
                                + std::to_string(stride)
                                + ": need stride >= 1 and out_channels >= C");
  return {x[0], out_channels, subsampled(x[2], stride), subsampled(x[3], stride)};
}

namespace {

// Walks the (n, c) planes of the big side (y in forward, dy in backward). `copy(big, small,
// rows, cols)` handles a plane that has a source channel; other planes are zero-filled (they
// only exist on the big side in forward).
template <class Plane>
void for_each_shortcut_plane(const shape_t& small, const shape_t& big, const Plane& plane) {
  std::int64_t planes = big[0] * big[1];
  std::int64_t plane_size = big[2] * big[3];
  parallel_range(
    planes, std::max<std::int64_t>(1, elementwise_grain / std::max<std::int64_t>(1, plane_size)),
    [&](std::int64_t b, std::int64_t e) {
      std::int64_t front = (big[1] - small[1]) / 2;
      for (std::int64_t p = b; p < e; ++p) {
        std::int64_t n = p / big[1], c = p % big[1] - front;
        plane(p, c >= 0 && c < small[1] ? n * small[1] + c : -1);
      }
    });
}

} // namespace

void shortcut_pad_forward(const tensor& x, std::int64_t stride, tensor& y) {
  shape_t want = shortcut_pad_shape(x.shape(), y.rank() == 4 ? y.dim(1) : x.dim(1), stride);
  if (y.shape() != want)
    throw std::invalid_argument("shortcut_pad_forward: y has shape " + shape_string(y.shape())
                                + ", expected " + shape_string(want) + " for x "
                                + shape_string(x.shape()) + " and stride "
                                + std::to_string(stride));
  const auto& xs = x.shape();
  const float* in = x.data();
  float* out = y.data();
  std::int64_t rows = want[2], cols = want[3];
  for_each_shortcut_plane(xs, want, [&](std::int64_t p, std::int64_t src_plane) {
    float* dst = out + p * rows * cols;
    if (src_plane < 0) {
      std::fill_n(dst, rows * cols, 0.0f);
      return;
    }
    const float* src = in + src_plane * xs[2] * xs[3];
    for (std::int64_t h = 0; h < rows; ++h)
      for (std::int64_t w = 0; w < cols; ++w)
        dst[h * cols + w] = src[h * stride * xs[3] + w * stride];
  });
}

void shortcut_pad_backward(const tensor& dy, std::int64_t stride, tensor& dx) {
  require_rank4("shortcut_pad_backward", "dx", dx.shape());
  shape_t want = shortcut_pad_shape(dx.shape(), dy.rank() == 4 ? dy.dim(1) : dx.dim(1), stride);
  if (dy.shape() != want)
    throw std::invalid_argument("shortcut_pad_backward: dy has shape " + shape_string(dy.shape())
                                + ", expected " + shape_string(want) + " for dx "
                                + shape_string(dx.shape()) + " and stride "
                                + std::to_string(stride));
  const auto& xs = dx.shape();
  const float* in = dy.data();
  float* out = dx.data();
  std::int64_t rows = want[2], cols = want[3];
  for_each_shortcut_plane(xs, want, [&](std::int64_t p, std::int64_t dst_plane) {
    if (dst_plane < 0)
      return;
    const float* src = in + p * rows * cols;
    float* dst = out + dst_plane * xs[2] * xs[3];
    if (stride != 1)
      std::fill_n(dst, xs[2] * xs[3], 0.0f);
    for (std::int64_t h = 0; h < rows; ++h)
      for (std::int64_t w = 0; w < cols; ++w)
        dst[h * stride * xs[3] + w * stride] = src[h * cols + w];
  });
}

} // namespace troupe
