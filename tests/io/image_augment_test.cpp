// Tests for io/image_augment.cpp: crop boxes obey their ranges and seeds, and resampling
// reproduces, mirrors, crops and normalizes pixels exactly where the arithmetic is exact.
#include <troupe/io/image_augment.hpp>

#include <cmath>

#include <catch2/catch.hpp>

using namespace troupe;

namespace {

// A width x height image whose pixel (y, x) is (x, y, x + y): positions are readable back.
rgb_image ramp(int width, int height) {
  rgb_image image;
  image.width = width;
  image.height = height;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      image.pixels.insert(image.pixels.end(),
                          {std::uint8_t(x), std::uint8_t(y), std::uint8_t(x + y)});
  return image;
}

const float unit_scale[3] = {1, 1, 1}, no_shift[3] = {0, 0, 0};

} // namespace

TEST_CASE("random_resized_crop stays inside the image and its ranges", "[io][augment]") {
  const resized_crop_options options;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const auto box = random_resized_crop(375, 500, options, seed);
    REQUIRE(box.y >= 0);
    REQUIRE(box.x >= 0);
    REQUIRE(box.y + box.height <= 375);
    REQUIRE(box.x + box.width <= 500);
    const double area = box.height * box.width / (375.0 * 500.0);
    REQUIRE(area >= 0.08 * 0.95);
    REQUIRE(area <= 1.0);
    const double ratio = box.width / box.height;
    REQUIRE(ratio >= 0.75 * 0.97);
    REQUIRE(ratio <= 4.0 / 3.0 * 1.03);
  }
}

TEST_CASE("random_resized_crop is a function of its seed", "[io][augment]") {
  const resized_crop_options options;
  const auto a = random_resized_crop(100, 80, options, 7);
  const auto b = random_resized_crop(100, 80, options, 7);
  CHECK(a.x == b.x);
  CHECK(a.y == b.y);
  CHECK(a.width == b.width);
  CHECK(a.height == b.height);
  int differ = 0;
  for (std::uint64_t seed = 8; seed < 18; ++seed) {
    const auto c = random_resized_crop(100, 80, options, seed);
    differ += c.x != a.x || c.y != a.y || c.width != a.width;
  }
  CHECK(differ >= 8);
}

TEST_CASE("random_resized_crop falls back to the centred box within the ratio range",
          "[io][augment]") {
  // A 1 x 100 strip: no box of ratio in [3/4, 4/3] fits, so the fallback clamps to 4/3.
  const auto box = random_resized_crop(1, 100, resized_crop_options{}, 3);
  CHECK(box.height == 1);
  CHECK(box.width == 1);
  CHECK(box.x == 49);
  CHECK_THROWS_AS(check_resized_crop({0, 1, 0.75, 1.3}), std::invalid_argument);
  CHECK_THROWS_AS(check_resized_crop({0.5, 0.4, 0.75, 1.3}), std::invalid_argument);
}

TEST_CASE("center_crop takes the centred window after resizing the shorter side", "[io][augment]") {
  const auto box = center_crop(375, 500, 256, 224, 224);
  const double factor = 256.0 / 375.0;
  CHECK(box.height == Approx(224 / factor));
  CHECK(box.width == Approx(224 / factor));
  CHECK(box.y == Approx((375 - 224 / factor) / 2));
  CHECK(box.x == Approx((500 - 224 / factor) / 2));
}

TEST_CASE("resample_to_planes copies, crops and mirrors exactly at scale 1", "[io][augment]") {
  const auto image = ramp(10, 6);
  std::vector<float> out(3 * 4 * 5);
  // A 4 x 5 box at (1, 2): scale 1, so every output pixel is one source pixel.
  resample_to_planes(image, {1, 2, 4, 5}, false, 4, 5, unit_scale, no_shift, out.data());
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x) {
      REQUIRE(out[std::size_t(0 * 20 + y * 5 + x)] == float(x + 2)); // R plane holds x
      REQUIRE(out[std::size_t(1 * 20 + y * 5 + x)] == float(y + 1)); // G plane holds y
      REQUIRE(out[std::size_t(2 * 20 + y * 5 + x)] == float(x + y + 3));
    }
  resample_to_planes(image, {1, 2, 4, 5}, true, 4, 5, unit_scale, no_shift, out.data());
  for (int x = 0; x < 5; ++x)
    REQUIRE(out[std::size_t(x)] == float(2 + 4 - x));
}

TEST_CASE("resample_to_planes interpolates and normalizes", "[io][augment]") {
  // Two columns 0 and 100 stretched to 4: centres at -0.25, 0.25, 0.75, 1.25 of the source.
  rgb_image image;
  image.width = 2;
  image.height = 1;
  image.pixels = {0, 0, 0, 100, 100, 100};
  std::vector<float> out(3 * 4);
  const float scale[3] = {0.5f, 1, 1}, shift[3] = {-1, 0, 0};
  resample_to_planes(image, {0, 0, 1, 2}, false, 1, 4, scale, shift, out.data());
  CHECK(out[0] == Approx(0 * 0.5 - 1));
  CHECK(out[1] == Approx(25 * 0.5 - 1));
  CHECK(out[2] == Approx(75 * 0.5 - 1));
  CHECK(out[3] == Approx(100 * 0.5 - 1));
  CHECK(out[4 + 1] == Approx(25));
}

TEST_CASE("resize_shorter_side keeps the aspect as im2rec rounds it", "[io][augment]") {
  const auto wide = resize_shorter_side(ramp(500, 375), 100);
  CHECK(wide.height == 100);
  CHECK(wide.width == 500 * 100 / 375);
  REQUIRE(wide.pixels.size() == std::size_t(wide.width) * 100 * 3);
  const auto tall = resize_shorter_side(ramp(30, 61), 15);
  CHECK(tall.width == 15);
  CHECK(tall.height == 30);
  const auto same = resize_shorter_side(ramp(8, 8), 8);
  CHECK(same.pixels == ramp(8, 8).pixels);
  CHECK_THROWS_AS(resize_shorter_side(ramp(4, 4), 0), std::invalid_argument);
}
