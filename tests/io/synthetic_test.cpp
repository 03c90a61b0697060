// Tests for io/synthetic.cpp: the synthetic dataset is a pure function of its options and
// carries a signal a simple classifier can learn.
#include <troupe/io/synthetic.hpp>

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>
#include <tbb/task_arena.h>

using namespace troupe;
using Catch::Contains;

namespace {

bool same_bytes(const dataset& a, const dataset& b) {
  if (a.size() != b.size() || a.sample_numel() != b.sample_numel())
    return false;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    if (a.label(i) != b.label(i))
      return false;
    for (std::int64_t j = 0; j < a.sample_numel(); ++j)
      if (a.pixels(i)[j] != b.pixels(i)[j])
        return false;
  }
  return true;
}

} // namespace

TEST_CASE("synthetic data has the requested shape, classes and sizes", "[io][synthetic]") {
  synthetic_options options;
  options.sample_shape = {3, 5, 7};
  options.classes = 4;
  options.train_size = 300;
  const auto train = make_synthetic(options, split::train);
  const auto test_split = make_synthetic(options, split::test);
  CHECK(train->size() == 300);
  CHECK(test_split->size() == 50);
  CHECK(synthetic_split_size(options, split::test) == 50);
  CHECK(train->sample_shape() == shape_t{3, 5, 7});
  CHECK(train->classes() == 4);
  CHECK_THAT(train->description(), Contains("synthetic train") && Contains("[3, 5, 7]"));
  options.train_size = 5;
  CHECK(make_synthetic(options, split::test)->size() == 1);
}

TEST_CASE("synthetic data is a pure function of the seed, for any thread count",
          "[io][synthetic]") {
  synthetic_options options;
  options.sample_shape = {1, 12, 12};
  options.train_size = 2000;
  options.seed = 42;
  const auto parallel = make_synthetic(options, split::train);
  tbb::task_arena one_thread(1);
  std::shared_ptr<const dataset> serial;
  one_thread.execute([&] { serial = make_synthetic(options, split::train); });
  CHECK(same_bytes(*parallel, *serial));

  options.seed = 43;
  CHECK_FALSE(same_bytes(*parallel, *make_synthetic(options, split::train)));
  options.seed = 42;
  options.train_size = 12000; // test split of 2000, same size as the train set above
  CHECK_FALSE(same_bytes(*parallel, *make_synthetic(options, split::test)));
}

TEST_CASE("synthetic classes are separable by their means", "[io][synthetic]") {
  // A nearest-class-mean classifier fitted on train must do far better than chance on test,
  // which shows a network has something to learn.
  synthetic_options options;
  options.sample_shape = {1, 16, 16};
  options.classes = 10;
  options.train_size = 3000;
  options.seed = 7;
  const auto train = make_synthetic(options, split::train);
  const auto test_split = make_synthetic(options, split::test);
  const auto numel = train->sample_numel();
  std::vector<double> means(std::size_t(10 * numel), 0.0);
  std::vector<int> counts(10, 0);
  for (std::int64_t i = 0; i < train->size(); ++i) {
    const auto label = train->label(i);
    ++counts[std::size_t(label)];
    for (std::int64_t j = 0; j < numel; ++j)
      means[std::size_t(label * numel + j)] += train->pixels(i)[j];
  }
  for (int k = 0; k < 10; ++k) {
    REQUIRE(counts[std::size_t(k)] > 200); // labels are spread over all classes
    for (std::int64_t j = 0; j < numel; ++j)
      means[std::size_t(k * numel + j)] /= counts[std::size_t(k)];
  }
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < test_split->size(); ++i) {
    int best = -1;
    double best_distance = std::numeric_limits<double>::max();
    for (int k = 0; k < 10; ++k) {
      double distance = 0;
      for (std::int64_t j = 0; j < numel; ++j) {
        const double d = test_split->pixels(i)[j] - means[std::size_t(k * numel + j)];
        distance += d * d;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = k;
      }
    }
    correct += best == test_split->label(i);
  }
  CHECK(double(correct) / double(test_split->size()) > 0.9);
}

TEST_CASE("synthetic options are validated", "[io][synthetic]") {
  synthetic_options options;
  options.sample_shape = {28, 28};
  REQUIRE_THROWS_AS(make_synthetic(options, split::train), std::invalid_argument);
  REQUIRE_THROWS_WITH(make_synthetic(options, split::train), Contains("[28, 28]"));
  options.sample_shape = {1, 28, 28};
  options.classes = 0;
  REQUIRE_THROWS_WITH(make_synthetic(options, split::train),
                      Contains("classes must be >= 1, got 0"));
  options.classes = 10;
  options.train_size = -1;
  REQUIRE_THROWS_WITH(make_synthetic(options, split::train), Contains("size must be >= 0, got -1"));
}
