// Tests that recordio_reader checks an `.idx` against its `.rec` before anything is read:
// an index of zeros, a partial one, another file's, an empty one, one
// past the end or off a record's start are refused naming the `.idx`; a correct one (also with
// a record split into parts, and with skipping over a corrupt stretch) still reads every
// record. Files are built frame by frame from the format (tests/io/record_files.hpp).
#include <troupe/io/recordio_reader.hpp>

#include <catch2/catch.hpp>

#include "tests/io/record_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

// `count` records of varied sizes (record i: `base + (7 i) % 13` bytes of value i), so two
// files built with different bases have records at different offsets.
struct record_file {
  test::bytes file;
  std::vector<test::bytes> payloads;
  std::vector<std::uint64_t> offsets;
  record_file(int count, std::size_t base) {
    for (int i = 0; i < count; ++i) {
      payloads.emplace_back(base + std::size_t(7 * i) % 13, std::uint8_t(i));
      offsets.push_back(file.size());
      test::append(file, test::frame(0, payloads.back()));
    }
  }
  std::string index(std::size_t first = 0, std::size_t end = std::size_t(-1)) const {
    std::string text;
    for (std::size_t i = first; i < std::min(end, offsets.size()); ++i)
      text += std::to_string(i) + "\t" + std::to_string(offsets[i]) + "\n";
    return text;
  }
};

struct fixture {
  test::temp_dir dir;
  record_file rec{18, 5};
  fixture() { test::write_file(dir.file("x.rec"), rec.file); }
  recordio_reader open(const std::string& idx, bool skip = false) const {
    test::write_file(dir.file("x.idx"), test::bytes(idx.begin(), idx.end()));
    return recordio_reader(dir.file("x.rec"), {dir.file("x.idx"), skip});
  }
};

} // namespace

TEST_CASE("a correct .idx still opens and reads every record", "[io][recordio][recordio_index]") {
  fixture f;
  const auto reader = f.open(f.rec.index());
  REQUIRE(reader.size() == 18);
  for (std::int64_t i = 0; i < 18; ++i) {
    CHECK(reader.offset(i) == f.rec.offsets[std::size_t(i)]);
    CHECK(reader.read(i) == f.rec.payloads[std::size_t(i)]);
  }
  // Keys are the index's own business (MXNet's are the .lst's ids, in any order).
  std::string rekeyed;
  for (std::size_t i = 0; i < 18; ++i)
    rekeyed += std::to_string(100 - i) + "\t" + std::to_string(f.rec.offsets[i]) + "\r\n\n";
  CHECK(f.open(rekeyed).size() == 18);
}

TEST_CASE("an .idx of zeros is refused, not read as record 0 eighteen times",
          "[io][recordio][recordio_index]") {
  fixture f;
  std::string zeros;
  for (int i = 0; i < 18; ++i)
    zeros += std::to_string(i) + "\t0\n";
  CHECK_THROWS_AS(f.open(zeros), io_error);
  CHECK_THROWS_WITH(f.open(zeros),
                    Contains("x.idx: line 2: offset 0 does not come after the previous "
                             "line's offset 0"));
}

TEST_CASE("an .idx listing 5 of 18 records is refused with both counts",
          "[io][recordio][recordio_index]") {
  fixture f;
  CHECK_THROWS_WITH(
    f.open(f.rec.index(0, 5)),
    Contains("x.idx lists 5 records, ") && Contains("x.rec holds 18 records")
      && Contains("record 5 at byte " + std::to_string(f.rec.offsets[5]) + " is not listed"));
  // A gap in the middle names the first record left out.
  const std::string gap = f.rec.index(0, 3) + f.rec.index(4);
  CHECK_THROWS_WITH(f.open(gap),
                    Contains("x.idx lists 17 records") && Contains("record 3 at byte"));
}

TEST_CASE("another .rec's .idx is refused naming the line that misses",
          "[io][recordio][recordio_index]") {
  fixture f;
  const record_file other(18, 3); // same count, smaller records: offsets inside x.rec
  REQUIRE(other.offsets[1] != f.rec.offsets[1]);
  CHECK_THROWS_WITH(f.open(other.index()),
                    Contains("x.idx: line 2: offset " + std::to_string(other.offsets[1])
                             + " is not the start of a record in ")
                      && Contains("x.rec (record 0 starts at byte 0;"));
}

TEST_CASE("an empty .idx names the .idx, not the .rec", "[io][recordio][recordio_index]") {
  fixture f;
  CHECK_THROWS_WITH(f.open(""),
                    Contains("x.idx is empty but ") && Contains("x.rec holds 18 records"));
  CHECK_THROWS_WITH(f.open("\n\r\n"), Contains("x.idx is empty"));
}

TEST_CASE("an .idx offset past the end or off a record's magic is refused",
          "[io][recordio][recordio_index]") {
  fixture f;
  const auto end = std::to_string(f.rec.file.size());
  CHECK_THROWS_WITH(f.open(f.rec.index(0, 17) + "17\t" + end + "\n"),
                    Contains("x.idx: line 18: offset " + end + " is past the end of"));
  // Byte 12 lies in record 0's payload: aligned, inside the file, but no magic there.
  CHECK_THROWS_WITH(f.open("0\t0\n1\t12\n"),
                    Contains("x.idx: line 2: offset 12 is not the start of a record")
                      && Contains("record 0 starts at byte 0"));
  CHECK_THROWS_WITH(f.open("0\t" + std::to_string(f.rec.offsets[1]) + "\n1\t0\n"),
                    Contains("x.idx: line 2: offset 0 does not come after"));
}

TEST_CASE("an .idx must list the start of a split record, not its later parts",
          "[io][recordio][recordio_index]") {
  test::temp_dir dir;
  test::bytes file = test::frame(1, {1, 2, 3, 4}); // parts at 0, 12, 24; then a record at 36
  test::append(file, test::frame(2, {5, 6, 7, 8}));
  test::append(file, test::frame(3, {9}));
  test::append(file, test::frame(0, {7}));
  test::write_file(dir.file("s.rec"), file);
  auto open = [&](const std::string& idx) {
    test::write_file(dir.file("s.idx"), test::bytes(idx.begin(), idx.end()));
    return recordio_reader(dir.file("s.rec"), {dir.file("s.idx"), false});
  };
  const auto reader = open("0\t0\n1\t36\n");
  REQUIRE(reader.size() == 2);
  CHECK(reader.read(0).size() == 4 + 4 + 4 + 4 + 1);
  CHECK_THROWS_WITH(open("0\t0\n1\t12\n2\t36\n"),
                    Contains("s.idx: line 2: offset 12 is not the start"));
}

TEST_CASE("with skipping, index entries inside a corrupt stretch read as bad",
          "[io][recordio][recordio_index]") {
  fixture f;
  auto file = f.rec.file;
  file[f.rec.offsets[3]] ^= 0xff;     // record 3's magic
  file[f.rec.offsets[4] + 1] ^= 0xff; // and record 4's: one stretch of two records
  test::write_file(f.dir.file("x.rec"), file);
  CHECK_THROWS_WITH(f.open(f.rec.index()),
                    Contains("x.rec: record 3 at offset") && Contains("bad magic"));
  const auto reader = f.open(f.rec.index(), true);
  REQUIRE(reader.size() == 18);
  CHECK(reader.bad_entries() == 2);
  CHECK_THROWS_WITH(reader.read(3), Contains("bad magic"));
  CHECK_THROWS_WITH(reader.read(4), Contains("bad magic"));
  for (std::int64_t i : {0, 2, 5, 17})
    CHECK(reader.read(i) == f.rec.payloads[std::size_t(i)]);
  // A record after the stretch left out is still a partial index.
  CHECK_THROWS_WITH(f.open(f.rec.index(0, 6) + f.rec.index(7), true),
                    Contains("x.idx lists 17 records"));
}
