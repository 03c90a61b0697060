// Tests for io/file_bytes.cpp: whole-file reads and gzip inflation, including the ways a
// compressed file arrives damaged.
#include "io/file_bytes.hpp"

#include <catch2/catch.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

test::bytes some_bytes(std::size_t count) {
  test::bytes out(count);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = std::uint8_t((i * 2654435761u) >> 13);
  return out;
}

} // namespace

TEST_CASE("read_raw_file returns the bytes as stored", "[io][file_bytes]") {
  test::temp_dir dir;
  const auto content = some_bytes(100000);
  test::write_file(dir.file("plain"), content);
  CHECK(read_raw_file(dir.file("plain")) == content);
  test::write_file(dir.file("empty"), {});
  CHECK(read_raw_file(dir.file("empty")).empty());
}

TEST_CASE("read_file_bytes inflates gzip and passes plain files through", "[io][file_bytes]") {
  test::temp_dir dir;
  const auto content = some_bytes(300000);
  test::write_gzip_file(dir.file("data.gz"), content);
  test::write_file(dir.file("data"), content);
  CHECK(is_gzip(read_raw_file(dir.file("data.gz"))));
  CHECK(read_file_bytes(dir.file("data.gz")) == content);
  CHECK(read_file_bytes(dir.file("data")) == content);
}

TEST_CASE("read_file_bytes reads concatenated gzip members", "[io][file_bytes]") {
  test::temp_dir dir;
  const auto first = some_bytes(5000), second = some_bytes(7000);
  test::write_gzip_file(dir.file("a.gz"), first);
  test::write_gzip_file(dir.file("b.gz"), second);
  auto joined = test::read_whole_file(dir.file("a.gz"));
  const auto tail = test::read_whole_file(dir.file("b.gz"));
  joined.insert(joined.end(), tail.begin(), tail.end());
  test::write_file(dir.file("ab.gz"), joined);
  auto expected = first;
  expected.insert(expected.end(), second.begin(), second.end());
  CHECK(read_file_bytes(dir.file("ab.gz")) == expected);
}

TEST_CASE("read_raw_file names a missing file", "[io][file_bytes]") {
  test::temp_dir dir;
  const auto path = dir.file("nothing-here");
  REQUIRE_THROWS_AS(read_raw_file(path), io_error);
  REQUIRE_THROWS_WITH(read_raw_file(path), path + ": cannot open: No such file or directory");
}

TEST_CASE("gunzip reports a corrupt stream", "[io][file_bytes]") {
  test::temp_dir dir;
  test::write_gzip_file(dir.file("x.gz"), some_bytes(20000));
  auto packed = test::read_whole_file(dir.file("x.gz"));
  for (std::size_t i = 20; i < 60; ++i)
    packed[i] ^= 0x5a;
  test::write_file(dir.file("x.gz"), packed);
  REQUIRE_THROWS_WITH(read_file_bytes(dir.file("x.gz")),
                      Contains(dir.file("x.gz") + ": corrupt gzip stream"));
}

TEST_CASE("gunzip reports a truncated stream", "[io][file_bytes]") {
  test::temp_dir dir;
  test::write_gzip_file(dir.file("x.gz"), some_bytes(20000));
  auto packed = test::read_whole_file(dir.file("x.gz"));
  packed.resize(packed.size() / 2);
  test::write_file(dir.file("x.gz"), packed);
  REQUIRE_THROWS_WITH(read_file_bytes(dir.file("x.gz")),
                      Contains(dir.file("x.gz")) && Contains("ends early"));
}

TEST_CASE("gunzip reports garbage after the stream", "[io][file_bytes]") {
  test::temp_dir dir;
  test::write_gzip_file(dir.file("x.gz"), some_bytes(1000));
  auto packed = test::read_whole_file(dir.file("x.gz"));
  packed.insert(packed.end(), {'j', 'u', 'n', 'k'});
  test::write_file(dir.file("x.gz"), packed);
  REQUIRE_THROWS_WITH(read_file_bytes(dir.file("x.gz")),
                      Contains(dir.file("x.gz") + ": trailing garbage: 4 bytes"));
}
