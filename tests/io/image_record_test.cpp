// Tests for io/image_record.cpp: headers written byte by byte as MXNet's recordio.pack does
// ('IfQQ', then flag labels when flag > 0), parsed back, and the packer matching them.
#include <troupe/io/image_record.hpp>

#include <catch2/catch.hpp>

#include "tests/io/record_files.hpp"

using namespace troupe;
using Catch::Contains;

TEST_CASE("parse_image_record reads a single-label header", "[io][image_record]") {
  const test::bytes image{0xff, 0xd8, 1, 2, 3};
  const auto payload = test::image_payload({7.0f}, 123456789012ULL, image);
  REQUIRE(payload.size() == 24 + image.size());
  const auto record = parse_image_record(payload);
  REQUIRE(record.labels.size() == 1);
  CHECK(record.labels[0] == 7.0f);
  CHECK(record.id == 123456789012ULL);
  CHECK(record.id2 == 0);
  REQUIRE(record.image_size == image.size());
  CHECK(test::bytes(record.image, record.image + record.image_size) == image);
}

TEST_CASE("parse_image_record reads a multi-label header and ignores its label field",
          "[io][image_record]") {
  const test::bytes image{9, 8, 7};
  auto payload = test::image_payload({2.0f, 0.5f, -1.0f}, 5, image);
  payload[4] = 0x11; // the header's own label: unused when flag > 0
  const auto record = parse_image_record(payload);
  REQUIRE(record.labels.size() == 3);
  CHECK(record.labels == std::vector<float>{2.0f, 0.5f, -1.0f});
  CHECK(record.id == 5);
  REQUIRE(record.image_size == 3);
  CHECK(test::bytes(record.image, record.image + 3) == image);
}

TEST_CASE("parse_image_record refuses payloads shorter than they claim", "[io][image_record]") {
  CHECK_THROWS_WITH(parse_image_record(test::bytes(23, 0)),
                    Contains("shorter than its 24-byte header"));
  auto payload = test::image_payload({1.0f, 2.0f}, 0, {});
  payload.resize(payload.size() - 1);
  CHECK_THROWS_WITH(parse_image_record(payload), Contains("announces 2 labels but only 7 bytes"));
}

TEST_CASE("pack_image_record writes what recordio.pack writes", "[io][image_record]") {
  const test::bytes image{1, 2, 3, 4, 5};
  for (const auto& labels : {std::vector<float>{3.0f}, std::vector<float>{1.0f, 4.0f}}) {
    const auto packed = pack_image_record(labels, 42, 0, image.data(), image.size());
    const auto expected = test::image_payload(labels, 42, image);
    REQUIRE(packed.size() == expected.size());
    CHECK(packed == expected);
  }
  CHECK_THROWS_AS(pack_image_record({}, 0, 0, image.data(), image.size()), std::invalid_argument);
}
