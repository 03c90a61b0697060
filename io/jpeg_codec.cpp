// JPEG through libjpeg-turbo's libjpeg API rather than TurboJPEG: only the libjpeg API says
// whether a CMYK file carries the Adobe marker (inverted ink values), which the RGB
// conversion needs, and it lets a premature end of data be told apart from other warnings.
//
// libjpeg reports fatal errors through error_exit, which must not return; it longjmps back
// into the function that called setjmp, and the error is thrown from there. No C++ object is
// created between setjmp and a libjpeg call that may jump, so none is skipped by the jump.
#include <troupe/io/jpeg_codec.hpp>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <jerror.h>
#include <jpeglib.h>

namespace troupe {

namespace {

struct error_manager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  bool truncated = false;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void on_error(j_common_ptr info) {
  auto* errors = reinterpret_cast<error_manager*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// Level -1 is a warning about corrupt data; only a premature end matters (the rest of the
// image would be gray). Trace messages (levels >= 0) are dropped.
void on_message(j_common_ptr info, int level) {
  auto* errors = reinterpret_cast<error_manager*>(info->err);
  if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF)
    errors->truncated = true;
}

void install(error_manager& errors) {
  jpeg_std_error(&errors.base);
  errors.base.error_exit = on_error;
  errors.base.emit_message = on_message;
}

// CMYK scanline (4 bytes a pixel) to RGB. With the Adobe marker the file stores 255 - ink.
void cmyk_to_rgb(const JSAMPLE* in, std::uint8_t* out, JDIMENSION width, bool inverted) {
  for (JDIMENSION x = 0; x < width; ++x, in += 4, out += 3) {
    const int k = inverted ? in[3] : 255 - in[3];
    for (int c = 0; c < 3; ++c) {
      const int ink_free = inverted ? in[c] : 255 - in[c];
      out[c] = static_cast<std::uint8_t>((ink_free * k + 127) / 255);
    }
  }
}

} // namespace

rgb_image decode_jpeg(const std::uint8_t* data, std::size_t size) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8)
    throw image_decode_error("not a JPEG (it does not start with the SOI marker ff d8)");
  rgb_image image;
  jpeg_decompress_struct info;
  error_manager errors;
  info.err = &errors.base;
  install(errors);
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    throw image_decode_error(std::string("corrupt JPEG: ") + errors.message);
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, data, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  const bool cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  info.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  const std::int64_t pixels = std::int64_t(info.image_width) * info.image_height;
  if (pixels > max_decoded_pixels) {
    jpeg_destroy_decompress(&info);
    throw image_decode_error("JPEG of " + std::to_string(info.image_width) + " x "
                             + std::to_string(info.image_height)
                             + " pixels is above the decoder's limit of 2^28 pixels");
  }
  jpeg_start_decompress(&info);
  image.height = static_cast<int>(info.output_height);
  image.width = static_cast<int>(info.output_width);
  image.pixels.resize(std::size_t(pixels) * 3);
  // Freed by jpeg_destroy_decompress, also after a jump.
  JSAMPARRAY cmyk_row = cmyk ? (*info.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&info),
                                                         JPOOL_IMAGE, info.output_width * 4, 1)
                             : nullptr;
  while (info.output_scanline < info.output_height) {
    std::uint8_t* out = image.pixels.data() + std::size_t(info.output_scanline) * image.width * 3;
    if (!cmyk) {
      JSAMPROW row = out;
      jpeg_read_scanlines(&info, &row, 1);
    } else {
      jpeg_read_scanlines(&info, cmyk_row, 1);
      cmyk_to_rgb(cmyk_row[0], out, info.output_width, info.saw_Adobe_marker);
    }
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  if (errors.truncated)
    throw image_decode_error("truncated JPEG: the data ends before the image does");
  return image;
}

std::vector<std::uint8_t> encode_jpeg(const rgb_image& image, int quality) {
  if (image.height <= 0 || image.width <= 0
      || image.pixels.size() != std::size_t(image.height) * image.width * 3)
    throw std::invalid_argument("encode_jpeg: the image is empty or its pixels do not match "
                                + std::to_string(image.width) + " x " + std::to_string(image.height)
                                + " x 3");
  if (quality < 1 || quality > 100)
    throw std::invalid_argument("encode_jpeg: quality must be in 1..100, got "
                                + std::to_string(quality));
  jpeg_compress_struct info;
  error_manager errors;
  info.err = &errors.base;
  install(errors);
  unsigned char* buffer = nullptr;
  unsigned long bytes = 0;
  if (setjmp(errors.jump)) {
    jpeg_destroy_compress(&info);
    std::free(buffer);
    throw std::runtime_error(std::string("encode_jpeg: ") + errors.message);
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &buffer, &bytes);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<JSAMPLE*>(image.row(static_cast<int>(info.next_scanline)));
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::vector<std::uint8_t> out(buffer, buffer + bytes);
  std::free(buffer);
  return out;
}

} // namespace troupe
