// Tests for io/jpeg_codec.cpp: RGB, grayscale and CMYK JPEGs written with libjpeg in the test
// decode to the colours they hold; corrupt, truncated and non-JPEG data are errors.
#include <troupe/io/jpeg_codec.hpp>

#include <cstdlib>

#include <catch2/catch.hpp>

#include "tests/io/record_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

// Every pixel within `tolerance` of (r, g, b): JPEG is lossy, but flat colours survive well.
void check_colour(const rgb_image& image, int r, int g, int b, int tolerance = 3) {
  const std::uint8_t want[3] = {std::uint8_t(r), std::uint8_t(g), std::uint8_t(b)};
  for (std::size_t i = 0; i < image.pixels.size(); ++i)
    REQUIRE(std::abs(int(image.pixels[i]) - int(want[i % 3])) <= tolerance);
}

} // namespace

TEST_CASE("decode_jpeg decodes RGB to interleaved rows", "[io][jpeg]") {
  const auto file = test::solid_jpeg(37, 21, 200, 30, 90);
  const auto image = decode_jpeg(file.data(), file.size());
  REQUIRE(image.width == 37);
  REQUIRE(image.height == 21);
  REQUIRE(image.pixels.size() == 37u * 21u * 3u);
  check_colour(image, 200, 30, 90);
}

TEST_CASE("decode_jpeg replicates grayscale into three channels", "[io][jpeg]") {
  const auto file = test::encode_test_jpeg(16, 8, 1, std::vector<std::uint8_t>(16 * 8, 77));
  const auto image = decode_jpeg(file.data(), file.size());
  REQUIRE(image.pixels.size() == 16u * 8u * 3u);
  check_colour(image, 77, 77, 77, 1);
}

TEST_CASE("decode_jpeg converts Adobe CMYK to RGB", "[io][jpeg]") {
  // Ink C=0, M=255, Y=255, K=0 is red; stored inverted (255 - ink) as Photoshop and PIL do.
  std::vector<std::uint8_t> cmyk;
  for (int i = 0; i < 24 * 16; ++i)
    cmyk.insert(cmyk.end(), {255, 0, 0, 255});
  const auto file = test::encode_test_jpeg(24, 16, 4, cmyk);
  const auto image = decode_jpeg(file.data(), file.size());
  REQUIRE(image.pixels.size() == 24u * 16u * 3u);
  check_colour(image, 255, 0, 0, 4);
}

TEST_CASE("decode_jpeg refuses what is not a whole JPEG", "[io][jpeg]") {
  const test::bytes png{0x89, 'P', 'N', 'G', 0, 0};
  CHECK_THROWS_WITH(decode_jpeg(png.data(), png.size()), Contains("not a JPEG"));
  // A busy image, so its entropy-coded data is most of the file and a cut lands inside it.
  std::vector<std::uint8_t> busy;
  for (int i = 0; i < 64 * 64 * 3; ++i)
    busy.push_back(std::uint8_t((i * 7919) >> 3));
  const auto file = test::encode_test_jpeg(64, 64, 3, busy);
  auto truncated = file;
  truncated.resize(file.size() * 3 / 4);
  CHECK_THROWS_AS(decode_jpeg(truncated.data(), truncated.size()), image_decode_error);
  CHECK_THROWS_WITH(decode_jpeg(truncated.data(), truncated.size()), Contains("truncated JPEG"));
  auto garbled = file;
  for (std::size_t i = 2; i < 40 && i < garbled.size(); ++i)
    garbled[i] = 0x5a; // the header's markers are gone
  CHECK_THROWS_WITH(decode_jpeg(garbled.data(), garbled.size()), Contains("corrupt JPEG"));
}

TEST_CASE("encode_jpeg round-trips through decode_jpeg", "[io][jpeg]") {
  rgb_image image;
  image.width = 20;
  image.height = 12;
  for (int i = 0; i < 20 * 12; ++i)
    image.pixels.insert(image.pixels.end(), {20, 140, 250});
  const auto file = encode_jpeg(image, 90);
  const auto back = decode_jpeg(file.data(), file.size());
  REQUIRE(back.width == 20);
  REQUIRE(back.height == 12);
  check_colour(back, 20, 140, 250);
  CHECK_THROWS_AS(encode_jpeg(image, 0), std::invalid_argument);
  CHECK_THROWS_AS(encode_jpeg(rgb_image{}, 90), std::invalid_argument);
}
