// Geometry of image augmentation for decoded (variable-size) images: which box of the source
// to take, and bilinear resampling of that box to the network's input size.
//
// Training takes a random resized crop (torchvision's RandomResizedCrop, also MXNet's
// random-area crop): a box covering a uniform fraction `scale` of the image area with an
// aspect ratio drawn log-uniformly from `ratio`, up to 10 tries, else the largest centred
// box within the ratio range; the box is stretched to the output size. Validation resizes the
// shorter side to `resize_shorter` and takes the centred output-sized window. Resampling is
// bilinear with pixel centres aligned (OpenCV's INTER_LINEAR, which MXNet's iterators use),
// edge pixels repeated where a box reaches past the image.
//
// MXNet's image iterator's jitter comes on top: a rotation of the decoded image by an angle
// drawn uniformly from [-max_rotate_angle, max_rotate_angle] degrees about its centre
// (bilinear, corners outside the image black), and colour jitter of the resampled pixels,
// each factor drawn uniformly from [1 - bound, 1 + bound]: brightness scales every value,
// contrast moves every value toward or away from the image's mean grey, saturation each pixel
// toward or away from its own grey (grey = 0.299 R + 0.587 G + 0.114 B), in that order, values
// kept within 0..255.
//
// Every draw comes from the `seed` argument, so a caller that keys it by (seed, epoch, record)
// gets the same crop on any thread in any order.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include <troupe/io/jpeg_codec.hpp>

namespace troupe {

/// A box in source pixel units: rows [y, y + height), columns [x, x + width).
struct crop_box {
  double y = 0, x = 0, height = 0, width = 0;
};

struct resized_crop_options {
  double scale_min = 0.08, scale_max = 1.0;            ///< fraction of the image area
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0; ///< width / height of the box
};

/// The colour jitter's bounds: each factor is drawn from [1 - bound, 1 + bound], bound in
/// [0, 1]; 0 leaves the property alone.
struct colour_jitter {
  double brightness = 0, contrast = 0, saturation = 0;
  bool active() const { return brightness > 0 || contrast > 0 || saturation > 0; }
};

/// The factors one image gets.
struct jitter_factors {
  double brightness = 1, contrast = 1, saturation = 1;
};

/// Throws std::invalid_argument unless each bound lies in [0, 1] and max_rotate_angle in
/// [0, 180].
void check_jitter(const colour_jitter& jitter, double max_rotate_angle);

/// The factors drawn from `seed` within `jitter`'s bounds (1 where a bound is 0).
jitter_factors draw_jitter(const colour_jitter& jitter, std::uint64_t seed);

/// Applies `factors` to planar pixels (3 x height x width, values in 0..255) in place.
void apply_jitter(const jitter_factors& factors, int height, int width, float* planes);

/// An angle in degrees drawn from `seed` uniformly in [-max_degrees, max_degrees].
double draw_angle(double max_degrees, std::uint64_t seed);

/// The image rotated by `degrees` (counter-clockwise) about its centre, same size; corners
/// from outside the source are black. 0 returns the image as it is.
rgb_image rotate_image(const rgb_image& image, double degrees);

/// Throws std::invalid_argument unless 0 < scale_min <= scale_max <= 1 and
/// 0 < ratio_min <= ratio_max.
void check_resized_crop(const resized_crop_options& options);

/// The random resized crop box of a height x width image (both > 0), drawn from `seed`.
crop_box random_resized_crop(int height, int width, const resized_crop_options& options,
                             std::uint64_t seed);

/// The centred out_height x out_width window after resizing the shorter side to
/// `resize_shorter` (> 0), in source pixels.
crop_box center_crop(int height, int width, int resize_shorter, int out_height, int out_width);

/// Resamples `box` of `image` to out_height x out_width, mirrored left-right when `mirror`,
/// writing planar floats (3 x out_height x out_width) value * scale[c] + shift[c].
void resample_to_planes(const rgb_image& image, const crop_box& box, bool mirror, int out_height,
                        int out_width, const float scale[3], const float shift[3], float* out);

/// The image resized (bilinear) so its shorter side is `shorter` (> 0), aspect kept, the
/// longer side rounded down as MXNet's im2rec does.
rgb_image resize_shorter_side(const rgb_image& image, int shorter);

} // namespace troupe
