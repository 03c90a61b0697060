// Tests for io/record_dataset.cpp and io/record_batches.cpp: .rec files of solid-colour JPEGs
// built frame by frame in the test, streamed into batches (labels, colours, shapes, parts,
// determinism), and every bad-record path with and without skipping.
#include <troupe/io/record_dataset.hpp>

#include <cmath>
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include <troupe/io/batch_source.hpp>

#include "tests/io/record_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

// Record i: a (20 + 3i) x (12 + i) JPEG of colour (10 * label, 200, 255 - 10 * label),
// label i % classes; `replace` swaps in a raw payload for one record.
test::bytes build_file(int records, int classes, std::map<int, test::bytes> replace = {}) {
  test::bytes file;
  for (int i = 0; i < records; ++i) {
    const int label = i % classes;
    const auto payload =
      replace.count(i)
        ? replace[i]
        : test::image_payload({float(label)}, std::uint64_t(i),
                              test::solid_jpeg(20 + 3 * i, 12 + i, std::uint8_t(10 * label), 200,
                                               std::uint8_t(255 - 10 * label)));
    test::append(file, test::frame(0, payload));
  }
  return file;
}

record_dataset_options options_for(const std::string& path, int classes, bool skip = false) {
  record_dataset_options o;
  o.path = path;
  o.image_shape = {3, 8, 8};
  o.classes = classes;
  o.skip_bad_records = skip;
  return o;
}

batch_source_options plain(std::int64_t batch_size) {
  batch_source_options b;
  b.batch_size = batch_size;
  b.shuffle = false;
  return b;
}

} // namespace

TEST_CASE("a record dataset decodes each record to its label and colour", "[io][record_dataset]") {
  test::temp_dir dir;
  test::write_file(dir.file("a.rec"), build_file(6, 3));
  const auto data = open_record_dataset(options_for(dir.file("a.rec"), 3));
  REQUIRE(data->size() == 6);
  REQUIRE(data->records() != nullptr);
  CHECK(data->sample_shape() == shape_t{3, 8, 8});
  CHECK(data->classes() == 3);
  CHECK_THAT(data->description(), Contains("a.rec (6 records)"));

  batch_source source(data, plain(4));
  REQUIRE(source.batches_per_epoch() == 2);
  const auto b = source.make(0, 0);
  REQUIRE(b.images.shape() == shape_t{4, 3, 8, 8});
  REQUIRE(b.labels == std::vector<std::int32_t>{0, 1, 2, 0});
  CHECK(b.skipped == 0);
  for (int i = 0; i < 4; ++i) {
    const float* image = b.images.data() + i * 192;
    const float want[3] = {10.0f * b.labels[std::size_t(i)] / 255, 200.0f / 255,
                           (255.0f - 10.0f * b.labels[std::size_t(i)]) / 255};
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 64; ++p)
        REQUIRE(std::abs(image[c * 64 + p] - want[c]) < 4.0f / 255);
  }
  CHECK(source.make(0, 1).images.shape() == shape_t{2, 3, 8, 8});
}

TEST_CASE("record batches are deterministic and split by parts", "[io][record_dataset]") {
  test::temp_dir dir;
  test::write_file(dir.file("a.rec"), build_file(10, 5));
  const auto data = open_record_dataset(options_for(dir.file("a.rec"), 5));
  batch_source_options b = plain(5);
  b.shuffle = true;
  b.seed = 11;
  b.augment.random_resized_crop = true;
  b.augment.mirror = true;
  b.augment.mean = {0.5f, 0.5f, 0.5f};
  b.augment.stdev = {0.25f, 0.25f, 0.25f};
  batch_source source(data, b);
  const auto first = source.make(1, 0), again = source.make(1, 0);
  REQUIRE(first.images.shape() == again.images.shape());
  CHECK(first.labels == again.labels);
  CHECK(std::equal(first.images.data(), first.images.data() + first.images.numel(),
                   again.images.data()));

  // Two parts cover the epoch's records once between them.
  std::multiset<std::int32_t> seen;
  for (int part = 0; part < 2; ++part) {
    b.part = part;
    b.parts = 2;
    batch_source half(data, b);
    REQUIRE(half.samples_per_epoch() == 5);
    for (auto label : half.make(1, 0).labels)
      seen.insert(label);
  }
  CHECK(seen == std::multiset<std::int32_t>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4});
}

TEST_CASE("a bad record is an error naming the file and the record", "[io][record_dataset]") {
  test::temp_dir dir;
  const auto path = dir.file("bad.rec");
  auto corrupt_jpeg = test::solid_jpeg(16, 16, 1, 2, 3);
  corrupt_jpeg.resize(corrupt_jpeg.size() / 2);

  SECTION("label out of range") {
    test::write_file(path, build_file(4, 4));
    batch_source source(open_record_dataset(options_for(path, 3)), plain(4));
    CHECK_THROWS_AS(source.make(0, 0), io_error);
    CHECK_THROWS_WITH(source.make(0, 0),
                      Contains("bad.rec: record 3: label 3 is not a class in [0, 3)"));
  }
  SECTION("a JPEG that does not decode") {
    test::write_file(path, build_file(4, 2, {{2, test::image_payload({1.0f}, 2, corrupt_jpeg)}}));
    batch_source source(open_record_dataset(options_for(path, 2)), plain(4));
    CHECK_THROWS_WITH(source.make(0, 0),
                      Contains("bad.rec: record 2: image (id 2") && Contains("does not decode"));
  }
  SECTION("a header shorter than its labels") {
    test::bytes payload(30, 0);
    payload[0] = 5; // flag 5: five labels after the header, but only 6 bytes follow
    test::write_file(path, build_file(3, 2, {{1, payload}}));
    batch_source source(open_record_dataset(options_for(path, 2)), plain(3));
    CHECK_THROWS_WITH(source.make(0, 0),
                      Contains("bad.rec: record 1: image record header announces 5 labels"));
  }
  SECTION("the lowest bad record is reported whatever the threads did") {
    test::write_file(
      path, build_file(8, 2, {{5, test::bytes(24, 0)}, {6, test::image_payload({9.0f}, 6, {})}}));
    batch_source source(open_record_dataset(options_for(path, 2)), plain(8));
    for (int run = 0; run < 5; ++run)
      CHECK_THROWS_WITH(source.make(0, 0), Contains("record 5:"));
  }
  SECTION("framing errors at open, without skipping") {
    auto file = build_file(3, 2);
    file[0] ^= 1;
    test::write_file(path, file);
    CHECK_THROWS_WITH(open_record_dataset(options_for(path, 2)),
                      Contains("bad.rec: record 0 at offset 0: bad magic"));
  }
}

TEST_CASE("skipping drops bad records from the batch and counts them", "[io][record_dataset]") {
  test::temp_dir dir;
  const auto path = dir.file("bad.rec");
  auto corrupt_jpeg = test::solid_jpeg(16, 16, 1, 2, 3);
  corrupt_jpeg.resize(corrupt_jpeg.size() / 2);
  auto file = build_file(6, 3,
                         {{1, test::image_payload({1.0f}, 1, corrupt_jpeg)},
                          {4, test::image_payload({7.0f}, 4, test::solid_jpeg(8, 8, 0, 0, 0))}});
  const auto truncated_at = file.size();
  test::append(file,
               test::frame(0, test::image_payload({0.0f}, 6, test::solid_jpeg(9, 9, 5, 5, 5))));
  file.resize(truncated_at + 20); // a seventh record cut short
  test::write_file(path, file);

  const auto data = open_record_dataset(options_for(path, 3, true));
  REQUIRE(data->size() == 7);
  CHECK_THAT(data->description(), Contains("1 corrupt stretch(es) kept as bad records"));
  batch_source source(data, plain(4));
  const auto first = source.make(0, 0);
  CHECK(first.skipped == 1);
  REQUIRE(first.images.shape() == shape_t{3, 3, 8, 8});
  CHECK(first.labels == std::vector<std::int32_t>{0, 2, 0});
  const auto second = source.make(0, 1);
  CHECK(second.skipped == 2); // record 4's label and record 6's truncation
  CHECK(second.labels == std::vector<std::int32_t>{2});

  // A batch of nothing but bad records cannot be trained on: an error even when skipping.
  test::write_file(dir.file("all.rec"),
                   build_file(2, 1, {{0, test::bytes(3, 0)}, {1, test::bytes(3, 0)}}));
  batch_source hopeless(open_record_dataset(options_for(dir.file("all.rec"), 1, true)), plain(2));
  CHECK_THROWS_WITH(hopeless.make(0, 0),
                    Contains("every other record of batch 0") && Contains("all.rec: record 0"));
}

TEST_CASE("record datasets refuse pad-crop and non-RGB shapes", "[io][record_dataset]") {
  test::temp_dir dir;
  test::write_file(dir.file("a.rec"), build_file(2, 2));
  auto o = options_for(dir.file("a.rec"), 2);
  o.image_shape = {1, 8, 8};
  CHECK_THROWS_AS(open_record_dataset(o), std::invalid_argument);
  auto b = plain(2);
  b.augment.pad_crop = 4;
  CHECK_THROWS_WITH(batch_source(open_record_dataset(options_for(dir.file("a.rec"), 2)), b),
                    Contains("pad_crop applies to in-memory images"));
}

TEST_CASE("jitter and rotation change record batches deterministically", "[io][record_dataset]") {
  test::temp_dir dir;
  test::write_file(dir.file("a.rec"), build_file(4, 2));
  const auto data = open_record_dataset(options_for(dir.file("a.rec"), 2));
  const auto plain_batch = batch_source(data, plain(4)).make(0, 0);
  for (auto set : {+[](augment_options& a) { a.brightness = 0.5; },
                   +[](augment_options& a) { a.max_rotate_angle = 90; }}) {
    auto b = plain(4);
    b.seed = 3;
    set(b.augment);
    batch_source source(data, b);
    const auto one = source.make(1, 0), two = source.make(1, 0);
    CHECK(std::equal(one.images.data(), one.images.data() + one.images.numel(), two.images.data()));
    CHECK_FALSE(std::equal(one.images.data(), one.images.data() + one.images.numel(),
                           plain_batch.images.data()));
    CHECK(one.labels == plain_batch.labels);
  }
  auto bad = plain(4);
  bad.augment.contrast = 1.5;
  CHECK_THROWS_WITH(batch_source(data, bad), Contains("contrast must be between 0 and 1"));
}

TEST_CASE("open_dataset opens recordio by name with its index", "[io][record_dataset]") {
  test::temp_dir dir;
  test::write_file(dir.file("a.rec"), build_file(3, 3));
  const std::string partial = "0\t0\n";
  test::write_file(dir.file("p.idx"), test::bytes(partial.begin(), partial.end()));
  dataset_options d;
  d.name = "recordio";
  d.dir = dir.file("a.rec");
  d.record_shape = {3, 4, 4};
  d.record_classes = 3;
  // An index of 1 of its 3 records is refused naming the index (rather than training on 1).
  d.record_index = dir.file("p.idx");
  CHECK_THROWS_WITH(open_dataset(d),
                    Contains("p.idx lists 1 record, ") && Contains("a.rec holds 3 records"));
  recordio_reader reader(dir.file("a.rec"));
  std::string idx;
  for (std::int64_t i = 0; i < reader.size(); ++i)
    idx += std::to_string(i) + "\t" + std::to_string(reader.offset(i)) + "\n";
  test::write_file(dir.file("a.idx"), test::bytes(idx.begin(), idx.end()));
  d.record_index = dir.file("a.idx");
  const auto data = open_dataset(d);
  CHECK(data->size() == 3);
  CHECK(data->sample_shape() == shape_t{3, 4, 4});
}
