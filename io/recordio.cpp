// RecordIO framing on the writing side (format in recordio.hpp and docs/data.md).
//
// The cut rule is dmlc-core's exactly: scan the payload at offsets 0, 4, 8, ... below the
// last whole word; at each aligned magic, close the current part (flag 1 for the first, 2
// after that) and resume after the magic. The tail goes out as flag 0 when nothing was cut,
// else 3, followed by padding. Anything else would produce files MXNet reads differently.
#include <troupe/io/recordio.hpp>

#include <stdexcept>
#include <string>

namespace troupe::recordio {

namespace {

void append_frame(std::vector<std::uint8_t>& out, frame_kind kind, const std::uint8_t* data,
                  std::uint32_t length) {
  const std::size_t at = out.size();
  out.resize(at + header_bytes);
  store_u32(out.data() + at, magic);
  store_u32(out.data() + at + 4, encode_lrecord(kind, length));
  out.insert(out.end(), data, data + length);
}

} // namespace

void append_record(std::vector<std::uint8_t>& out, const std::uint8_t* payload, std::size_t size) {
  if (size > max_length)
    throw std::invalid_argument("recordio: a record of " + std::to_string(size)
                                + " bytes is above the format's limit of "
                                + std::to_string(max_length));
  const auto length = static_cast<std::uint32_t>(size);
  const std::uint32_t whole_words = length & ~std::uint32_t{3};
  std::uint32_t part_start = 0;
  for (std::uint32_t i = 0; i < whole_words; i += 4) {
    if (load_u32(payload + i) != magic)
      continue;
    append_frame(out, part_start == 0 ? frame_kind::first : frame_kind::middle,
                 payload + part_start, i - part_start);
    part_start = i + 4;
  }
  append_frame(out, part_start == 0 ? frame_kind::whole : frame_kind::last, payload + part_start,
               length - part_start);
  out.resize(out.size() + (padded(length) - length), 0);
}

} // namespace troupe::recordio
