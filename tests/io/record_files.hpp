// Helpers for the RecordIO tests: frames, image records and JPEGs written straight from the
// format specifications (docs/data.md), independent of io/'s writers, so a test that reads
// them checks the reader against the format and not against our own writer.
#pragma once

#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "tests/io/test_files.hpp"

namespace troupe::test {

inline void put_u32(bytes& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(std::uint8_t(v >> (8 * i)));
}
inline void put_u64(bytes& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(std::uint8_t(v >> (8 * i)));
}
inline void put_f32(bytes& out, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_u32(out, bits);
}

/// One frame: magic, lrecord (cflag << 29 | length), the payload, zero padding to 4 bytes.
inline bytes frame(std::uint32_t cflag, const bytes& payload, bool pad = true) {
  bytes out;
  put_u32(out, 0xced7230aU);
  put_u32(out, (cflag << 29) | std::uint32_t(payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  while (pad && out.size() % 4 != 0)
    out.push_back(0);
  return out;
}

/// IRHeader 'IfQQ' + labels + image bytes, as MXNet's recordio.pack writes it.
inline bytes image_payload(const std::vector<float>& labels, std::uint64_t id, const bytes& image) {
  bytes out;
  const bool one = labels.size() == 1;
  put_u32(out, one ? 0 : std::uint32_t(labels.size()));
  put_f32(out, one ? labels[0] : 0.0f);
  put_u64(out, id);
  put_u64(out, 0);
  if (!one)
    for (float l : labels)
      put_f32(out, l);
  out.insert(out.end(), image.begin(), image.end());
  return out;
}

inline void append(bytes& to, const bytes& more) {
  to.insert(to.end(), more.begin(), more.end());
}

/// Encodes a `components`-channel image (1 gray, 3 RGB, 4 CMYK stored Adobe-inverted, as
/// Photoshop and PIL write it) as a JPEG with libjpeg directly.
inline bytes encode_test_jpeg(int width, int height, int components,
                              const std::vector<std::uint8_t>& pixels, int quality = 95) {
  struct errors_t {
    jpeg_error_mgr base;
    std::jmp_buf jump;
  } errors;
  jpeg_compress_struct info;
  info.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = [](j_common_ptr c) {
    std::longjmp(reinterpret_cast<errors_t*>(c->err)->jump, 1);
  };
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (setjmp(errors.jump)) {
    jpeg_destroy_compress(&info);
    std::free(buffer);
    throw std::runtime_error("test JPEG encoding failed");
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = JDIMENSION(width);
  info.image_height = JDIMENSION(height);
  info.input_components = components;
  info.in_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row =
      const_cast<JSAMPLE*>(pixels.data() + std::size_t(info.next_scanline) * width * components);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  bytes out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

/// A width x height RGB JPEG of one colour.
inline bytes solid_jpeg(int width, int height, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  std::vector<std::uint8_t> pixels;
  for (int i = 0; i < width * height; ++i)
    pixels.insert(pixels.end(), {r, g, b});
  return encode_test_jpeg(width, height, 3, pixels);
}

} // namespace troupe::test
