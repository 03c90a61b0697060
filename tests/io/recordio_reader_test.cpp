// Tests for io/recordio_reader.cpp: files built frame by frame from the specification, read
// with and without an .idx; records split into parts; and each way a file can be corrupt,
// with and without skipping.
#include <troupe/io/recordio_reader.hpp>

#include <catch2/catch.hpp>

#include "tests/io/record_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

const test::bytes magic_bytes{0x0a, 0x23, 0xd7, 0xce};

// Three records: a 5-byte one, one split in three parts (its payload holds the magic twice at
// aligned offsets), and an empty one. Offsets 0, 16, 52.
struct three_records {
  test::bytes file;
  std::vector<test::bytes> payloads;
  std::vector<std::uint64_t> offsets;
  three_records() {
    test::bytes split{1, 2, 3, 4};
    test::append(split, magic_bytes);
    test::append(split, {5, 6, 7, 8});
    test::append(split, magic_bytes);
    test::append(split, {9});
    payloads = {{10, 20, 30, 40, 50}, split, {}};
    offsets.push_back(file.size());
    test::append(file, test::frame(0, payloads[0]));
    offsets.push_back(file.size());
    test::append(file, test::frame(1, {1, 2, 3, 4}));
    test::append(file, test::frame(2, {5, 6, 7, 8}));
    test::append(file, test::frame(3, {9}));
    offsets.push_back(file.size());
    test::append(file, test::frame(0, {}));
  }
};

void check_records(const recordio_reader& reader, const three_records& expected) {
  REQUIRE(reader.size() == 3);
  for (std::int64_t i = 0; i < 3; ++i) {
    CHECK(reader.offset(i) == expected.offsets[std::size_t(i)]);
    const auto payload = reader.read(i);
    REQUIRE(payload.size() == expected.payloads[std::size_t(i)].size());
    CHECK(payload == expected.payloads[std::size_t(i)]);
  }
}

} // namespace

TEST_CASE("recordio_reader walks a file without an index and rejoins split records",
          "[io][recordio]") {
  test::temp_dir dir;
  three_records expected;
  REQUIRE(expected.offsets == std::vector<std::uint64_t>{0, 16, 52});
  test::write_file(dir.file("a.rec"), expected.file);
  check_records(recordio_reader(dir.file("a.rec")), expected);
}

TEST_CASE("recordio_reader takes offsets from an .idx in line order", "[io][recordio]") {
  test::temp_dir dir;
  three_records expected;
  test::write_file(dir.file("a.rec"), expected.file);
  const std::string idx = "0\t0\n1\t16\n2\t52\n";
  test::write_file(dir.file("a.idx"), test::bytes(idx.begin(), idx.end()));
  check_records(recordio_reader(dir.file("a.rec"), {dir.file("a.idx"), false}), expected);

  const std::string crlf = "7\t0\r\n\n3\t16\n9\t52\n"; // CRLF, blank lines, any keys are fine
  test::write_file(dir.file("b.idx"), test::bytes(crlf.begin(), crlf.end()));
  recordio_reader reader(dir.file("a.rec"), {dir.file("b.idx"), false});
  REQUIRE(reader.size() == 3);
  CHECK(reader.read(2).empty());
  CHECK_THROWS_AS(reader.read(3), std::out_of_range);

  // Out of file order, or a subset: refused (tests/io/recordio_index_test.cpp has the rest).
  const std::string reordered = "7\t52\n3\t0\n";
  test::write_file(dir.file("c.idx"), test::bytes(reordered.begin(), reordered.end()));
  CHECK_THROWS_WITH(recordio_reader(dir.file("a.rec"), {dir.file("c.idx"), false}),
                    Contains("c.idx: line 2: offset 0 does not come after"));
}

TEST_CASE("recordio_reader refuses a malformed .idx naming the line", "[io][recordio]") {
  test::temp_dir dir;
  three_records expected;
  test::write_file(dir.file("a.rec"), expected.file);
  auto open_with = [&](const std::string& idx) {
    test::write_file(dir.file("x.idx"), test::bytes(idx.begin(), idx.end()));
    return recordio_reader(dir.file("a.rec"), {dir.file("x.idx"), false});
  };
  CHECK_THROWS_WITH(open_with("0\t0\n1 16\n"),
                    Contains("x.idx: line 2") && Contains("key<TAB>byte offset"));
  CHECK_THROWS_WITH(open_with("0\tzero\n"), Contains("line 1"));
  CHECK_THROWS_WITH(open_with("0\t1000\n"), Contains("past the end of") && Contains("a.rec"));
  CHECK_THROWS_WITH(open_with("0\t6\n"), Contains("not 4-byte aligned"));
  CHECK_THROWS_WITH(recordio_reader(dir.file("a.rec"), {dir.file("missing.idx"), false}),
                    Contains("missing.idx: cannot open"));
  CHECK_THROWS_WITH(recordio_reader(dir.file("none.rec")), Contains("none.rec: cannot open"));
}

TEST_CASE("recordio_reader names file, record and offset of a corrupt record", "[io][recordio]") {
  test::temp_dir dir;
  three_records good;
  const auto path = dir.file("bad.rec");

  SECTION("bad magic") {
    auto file = good.file;
    file[16] ^= 0xff; // record 1's magic
    test::write_file(path, file);
    CHECK_THROWS_WITH(recordio_reader(path), Contains("bad.rec: record 1 at offset 16: bad magic")
                                               && Contains("expected 0xced7230a"));
  }
  SECTION("bad length") {
    auto file = good.file;
    file[4 + 1] = 0x40; // record 0's length becomes 0x4005: past the end
    test::write_file(path, file);
    CHECK_THROWS_WITH(recordio_reader(path),
                      Contains("record 0 at offset 0: length 16389 runs past the end"));
  }
  SECTION("truncated file") {
    auto file = good.file;
    file.resize(good.offsets[2] + 5); // record 2's header cut after 5 bytes
    test::write_file(path, file);
    CHECK_THROWS_WITH(recordio_reader(path),
                      Contains("record 2 at offset 52: the file ends inside a record header"));
  }
  SECTION("truncated inside a split record") {
    auto file = good.file;
    file.resize(44); // inside the header of record 1's last part
    test::write_file(path, file);
    CHECK_THROWS_WITH(recordio_reader(path),
                      Contains("record 1 at offset 16: frame at offset 40: the file ends "
                               "inside a record header (4 of 8 bytes left"));
  }
  SECTION("continuation flags out of order") {
    test::bytes file = test::frame(2, {1, 2, 3, 4});
    test::write_file(path, file);
    CHECK_THROWS_WITH(
      recordio_reader(path),
      Contains("record 0 at offset 0: continuation flag 2 (middle part) where a record starts"));
    file = test::frame(1, {1, 2, 3, 4});
    test::append(file, test::frame(0, {5}));
    test::write_file(path, file);
    CHECK_THROWS_WITH(recordio_reader(path),
                      Contains("continuation flag 0 (whole record) inside a record split"));
  }
  SECTION("with an index the error comes when opening too (the index is checked by a walk)") {
    auto file = good.file;
    file[16] ^= 0xff;
    test::write_file(path, file);
    const std::string idx = "0\t0\n1\t16\n2\t52\n";
    test::write_file(dir.file("bad.idx"), test::bytes(idx.begin(), idx.end()));
    CHECK_THROWS_WITH(recordio_reader(path, {dir.file("bad.idx"), false}),
                      Contains("bad.rec: record 1 at offset 16: bad magic"));
    recordio_reader reader(path, {dir.file("bad.idx"), true});
    CHECK(reader.read(0) == good.payloads[0]);
    CHECK_THROWS_AS(reader.read(1), io_error);
    CHECK_THROWS_WITH(reader.read(1), Contains("bad.rec: record 1 at offset 16: bad magic"));
    CHECK(reader.read(2).empty());
  }
}

TEST_CASE("recordio_reader skipping keeps a corrupt stretch as one bad entry and resyncs",
          "[io][recordio]") {
  test::temp_dir dir;
  three_records good;
  auto file = good.file;
  file[16] ^= 0xff; // record 1's first frame is lost; its other parts must not become records
  test::write_file(dir.file("bad.rec"), file);
  recordio_reader reader(dir.file("bad.rec"), {"", true});
  REQUIRE(reader.size() == 3);
  CHECK(reader.bad_entries() == 1);
  CHECK(reader.read(0) == good.payloads[0]);
  CHECK_THROWS_WITH(reader.read(1), Contains("record 1 at offset 16: bad magic"));
  CHECK(reader.offset(2) == 52);
  CHECK(reader.read(2).empty());

  file = good.file;
  file.resize(good.offsets[2] + 3); // a truncated tail is a bad entry too
  test::write_file(dir.file("cut.rec"), file);
  recordio_reader cut(dir.file("cut.rec"), {"", true});
  REQUIRE(cut.size() == 3);
  CHECK(cut.bad_entries() == 1);
  CHECK_THROWS_WITH(cut.read(2), Contains("the file ends inside a record header"));
}
