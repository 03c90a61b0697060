// Packing and parsing of MXNet's image record header (layout in image_record.hpp). Fields are
// moved byte by byte, so the layout does not depend on the host's endianness or on how the
// compiler would pad a struct.
#include <troupe/io/image_record.hpp>

#include <cstring>
#include <stdexcept>
#include <string>

namespace troupe {

namespace {

std::uint64_t load_le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

void store_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(std::uint8_t(v >> (8 * i)));
}

float load_float(const std::uint8_t* p) {
  const auto bits = static_cast<std::uint32_t>(load_le(p, 4));
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

void store_float(std::vector<std::uint8_t>& out, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  store_le(out, bits, 4);
}

} // namespace

image_record parse_image_record(const std::vector<std::uint8_t>& payload) {
  if (payload.size() < image_record_header_bytes)
    throw std::invalid_argument("image record of " + std::to_string(payload.size())
                                + " bytes is shorter than its 24-byte header");
  const std::uint8_t* p = payload.data();
  const auto flag = static_cast<std::uint32_t>(load_le(p, 4));
  image_record record;
  record.id = load_le(p + 8, 8);
  record.id2 = load_le(p + 16, 8);
  std::size_t used = image_record_header_bytes;
  if (flag == 0) {
    record.labels.push_back(load_float(p + 4));
  } else {
    const std::uint64_t label_bytes = std::uint64_t{flag} * 4;
    if (label_bytes > payload.size() - used)
      throw std::invalid_argument("image record header announces " + std::to_string(flag)
                                  + " labels but only " + std::to_string(payload.size() - used)
                                  + " bytes follow it");
    for (std::uint32_t i = 0; i < flag; ++i)
      record.labels.push_back(load_float(p + used + 4 * i));
    used += static_cast<std::size_t>(label_bytes);
  }
  record.image = p + used;
  record.image_size = payload.size() - used;
  return record;
}

std::vector<std::uint8_t> pack_image_record(const std::vector<float>& labels, std::uint64_t id,
                                            std::uint64_t id2, const std::uint8_t* image,
                                            std::size_t image_size) {
  if (labels.empty())
    throw std::invalid_argument("an image record needs at least one label");
  std::vector<std::uint8_t> out;
  out.reserve(image_record_header_bytes + (labels.size() > 1 ? 4 * labels.size() : 0) + image_size);
  const bool one = labels.size() == 1;
  store_le(out, one ? 0 : labels.size(), 4);
  store_float(out, one ? labels[0] : 0.0f);
  store_le(out, id, 8);
  store_le(out, id2, 8);
  if (!one)
    for (float label : labels)
      store_float(out, label);
  out.insert(out.end(), image, image + image_size);
  return out;
}

} // namespace troupe
