// JPEG decoding to 8-bit RGB and encoding from it, on libjpeg-turbo.
//
// Every JPEG becomes interleaved RGB (H x W x 3): grayscale is replicated into the three
// channels, CMYK and YCCK (Photoshop's and PIL's CMYK JPEGs) are converted with the naive
// formula R = (1 - C)(1 - K), honouring the Adobe marker's inverted storage. A file that is
// not a JPEG, is corrupt, or ends before its image data does is an image_decode_error;
// libjpeg's harmless warnings (extraneous bytes before a marker, which real photo sets hold)
// are not.
//
// Thread-safety: free functions without shared state; any number may run at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace troupe {

/// An 8-bit RGB image, rows top to bottom, pixels interleaved (H x W x 3).
struct rgb_image {
  int height = 0;
  int width = 0;
  std::vector<std::uint8_t> pixels;
  const std::uint8_t* row(int y) const { return pixels.data() + std::size_t(y) * width * 3; }
};

/// Why an image did not decode, in libjpeg's words; callers add the file and record.
class image_decode_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Largest image decode_jpeg accepts, in pixels: a corrupt header can claim 65500 x 65500.
constexpr std::int64_t max_decoded_pixels = std::int64_t{1} << 28;

/// Decodes a JPEG to RGB. Throws image_decode_error.
rgb_image decode_jpeg(const std::uint8_t* data, std::size_t size);

/// Encodes RGB as a baseline JPEG with 4:2:0 chroma (libjpeg's defaults) at `quality`
/// (1..100). Throws std::invalid_argument for an empty image or a quality outside 1..100.
std::vector<std::uint8_t> encode_jpeg(const rgb_image& image, int quality);

} // namespace troupe
