// Tests for io/recordio.cpp: the writer's frames compared byte by byte with frames built from
// the specification (tests/io/record_files.hpp), including dmlc-core's cut at aligned magics.
#include <troupe/io/recordio.hpp>

#include <catch2/catch.hpp>

#include "tests/io/record_files.hpp"

using namespace troupe;

namespace {

test::bytes written(const test::bytes& payload) {
  std::vector<std::uint8_t> out;
  recordio::append_record(out, payload.data(), payload.size());
  return out;
}

const test::bytes magic_bytes{0x0a, 0x23, 0xd7, 0xce}; // 0xced7230a little-endian

} // namespace

TEST_CASE("append_record writes one padded frame for an ordinary payload", "[io][recordio]") {
  const test::bytes payload{1, 2, 3, 4, 5};
  const auto out = written(payload);
  REQUIRE(out.size() == 16); // 8 header + 5 payload + 3 padding
  CHECK(out == test::frame(0, payload));
  CHECK(written({}) == test::frame(0, {}));
  CHECK(written({9, 9, 9, 9}).size() == 12); // aligned: no padding
}

TEST_CASE("append_record cuts at each aligned magic and drops it", "[io][recordio]") {
  test::bytes payload{1, 2, 3, 4};
  test::append(payload, magic_bytes); // aligned at 4: a cut
  test::append(payload, {5, 6, 7, 8});
  test::append(payload, magic_bytes); // aligned at 12: a second cut
  test::append(payload, {9, 10});
  test::bytes expected = test::frame(1, {1, 2, 3, 4});
  test::append(expected, test::frame(2, {5, 6, 7, 8}));
  test::append(expected, test::frame(3, {9, 10}));
  const auto out = written(payload);
  REQUIRE(out.size() == expected.size());
  CHECK(out == expected);
}

TEST_CASE("append_record leaves an unaligned magic inside the payload", "[io][recordio]") {
  test::bytes payload{1, 2};
  test::append(payload, magic_bytes); // at offset 2: not a cut
  test::append(payload, {3, 4});
  CHECK(written(payload) == test::frame(0, payload));
}

TEST_CASE("append_record cuts a payload that starts or ends with the magic", "[io][recordio]") {
  test::bytes payload = magic_bytes;
  test::append(payload, magic_bytes);
  test::bytes expected = test::frame(1, {});
  test::append(expected, test::frame(2, {}));
  test::append(expected, test::frame(3, {}));
  CHECK(written(payload) == expected);
}

TEST_CASE("lrecord packs the flag in the upper 3 bits", "[io][recordio]") {
  const auto lrecord = recordio::encode_lrecord(recordio::frame_kind::last, 12345);
  CHECK(lrecord == ((3U << 29) | 12345U));
  CHECK(recordio::kind_of(lrecord) == recordio::frame_kind::last);
  CHECK(recordio::length_of(lrecord) == 12345U);
  CHECK(recordio::padded(5) == 8);
  CHECK(recordio::padded(8) == 8);
}
