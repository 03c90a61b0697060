// The image record of MXNet's `.rec` files: the payload of one RecordIO record, as
// python/mxnet/recordio.py packs it.
//
//   IRHeader, 24 bytes little-endian (struct 'IfQQ'):
//     uint32 flag | float32 label | uint64 id | uint64 id2
//   flag > 0: `flag` float32 labels follow the header, and the header's label is unused
//   the encoded image (JPEG here) to the end of the payload
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace troupe {

struct image_record {
  /// The labels: {label} when flag is 0, else the `flag` labels after the header.
  std::vector<float> labels;
  std::uint64_t id = 0;
  std::uint64_t id2 = 0;
  /// The encoded image: a view into the payload it was parsed from.
  const std::uint8_t* image = nullptr;
  std::size_t image_size = 0;
};

constexpr std::size_t image_record_header_bytes = 24;

/// Parses a payload; the result views into it. Throws std::invalid_argument when the payload
/// is shorter than the header and its labels.
image_record parse_image_record(const std::vector<std::uint8_t>& payload);

/// The payload MXNet's recordio.pack writes: flag 0 with the label in the header for one
/// label, else flag = labels.size() and the labels after it. Throws std::invalid_argument
/// for no labels.
std::vector<std::uint8_t> pack_image_record(const std::vector<float>& labels, std::uint64_t id,
                                            std::uint64_t id2, const std::uint8_t* image,
                                            std::size_t image_size);

} // namespace troupe
