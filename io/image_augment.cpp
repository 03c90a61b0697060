// Crop boxes, bilinear resampling, rotation and colour jitter (see image_augment.hpp).
// Resampling precomputes, per output row and column, the two source taps and the weight of
// the second, so the inner loop is four loads and three multiply-adds per channel. Rotation
// cannot be separated that way, so it is a pass of its own over the decoded image, run only
// when an angle is drawn; jitter works on the resampled pixels, before normalization.
#include <troupe/io/image_augment.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/random_streams.hpp"

namespace troupe {

namespace {

struct tap {
  int first, second; ///< source indices (clamped)
  float weight;      ///< of `second`
};

// Output index i of `count` over a box [start, start + extent) of a source with `size`
// pixels: pixel centres aligned, clamped at the edges.
std::vector<tap> taps(double start, double extent, int count, int size) {
  std::vector<tap> out(static_cast<std::size_t>(count));
  const double step = extent / count;
  for (int i = 0; i < count; ++i) {
    double s = start + (i + 0.5) * step - 0.5;
    s = std::clamp(s, 0.0, double(size - 1));
    const int first = static_cast<int>(s);
    out[std::size_t(i)] = {first, std::min(first + 1, size - 1), float(s - first)};
  }
  return out;
}

double uniform(splitmix_stream& draws, double low, double high) {
  return low + (high - low) * unit_interval(draws());
}

} // namespace

void check_jitter(const colour_jitter& j, double max_rotate_angle) {
  for (const auto& [name, bound] : {std::pair<const char*, double>{"brightness", j.brightness},
                                    {"contrast", j.contrast},
                                    {"saturation", j.saturation}})
    if (!(bound >= 0 && bound <= 1))
      throw std::invalid_argument(std::string("colour jitter: ") + name
                                  + " must be between 0 and 1, got " + std::to_string(bound));
  if (!(max_rotate_angle >= 0 && max_rotate_angle <= 180))
    throw std::invalid_argument("rotation: max_rotate_angle must be between 0 and 180 degrees, "
                                "got "
                                + std::to_string(max_rotate_angle));
}

jitter_factors draw_jitter(const colour_jitter& j, std::uint64_t seed) {
  splitmix_stream draws(seed);
  jitter_factors f;
  // Each factor takes its draw whether or not its bound is 0, so one bound does not move
  // another's factor.
  f.brightness = uniform(draws, 1 - j.brightness, 1 + j.brightness);
  f.contrast = uniform(draws, 1 - j.contrast, 1 + j.contrast);
  f.saturation = uniform(draws, 1 - j.saturation, 1 + j.saturation);
  return f;
}

void apply_jitter(const jitter_factors& f, int height, int width, float* planes) {
  const std::size_t plane = std::size_t(height) * width;
  float* r = planes;
  float* g = planes + plane;
  float* b = planes + 2 * plane;
  auto grey = [&](std::size_t i) { return 0.299f * r[i] + 0.587f * g[i] + 0.114f * b[i]; };
  const auto brightness = float(f.brightness);
  for (std::size_t i = 0; i < 3 * plane; ++i)
    planes[i] = std::min(255.0f, planes[i] * brightness);
  if (f.contrast != 1) {
    double sum = 0;
    for (std::size_t i = 0; i < plane; ++i)
      sum += grey(i);
    const auto mean = float(sum / double(plane)), alpha = float(f.contrast);
    for (std::size_t i = 0; i < 3 * plane; ++i)
      planes[i] = std::clamp(planes[i] * alpha + mean * (1 - alpha), 0.0f, 255.0f);
  }
  if (f.saturation != 1) {
    const auto alpha = float(f.saturation);
    for (std::size_t i = 0; i < plane; ++i) {
      const float y = grey(i) * (1 - alpha);
      for (float* c : {r, g, b})
        c[i] = std::clamp(c[i] * alpha + y, 0.0f, 255.0f);
    }
  }
}

double draw_angle(double max_degrees, std::uint64_t seed) {
  splitmix_stream draws(seed);
  return uniform(draws, -max_degrees, max_degrees);
}

rgb_image rotate_image(const rgb_image& image, double degrees) {
  if (degrees == 0)
    return image;
  rgb_image out;
  out.height = image.height;
  out.width = image.width;
  out.pixels.assign(image.pixels.size(), 0);
  const double radians = degrees * std::acos(-1.0) / 180;
  const double c = std::cos(radians), s = std::sin(radians);
  const double cy = (image.height - 1) / 2.0, cx = (image.width - 1) / 2.0;
  for (int y = 0; y < out.height; ++y) {
    std::uint8_t* line = out.pixels.data() + std::size_t(y) * out.width * 3;
    for (int x = 0; x < out.width; ++x) {
      // The source of output (y, x): the output point turned back by the angle (rows grow
      // downward, so counter-clockwise on screen turns the other way in these coordinates).
      const double dy = y - cy, dx = x - cx;
      double sx = cx + c * dx - s * dy, sy = cy + s * dx + c * dy;
      // cos and sin of a right angle are not exactly 0 and 1: an edge pixel may land a
      // rounding error outside, which is still the edge.
      constexpr double edge = 1e-9;
      if (sx < -edge || sy < -edge || sx > image.width - 1 + edge || sy > image.height - 1 + edge)
        continue; // outside the source: black
      sx = std::clamp(sx, 0.0, double(image.width - 1));
      sy = std::clamp(sy, 0.0, double(image.height - 1));
      const int x0 = static_cast<int>(sx), y0 = static_cast<int>(sy);
      const int x1 = std::min(x0 + 1, image.width - 1), y1 = std::min(y0 + 1, image.height - 1);
      const double wx = sx - x0, wy = sy - y0;
      for (int ch = 0; ch < 3; ++ch) {
        auto at = [&](int row, int column) { return double(image.row(row)[3 * column + ch]); };
        const double upper = at(y0, x0) + wx * (at(y0, x1) - at(y0, x0));
        const double lower = at(y1, x0) + wx * (at(y1, x1) - at(y1, x0));
        line[3 * x + ch] = static_cast<std::uint8_t>(std::lround(upper + wy * (lower - upper)));
      }
    }
  }
  return out;
}

void check_resized_crop(const resized_crop_options& o) {
  if (!(o.scale_min > 0 && o.scale_min <= o.scale_max && o.scale_max <= 1))
    throw std::invalid_argument("random resized crop: scale must satisfy 0 < min <= max <= 1, got ["
                                + std::to_string(o.scale_min) + ", " + std::to_string(o.scale_max)
                                + "]");
  if (!(o.ratio_min > 0 && o.ratio_min <= o.ratio_max && std::isfinite(o.ratio_max)))
    throw std::invalid_argument("random resized crop: ratio must satisfy 0 < min <= max, got ["
                                + std::to_string(o.ratio_min) + ", " + std::to_string(o.ratio_max)
                                + "]");
}

crop_box random_resized_crop(int height, int width, const resized_crop_options& o,
                             std::uint64_t seed) {
  splitmix_stream draws(seed);
  const double area = double(height) * width;
  const double log_min = std::log(o.ratio_min), log_max = std::log(o.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(draws, o.scale_min, o.scale_max);
    const double ratio = std::exp(uniform(draws, log_min, log_max));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto y = uniform_below(draws, std::uint64_t(height - h + 1));
      const auto x = uniform_below(draws, std::uint64_t(width - w + 1));
      return {double(y), double(x), double(h), double(w)};
    }
  }
  // The largest centred box whose ratio lies in the range.
  const double in_ratio = double(width) / height;
  int w = width, h = height;
  if (in_ratio < o.ratio_min)
    h = std::max(1, static_cast<int>(std::lround(w / o.ratio_min)));
  else if (in_ratio > o.ratio_max)
    w = std::max(1, static_cast<int>(std::lround(h * o.ratio_max)));
  return {double((height - h) / 2), double((width - w) / 2), double(h), double(w)};
}

crop_box center_crop(int height, int width, int resize_shorter, int out_height, int out_width) {
  const double factor = double(resize_shorter) / std::min(height, width);
  const double box_height = out_height / factor, box_width = out_width / factor;
  return {(height - box_height) / 2, (width - box_width) / 2, box_height, box_width};
}

void resample_to_planes(const rgb_image& image, const crop_box& box, bool mirror, int out_height,
                        int out_width, const float scale[3], const float shift[3], float* out) {
  const auto rows = taps(box.y, box.height, out_height, image.height);
  auto columns = taps(box.x, box.width, out_width, image.width);
  if (mirror)
    std::reverse(columns.begin(), columns.end());
  const std::size_t plane = std::size_t(out_height) * out_width;
  for (int oy = 0; oy < out_height; ++oy) {
    const auto& r = rows[std::size_t(oy)];
    const std::uint8_t* top = image.row(r.first);
    const std::uint8_t* bottom = image.row(r.second);
    const float wy = r.weight;
    float* line = out + std::size_t(oy) * out_width;
    for (int ox = 0; ox < out_width; ++ox) {
      const auto& c = columns[std::size_t(ox)];
      const int a = 3 * c.first, b = 3 * c.second;
      for (int ch = 0; ch < 3; ++ch) {
        const float upper = top[a + ch] + c.weight * float(top[b + ch] - top[a + ch]);
        const float lower = bottom[a + ch] + c.weight * float(bottom[b + ch] - bottom[a + ch]);
        const float value = upper + wy * (lower - upper);
        line[ch * plane + std::size_t(ox)] = value * scale[ch] + shift[ch];
      }
    }
  }
}

rgb_image resize_shorter_side(const rgb_image& image, int shorter) {
  if (shorter <= 0 || image.height <= 0 || image.width <= 0)
    throw std::invalid_argument("resize_shorter_side: shorter side " + std::to_string(shorter)
                                + " of a " + std::to_string(image.width) + " x "
                                + std::to_string(image.height) + " image");
  rgb_image out;
  // Integer arithmetic as im2rec's: longer * shorter // current shorter.
  if (image.height > image.width) {
    out.width = shorter;
    out.height = static_cast<int>(std::int64_t(image.height) * shorter / image.width);
  } else {
    out.height = shorter;
    out.width = static_cast<int>(std::int64_t(image.width) * shorter / image.height);
  }
  out.height = std::max(out.height, 1);
  out.width = std::max(out.width, 1);
  out.pixels.resize(std::size_t(out.height) * out.width * 3);
  const auto rows = taps(0, image.height, out.height, image.height);
  const auto columns = taps(0, image.width, out.width, image.width);
  for (int oy = 0; oy < out.height; ++oy) {
    const auto& r = rows[std::size_t(oy)];
    const std::uint8_t* top = image.row(r.first);
    const std::uint8_t* bottom = image.row(r.second);
    std::uint8_t* line = out.pixels.data() + std::size_t(oy) * out.width * 3;
    for (int ox = 0; ox < out.width; ++ox) {
      const auto& c = columns[std::size_t(ox)];
      for (int ch = 0; ch < 3; ++ch) {
        const float upper =
          top[3 * c.first + ch] + c.weight * float(top[3 * c.second + ch] - top[3 * c.first + ch]);
        const float lower =
          bottom[3 * c.first + ch]
          + c.weight * float(bottom[3 * c.second + ch] - bottom[3 * c.first + ch]);
        line[3 * ox + ch] =
          static_cast<std::uint8_t>(std::lround(upper + r.weight * (lower - upper)));
      }
    }
  }
  return out;
}

} // namespace troupe
