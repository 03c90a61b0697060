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
