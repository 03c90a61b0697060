// Tests for io/batch_source.cpp: batches are pure functions of (seed, epoch, index) whatever
// the thread, parts partition each epoch, and crop / mirror / normalization produce exactly
// the values worked out by hand here.
#include <troupe/io/batch_source.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <thread>

#include <catch2/catch.hpp>
#include <tbb/task_arena.h>

#include <troupe/io/synthetic.hpp>

using namespace troupe;
using Catch::Contains;

namespace {

// `count` examples of shape [1, 1, 2] whose two bytes spell the example's index, so a batch
// value tells which example it came from; label = index % 10.
std::shared_ptr<const dataset> numbered_dataset(std::int64_t count) {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < count; ++i) {
    pixels.push_back(std::uint8_t(i / 256));
    pixels.push_back(std::uint8_t(i % 256));
    labels.push_back(std::int32_t(i % 10));
  }
  return std::make_shared<const dataset>("numbered", shape_t{1, 1, 2}, 10, pixels, labels);
}

// The example indices of a batch from numbered_dataset (no normalization).
std::vector<std::int64_t> example_ids(const batch& b) {
  std::vector<std::int64_t> ids;
  const float* v = b.images.data();
  for (std::int64_t i = 0; i < b.images.dim(0); ++i)
    ids.push_back(std::lround(v[2 * i] * 255) * 256 + std::lround(v[2 * i + 1] * 255));
  return ids;
}

std::vector<std::int64_t> epoch_ids(const batch_source& source, std::int64_t epoch) {
  std::vector<std::int64_t> ids;
  for (std::int64_t b = 0; b < source.batches_per_epoch(); ++b) {
    const auto part = example_ids(source.make(epoch, b));
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

bool same_batch(const batch& a, const batch& b) {
  return a.labels == b.labels && a.images.shape() == b.images.shape() && a.epoch == b.epoch
         && a.index == b.index
         && std::memcmp(a.images.data(), b.images.data(), a.images.bytes()) == 0;
}

batch_source_options options_with_batch(std::int64_t batch_size) {
  batch_source_options options;
  options.batch_size = batch_size;
  return options;
}

} // namespace

TEST_CASE("batches are a pure function of (seed, epoch, index) on any thread",
          "[io][batch_source]") {
  synthetic_options data_options;
  data_options.sample_shape = {3, 8, 8};
  data_options.train_size = 500;
  const auto data = make_synthetic(data_options, split::train);
  batch_source_options options = options_with_batch(32);
  options.seed = 11;
  options.augment = {{0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f}, 2, true};
  const batch_source source(data, options);
  REQUIRE(source.batches_per_epoch() == 16);

  // Reference built serially, epoch by epoch, on one thread.
  std::vector<batch> reference;
  tbb::task_arena one_thread(1);
  one_thread.execute([&] {
    for (std::int64_t epoch = 0; epoch < 3; ++epoch)
      for (std::int64_t b = 0; b < 16; ++b)
        reference.push_back(source.make(epoch, b));
  });

  // Four threads build every batch in different orders, crossing epochs, on a copy that
  // shares the order cache and on an independent source.
  const batch_source copy = source;
  const batch_source independent(data, options);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const batch_source& mine = t % 2 ? copy : independent;
      for (std::size_t k = 0; k < reference.size(); ++k) {
        const std::size_t j = (k * (2 * std::size_t(t) + 5) + std::size_t(t)) % reference.size();
        if (!same_batch(mine.make(std::int64_t(j / 16), std::int64_t(j % 16)), reference[j]))
          ++mismatches[std::size_t(t)];
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  CHECK(mismatches == std::vector<int>(4, 0));
  CHECK(same_batch(source.make(1, 5), reference[16 + 5]));
}

TEST_CASE("each epoch is a different permutation of the whole dataset", "[io][batch_source]") {
  const auto data = numbered_dataset(1000);
  const batch_source source(data, options_with_batch(64));
  std::set<std::vector<std::int64_t>> orders;
  const auto first_epoch = epoch_ids(source, 0);
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    const auto ids = epoch_ids(source, epoch);
    auto sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t i = 0; i < 1000; ++i)
      REQUIRE(sorted[std::size_t(i)] == i);
    orders.insert(ids);
  }
  CHECK(orders.size() == 4);
  // The seed matters too, and an epoch revisited after others is unchanged (cache eviction).
  batch_source_options other = options_with_batch(64);
  other.seed = 1;
  CHECK(epoch_ids(batch_source(data, other), 0) != epoch_ids(source, 0));
  CHECK(epoch_ids(source, 0) == first_epoch);
}

TEST_CASE("labels travel with their examples", "[io][batch_source]") {
  const auto data = numbered_dataset(300);
  const batch_source source(data, options_with_batch(50));
  const auto b = source.make(2, 3);
  const auto ids = example_ids(b);
  REQUIRE(b.labels.size() == ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    CHECK(b.labels[i] == ids[i] % 10);
  CHECK(b.epoch == 2);
  CHECK(b.index == 3);
}

TEST_CASE("without shuffle batches follow the dataset order", "[io][batch_source]") {
  batch_source_options options = options_with_batch(4);
  options.shuffle = false;
  const batch_source source(numbered_dataset(10), options);
  CHECK(example_ids(source.make(0, 1)) == std::vector<std::int64_t>{4, 5, 6, 7});
  CHECK(epoch_ids(source, 3) == epoch_ids(source, 0));
}

TEST_CASE("parts are disjoint and together cover the epoch", "[io][batch_source]") {
  const auto data = numbered_dataset(100);
  std::vector<std::int64_t> all;
  for (int part = 0; part < 3; ++part) {
    batch_source_options options = options_with_batch(8);
    options.seed = 5;
    options.part = part;
    options.parts = 3;
    const batch_source source(data, options);
    CHECK(source.samples_per_epoch() == (part == 0 ? 34 : 33));
    CHECK(source.batches_per_epoch() == 5);
    const auto ids = epoch_ids(source, 2);
    CHECK(std::int64_t(ids.size()) == source.samples_per_epoch());
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  REQUIRE(all.size() == 100);
  for (std::int64_t i = 0; i < 100; ++i)
    CHECK(all[std::size_t(i)] == i);
}

TEST_CASE("part p takes every parts-th position of the order", "[io][batch_source]") {
  batch_source_options options = options_with_batch(3);
  options.shuffle = false;
  options.part = 1;
  options.parts = 4;
  const batch_source source(numbered_dataset(10), options);
  CHECK(epoch_ids(source, 0) == std::vector<std::int64_t>{1, 5, 9});
}

TEST_CASE("the last short batch is kept unless drop_last", "[io][batch_source]") {
  const auto data = numbered_dataset(10);
  batch_source_options options = options_with_batch(4);
  const batch_source keep(data, options);
  REQUIRE(keep.batches_per_epoch() == 3);
  CHECK(keep.samples_per_epoch() == 10);
  const auto last = keep.make(0, 2);
  CHECK(last.images.shape() == shape_t{2, 1, 1, 2});
  CHECK(last.labels.size() == 2);
  CHECK(keep.make(0, 0).images.shape() == shape_t{4, 1, 1, 2});

  options.drop_last = true;
  const batch_source drop(data, options);
  CHECK(drop.batches_per_epoch() == 2);
  REQUIRE_THROWS_AS(drop.make(0, 2), std::out_of_range);
  REQUIRE_THROWS_WITH(keep.make(0, 3), Contains("batch 3") && Contains("[0, 3)"));
  REQUIRE_THROWS_AS(keep.make(-1, 0), std::out_of_range);
}

TEST_CASE("normalization computes (pixel / 255 - mean) / stdev exactly", "[io][batch_source]") {
  // Two channels of 1 x 2 covering low, middle and high bytes.
  const std::vector<std::uint8_t> pixels{0, 255, 128, 7};
  const auto data = std::make_shared<const dataset>("two channels", shape_t{2, 1, 2}, 2, pixels,
                                                    std::vector<std::int32_t>{1});
  batch_source_options options = options_with_batch(1);
  const float plain_values[] = {0.0f, 1.0f, 128.0f / 255.0f, 7.0f / 255.0f};
  const auto plain = batch_source(data, options).make(0, 0);
  for (int i = 0; i < 4; ++i)
    CHECK(plain.images.data()[i] == plain_values[i]);

  options.augment.mean = {0.25f, 0.5f};
  options.augment.stdev = {0.5f, 0.125f};
  const auto normalized = batch_source(data, options).make(0, 0);
  for (int i = 0; i < 4; ++i) {
    const std::size_t c = std::size_t(i / 2);
    const float expected =
      (float(pixels[std::size_t(i)]) / 255.0f - options.augment.mean[c]) / options.augment.stdev[c];
    CHECK(normalized.images.data()[i] == expected);
  }
  CHECK(normalized.images.data()[0] == -0.5f);
  CHECK(normalized.images.data()[1] == 1.5f);
}

TEST_CASE("crop and mirror move whole pixels and pad with black", "[io][batch_source]") {
  // A 2-channel 3 x 4 image; channel 1 is channel 0 plus 100, so both must move together.
  std::vector<std::uint8_t> pixels(24);
  for (int i = 0; i < 12; ++i) {
    pixels[std::size_t(i)] = std::uint8_t(i + 1);
    pixels[std::size_t(12 + i)] = std::uint8_t(i + 101);
  }
  const auto data = std::make_shared<const dataset>("tiny", shape_t{2, 3, 4}, 1, pixels,
                                                    std::vector<std::int32_t>(1, 0));

  // Every legal outcome, built directly: zero-pad by 1 to 5 x 6, take a 3 x 4 window at
  // (dy, dx) in [0, 2]^2, then optionally reverse each row.
  std::set<std::vector<int>> outcomes;
  for (int dy = 0; dy <= 2; ++dy)
    for (int dx = 0; dx <= 2; ++dx)
      for (int flip = 0; flip <= 1; ++flip) {
        std::vector<int> image;
        for (int c = 0; c < 2; ++c)
          for (int y = 0; y < 3; ++y) {
            std::vector<int> row;
            for (int x = 0; x < 4; ++x) {
              const int py = y + dy - 1, px = x + dx - 1;
              const bool inside = py >= 0 && py < 3 && px >= 0 && px < 4;
              row.push_back(inside ? pixels[std::size_t(c * 12 + py * 4 + px)] : 0);
            }
            if (flip)
              std::reverse(row.begin(), row.end());
            image.insert(image.end(), row.begin(), row.end());
          }
        outcomes.insert(image);
      }
  REQUIRE(outcomes.size() == 18);

  batch_source_options options = options_with_batch(1);
  options.augment.pad_crop = 1;
  options.augment.mirror = true;
  const batch_source source(data, options);
  std::set<std::vector<int>> seen;
  for (std::int64_t epoch = 0; epoch < 400; ++epoch) {
    const auto b = source.make(epoch, 0);
    std::vector<int> image;
    for (int i = 0; i < 24; ++i)
      image.push_back(int(std::lround(b.images.data()[i] * 255)));
    REQUIRE(outcomes.count(image) == 1);
    seen.insert(image);
  }
  CHECK(seen.size() == 18); // every offset and both flips occur

  options.augment = {};
  const auto untouched = batch_source(data, options).make(7, 0);
  for (int i = 0; i < 24; ++i)
    CHECK(untouched.images.data()[i] == float(pixels[std::size_t(i)]) / 255.0f);
}

TEST_CASE("crop padding is black before normalization", "[io][batch_source]") {
  const auto data = std::make_shared<const dataset>(
    "white", shape_t{1, 2, 2}, 1, std::vector<std::uint8_t>(4, 255), std::vector<std::int32_t>{0});
  batch_source_options options = options_with_batch(1);
  options.augment = {{0.5f}, {0.25f}, 5, false};
  const batch_source source(data, options);
  const float white = (1.0f - 0.5f) / 0.25f, black = (0.0f - 0.5f) / 0.25f;
  bool saw_black = false;
  for (std::int64_t epoch = 0; epoch < 20; ++epoch) {
    const auto b = source.make(epoch, 0);
    for (int i = 0; i < 4; ++i) {
      const float v = b.images.data()[i];
      REQUIRE((v == white || v == black));
      saw_black = saw_black || v == black;
    }
  }
  CHECK(saw_black);
}

TEST_CASE("invalid options name the option and the value", "[io][batch_source]") {
  const auto data = numbered_dataset(10);
  const auto rejects = [&](batch_source_options options, const std::string& message) {
    REQUIRE_THROWS_AS(batch_source(data, options), std::invalid_argument);
    REQUIRE_THROWS_WITH(batch_source(data, options), Contains(message));
  };
  auto options = options_with_batch(0);
  rejects(options, "batch_size must be > 0, got 0");
  options = options_with_batch(-3);
  rejects(options, "batch_size must be > 0, got -3");
  options = options_with_batch(4);
  options.parts = 0;
  rejects(options, "parts must be >= 1, got 0");
  options.parts = 2;
  options.part = 2;
  rejects(options, "part must be in [0, 2), got 2");
  options.part = -1;
  rejects(options, "part must be in [0, 2), got -1");
  options.part = 0;
  options.parts = 1;
  options.augment.mean = {0.5f, 0.5f};
  options.augment.stdev = {0.5f, 0.5f};
  rejects(options, "augment.mean has 2 values but the dataset has 1 channels");
  options.augment.mean = {0.5f};
  options.augment.stdev = {};
  rejects(options, "augment.stdev has 0 values");
  options.augment.stdev = {0.0f};
  rejects(options, "augment.stdev[0] must be positive and finite, got 0");
  options.augment.stdev = {-1.0f};
  rejects(options, "augment.stdev[0] must be positive and finite, got -1");
  options.augment.stdev = {0.5f};
  options.augment.pad_crop = -2;
  rejects(options, "augment.pad_crop must be >= 0, got -2");
  options.augment.pad_crop = 0;
  options.parts = 12;
  options.part = 11;
  rejects(options, "part 11 of 12 has no examples");
  options.parts = 1;
  options.part = 0;
  options.batch_size = 11;
  options.drop_last = true;
  rejects(options, "batch_size 11 with drop_last leaves no batch");
  REQUIRE_THROWS_WITH(batch_source(nullptr, options_with_batch(1)), Contains("dataset is null"));
}

TEST_CASE("a recycled buffer is written only when it has the shape and no other reader",
          "[io][batch_source]") {
  batch_source source(numbered_dataset(100), options_with_batch(16));
  const auto fresh = source.make(1, 2);
  REQUIRE(fresh.images.numel() == 16 * 2);

  // Unique and of the batch's shape: the same storage comes back, holding the same batch.
  auto spare = source.make(0, 0).images;
  const float* storage = spare.data();
  auto reused = source.make(1, 2, std::move(spare));
  CHECK(reused.images.data() == storage);
  CHECK(same_batch(reused, fresh));

  // Another handle still reads it: new storage, and the reader's values stay as they were.
  auto held = source.make(0, 0);
  const std::vector<float> before(held.images.data(), held.images.data() + held.images.numel());
  auto shared = held.images;
  auto written = source.make(1, 2, shared);
  CHECK(written.images.data() != held.images.data());
  CHECK(same_batch(written, fresh));
  CHECK(std::equal(before.begin(), before.end(), held.images.data()));

  // The last batch is shorter (100 = 6 x 16 + 4): a full-size buffer is not used for it.
  auto full = source.make(0, 0).images;
  const float* full_storage = full.data();
  auto last = source.make(1, 6, std::move(full));
  CHECK(last.images.dim(0) == 4);
  CHECK(last.images.data() != full_storage);
  CHECK(same_batch(last, source.make(1, 6)));
}

TEST_CASE("colour jitter and rotation are refused for images held in memory",
          "[io][batch_source]") {
  batch_source_options o;
  o.batch_size = 4;
  o.augment.saturation = 0.2;
  CHECK_THROWS_WITH(batch_source(numbered_dataset(8), o),
                    "batch_source: colour jitter and rotation apply to decoded images; numbered "
                    "is held in memory");
  o.augment.saturation = 0;
  o.augment.max_rotate_angle = 10;
  CHECK_THROWS_AS(batch_source(numbered_dataset(8), o), std::invalid_argument);
}
