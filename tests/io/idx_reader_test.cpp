// Tests for io/idx_reader.cpp: idx files written here, plain and gzip, read back exactly; one
// test per way a file can be wrong; and the real Fashion-MNIST files where installed.
#include <troupe/io/idx_reader.hpp>

#include <array>
#include <filesystem>

#include <catch2/catch.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

// Writes a 4-example 5x6 image file and its labels; returns {images, labels} paths.
std::pair<std::string, std::string> write_pair(const test::temp_dir& dir,
                                               const test::bytes& labels = {3, 0, 9, 5}) {
  const auto images = dir.file("images-idx3-ubyte");
  const auto label_path = dir.file("labels-idx1-ubyte");
  test::write_file(images, test::idx_bytes({4, 5, 6}, test::pattern_pixels(4, 5, 6)));
  test::write_file(label_path, test::idx_bytes({std::uint32_t(labels.size())}, labels));
  return {images, label_path};
}

void check_pattern(const dataset& data, std::uint32_t count, std::uint32_t height,
                   std::uint32_t width) {
  REQUIRE(data.size() == count);
  REQUIRE(data.sample_shape() == shape_t{1, height, width});
  const auto expected = test::pattern_pixels(count, height, width);
  for (std::uint32_t n = 0; n < count; ++n)
    for (std::uint32_t i = 0; i < height * width; ++i)
      REQUIRE(data.pixels(n)[i] == expected[n * height * width + i]);
}

} // namespace

TEST_CASE("load_idx reads plain idx files exactly", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  const auto data = load_idx(images, labels, 10, "plain");
  check_pattern(*data, 4, 5, 6);
  CHECK(data->classes() == 10);
  CHECK(data->description() == "plain");
  CHECK(std::array<int, 4>{data->label(0), data->label(1), data->label(2), data->label(3)}
        == std::array<int, 4>{3, 0, 9, 5});
}

TEST_CASE("load_idx reads gzip idx files exactly", "[io][idx]") {
  test::temp_dir dir;
  test::write_gzip_file(dir.file("i.gz"),
                        test::idx_bytes({3, 28, 28}, test::pattern_pixels(3, 28, 28)));
  test::write_gzip_file(dir.file("l.gz"), test::idx_bytes({3}, {1, 2, 7}));
  const auto data = load_idx(dir.file("i.gz"), dir.file("l.gz"), 10, "gz");
  check_pattern(*data, 3, 28, 28);
  CHECK(data->label(2) == 7);
}

TEST_CASE("load_idx names a missing file", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  const auto missing = dir.file("no-such-file");
  REQUIRE_THROWS_AS(load_idx(missing, labels, 10, "x"), io_error);
  REQUIRE_THROWS_WITH(load_idx(missing, labels, 10, "x"),
                      missing + ": cannot open: No such file or directory");
  REQUIRE_THROWS_WITH(load_idx(images, missing, 10, "x"),
                      missing + ": cannot open: No such file or directory");
}

TEST_CASE("load_idx rejects a bad magic number", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  test::write_file(images, {'<', 'h', 't', 'm', 'l', '>', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      images + ": bad magic 0x3c68746d, not an idx file (expected 0x0000TTRR)");
}

TEST_CASE("load_idx rejects an element type other than unsigned byte", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  test::write_file(images, test::idx_bytes({4, 5, 6}, test::bytes(4 * 5 * 6 * 4), 0x0d));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      images + ": element type code 0x0d is not 0x08 (unsigned byte)");
}

TEST_CASE("load_idx rejects the wrong rank", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  test::write_file(images, test::idx_bytes({4, 30}, test::bytes(120)));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      images + ": rank 2, expected 3 for image data");
  test::write_file(images, test::idx_bytes({4, 5, 6}, test::pattern_pixels(4, 5, 6)));
  test::write_file(labels, test::idx_bytes({4, 1}, {0, 1, 2, 3}));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      labels + ": rank 2, expected 1 for label data");
}

TEST_CASE("load_idx rejects a truncated header", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  test::write_file(images, {0, 0, 8, 3, 0, 0, 0, 4, 0, 0});
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      images + ": truncated: expected a 16-byte header, got 10 bytes");
  test::write_file(images, {0, 0});
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"), Contains(images + ": truncated"));
}

TEST_CASE("load_idx rejects truncated image and label data", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  auto pixels = test::pattern_pixels(4, 5, 6);
  pixels.resize(100);
  test::write_file(images, test::idx_bytes({4, 5, 6}, pixels));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      images + ": truncated: expected 120 bytes of image data, got 100");
  write_pair(dir);
  test::write_file(labels, test::idx_bytes({4}, {1, 2}));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      labels + ": truncated: expected 4 bytes of label data, got 2");
  // Extents whose product would overflow 64 bits are caught, not wrapped around.
  test::write_file(images, test::idx_bytes({0xffffffffu, 0xffffffffu, 0xffffffffu}, {1, 2}));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      images
                        + ": truncated: extents call for more than 2^48 bytes of image "
                          "data, got 2");
}

TEST_CASE("load_idx rejects a truncated gzip file", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  // A gzip file cut short is reported by the inflater, with the file's name.
  test::write_gzip_file(images + ".gz", test::idx_bytes({4, 5, 6}, test::pattern_pixels(4, 5, 6)));
  auto packed = test::read_whole_file(images + ".gz");
  packed.resize(packed.size() - 12);
  test::write_file(images + ".gz", packed);
  REQUIRE_THROWS_WITH(load_idx(images + ".gz", labels, 10, "x"),
                      Contains(images + ".gz: corrupt gzip stream"));
}

TEST_CASE("load_idx rejects trailing garbage", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  auto pixels = test::pattern_pixels(4, 5, 6);
  pixels.push_back(0xff);
  pixels.push_back(0xee);
  test::write_file(images, test::idx_bytes({4, 5, 6}, pixels));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      images + ": trailing garbage: 2 bytes after the 120 bytes of image data");
}

TEST_CASE("load_idx rejects image and label counts that differ", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir, {1, 2, 3});
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"), "image/label count mismatch: " + images
                                                           + " holds 4 images, " + labels
                                                           + " holds 3 labels");
}

TEST_CASE("load_idx rejects a label out of range", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  test::write_file(images, test::idx_bytes({6, 2, 2}, test::bytes(24)));
  test::write_file(labels, test::idx_bytes({6}, {0, 1, 2, 3, 4, 12}));
  REQUIRE_THROWS_WITH(load_idx(images, labels, 10, "x"),
                      labels + ": label 12 at index 5 is out of range [0, 10)");
}

TEST_CASE("load_idx rejects a corrupt gzip stream", "[io][idx]") {
  test::temp_dir dir;
  const auto [images, labels] = write_pair(dir);
  test::write_gzip_file(labels + ".gz", test::idx_bytes({4}, {3, 0, 9, 5}));
  auto packed = test::read_whole_file(labels + ".gz");
  packed[12] ^= 0xff; // inside the deflate data, just after the 10-byte gzip header
  packed[13] ^= 0xff;
  test::write_file(labels + ".gz", packed);
  REQUIRE_THROWS_WITH(load_idx(images, labels + ".gz", 10, "x"),
                      Contains(labels + ".gz: corrupt gzip stream"));
}

TEST_CASE("load_mnist_dir prefers .gz and falls back to plain names", "[io][idx]") {
  test::temp_dir dir;
  test::write_gzip_file(dir.file("train-images-idx3-ubyte.gz"),
                        test::idx_bytes({2, 4, 4}, test::pattern_pixels(2, 4, 4)));
  // A plain file beside the .gz with different contents shows which one was read.
  test::write_file(dir.file("train-images-idx3-ubyte"),
                   test::idx_bytes({1, 4, 4}, test::bytes(16)));
  test::write_file(dir.file("train-labels-idx1-ubyte"), test::idx_bytes({2}, {6, 1}));
  const auto data = load_mnist_dir(dir.path(), split::train, "mnist");
  check_pattern(*data, 2, 4, 4);
  CHECK(data->label(0) == 6);
  CHECK(data->classes() == 10);
  CHECK(data->description() == "mnist train (" + dir.path() + ")");
}

TEST_CASE("load_mnist_dir names every missing file", "[io][idx]") {
  test::temp_dir dir;
  const auto images = dir.file("t10k-images-idx3-ubyte");
  const auto labels = dir.file("t10k-labels-idx1-ubyte");
  REQUIRE_THROWS_WITH(load_mnist_dir(dir.path(), split::test, "fashion-mnist"),
                      dir.path() + ": fashion-mnist test files not found: " + images + ".gz or "
                        + images + "; " + labels + ".gz or " + labels);
  test::write_file(labels, test::idx_bytes({1}, {0}));
  REQUIRE_THROWS_WITH(load_mnist_dir(dir.path(), split::test, "fashion-mnist"),
                      Contains(images + ".gz or " + images) && !Contains(labels));
}

TEST_CASE("Fashion-MNIST loads with the published sizes and a balanced label histogram",
          "[io][idx][fashion-mnist]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir)) {
    WARN("skipped: " << dir << " is not installed");
    return;
  }
  const std::pair<split, std::int64_t> splits[] = {{split::train, 60000}, {split::test, 10000}};
  for (const auto& [which, count] : splits) {
    const auto data = load_mnist_dir(dir, which, "fashion-mnist");
    REQUIRE(data->size() == count);
    CHECK(data->sample_shape() == shape_t{1, 28, 28});
    CHECK(data->classes() == 10);
    std::array<std::int64_t, 10> histogram{};
    for (std::int64_t i = 0; i < data->size(); ++i)
      ++histogram[std::size_t(data->label(i))];
    for (auto n : histogram)
      CHECK(n == count / 10);
  }
}
