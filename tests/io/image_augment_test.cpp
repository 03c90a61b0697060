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

namespace {

// Planar pixels (3 x count) of `count` copies of the colour (r, g, b).
std::vector<float> planes_of(float r, float g, float b, int count) {
  std::vector<float> out;
  for (float v : {r, g, b})
    out.insert(out.end(), std::size_t(count), v);
  return out;
}

double mean(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values)
    sum += v;
  return sum / double(values.size());
}

float grey_of(float r, float g, float b) {
  return 0.299f * r + 0.587f * g + 0.114f * b;
}

} // namespace

TEST_CASE("jitter factors lie within their bounds and follow the seed", "[io][augment]") {
  const colour_jitter bounds{0.4, 0.2, 0.1};
  bool moved = false;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const auto f = draw_jitter(bounds, seed);
    CHECK(std::abs(f.brightness - 1) <= 0.4);
    CHECK(std::abs(f.contrast - 1) <= 0.2);
    CHECK(std::abs(f.saturation - 1) <= 0.1);
    const auto again = draw_jitter(bounds, seed);
    CHECK(again.brightness == f.brightness);
    CHECK(again.saturation == f.saturation);
    moved = moved || std::abs(f.brightness - 1) > 0.2;
  }
  CHECK(moved); // the bound is used, not just respected
  const auto none = draw_jitter(colour_jitter{}, 5);
  CHECK(none.brightness == 1);
  CHECK(none.contrast == 1);
  CHECK(none.saturation == 1);
  // A bound of its own leaves the other factors' draws where they were.
  CHECK(draw_jitter({0.4, 0, 0}, 9).brightness == draw_jitter({0.4, 0.2, 0.1}, 9).brightness);
}

TEST_CASE("brightness scales the mean by its factor", "[io][augment]") {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const auto f = draw_jitter({0.5, 0, 0}, seed);
    auto planes = planes_of(100, 60, 20, 16);
    const double before = mean(planes);
    apply_jitter(f, 4, 4, planes.data());
    const double factor = mean(planes) / before;
    CHECK(factor == Approx(f.brightness).epsilon(1e-6));
    CHECK(factor >= 0.5);
    CHECK(factor <= 1.5);
  }
}

TEST_CASE("contrast scales each value's distance from the mean grey", "[io][augment]") {
  // Half the pixels grey 60, half grey 140: the mean grey is 100.
  std::vector<float> planes;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 8; ++i)
      planes.push_back(i < 4 ? 60.0f : 140.0f);
  jitter_factors f;
  f.contrast = 1.25;
  apply_jitter(f, 2, 4, planes.data());
  CHECK(planes[0] == Approx(50));
  CHECK(planes[7] == Approx(150));
  CHECK(mean(planes) == Approx(100));
  f.contrast = 0; // the least a bound of 1 draws: every value becomes the mean grey
  apply_jitter(f, 2, 4, planes.data());
  for (float v : planes)
    CHECK(v == Approx(100));
}

TEST_CASE("saturation scales each pixel's distance from its own grey", "[io][augment]") {
  const float r = 200, g = 100, b = 50;
  const float grey = grey_of(r, g, b);
  auto planes = planes_of(r, g, b, 1);
  jitter_factors f;
  f.saturation = 0.5;
  apply_jitter(f, 1, 1, planes.data());
  CHECK(planes[0] == Approx(grey + 0.5f * (r - grey)));
  CHECK(planes[1] == Approx(grey + 0.5f * (g - grey)));
  CHECK(planes[2] == Approx(grey + 0.5f * (b - grey)));
  auto grey_pixel = planes_of(90, 90, 90, 1);
  f.saturation = 1.8;
  apply_jitter(f, 1, 1, grey_pixel.data());
  CHECK(grey_pixel == planes_of(90, 90, 90, 1)); // a grey has no colour to scale
}

TEST_CASE("jittered values stay within 0..255", "[io][augment]") {
  auto planes = planes_of(250, 5, 128, 4);
  jitter_factors f;
  f.brightness = 1.5;
  f.contrast = 2;
  f.saturation = 2;
  apply_jitter(f, 2, 2, planes.data());
  for (float v : planes) {
    CHECK(v >= 0);
    CHECK(v <= 255);
  }
}

TEST_CASE("rotation by 0 leaves the image, by 180 turns it over", "[io][augment]") {
  const auto image = ramp(5, 3);
  CHECK(rotate_image(image, 0).pixels == image.pixels);
  const auto turned = rotate_image(image, 180);
  REQUIRE(turned.width == 5);
  REQUIRE(turned.height == 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c = 0; c < 3; ++c)
        CHECK(turned.row(y)[3 * x + c] == image.row(2 - y)[3 * (4 - x) + c]);
}

TEST_CASE("rotation by 90 turns a square counter-clockwise, corners outside black",
          "[io][augment]") {
  const auto image = ramp(3, 3);
  const auto turned = rotate_image(image, 90);
  // Counter-clockwise: the top row comes from the right column, read downward.
  for (int x = 0; x < 3; ++x)
    for (int c = 0; c < 3; ++c)
      CHECK(turned.row(0)[3 * x + c] == image.row(x)[3 * 2 + c]);
  // A 45 degree turn of a wide image leaves its corners without a source.
  const auto tilted = rotate_image(ramp(9, 3), 45);
  CHECK(tilted.row(0)[0] == 0);
  CHECK(tilted.row(0)[1] == 0);
  CHECK(tilted.row(0)[2] == 0);
}

TEST_CASE("rotation angles lie within the bound and follow the seed", "[io][augment]") {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const double a = draw_angle(30, seed);
    CHECK(std::abs(a) <= 30);
    CHECK(draw_angle(30, seed) == a);
  }
  CHECK(draw_angle(0, 3) == 0);
}

TEST_CASE("jitter and rotation bounds outside their ranges are refused", "[io][augment]") {
  CHECK_NOTHROW(check_jitter({1, 0, 0.5}, 180));
  CHECK_THROWS_WITH(check_jitter({1.5, 0, 0}, 0),
                    "colour jitter: brightness must be between 0 and 1, got 1.500000");
  CHECK_THROWS_WITH(check_jitter({0, -0.1, 0}, 0), Catch::Contains("contrast"));
  CHECK_THROWS_WITH(check_jitter({0, 0, 2}, 0), Catch::Contains("saturation"));
  CHECK_THROWS_WITH(check_jitter({}, 181), Catch::Contains("max_rotate_angle"));
  CHECK_THROWS_WITH(check_jitter({}, -1), Catch::Contains("max_rotate_angle"));
}
