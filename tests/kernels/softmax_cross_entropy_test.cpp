// Fused softmax + cross-entropy against a double-precision reference, stability with huge
// logits, the gradient of the mean loss by finite differences, accuracy and top-k counting
// (against a sort-based reference, ties included), and errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "test_util.hpp"
#include <troupe/kernels/softmax_cross_entropy.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

std::vector<std::int32_t> make_labels(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (auto& l : labels)
    l = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(k));
  return labels;
}

// Mean cross-entropy in double, straight from the definition.
double reference_loss_sum(const tensor& logits, const std::vector<std::int32_t>& labels,
                          std::vector<double>* probabilities) {
  std::int64_t n = logits.dim(0), k = logits.dim(1);
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double top = -1e300, sum = 0;
    for (std::int64_t j = 0; j < k; ++j)
      top = std::max(top, static_cast<double>(logits.data()[i * k + j]));
    for (std::int64_t j = 0; j < k; ++j)
      sum += std::exp(logits.data()[i * k + j] - top);
    for (std::int64_t j = 0; j < k; ++j)
      if (probabilities)
        probabilities->push_back(std::exp(logits.data()[i * k + j] - top) / sum);
    total += -(logits.data()[i * k + labels[i]] - top - std::log(sum));
  }
  return total;
}

// Top-k hits by sorting each row's classes, larger logit first and lower index on ties (a
// stable sort of the indices), and looking for the label among the first k.
std::int64_t reference_top_k(const tensor& logits, const std::vector<std::int32_t>& labels,
                             std::int64_t k) {
  const std::int64_t n = logits.dim(0), classes = logits.dim(1);
  std::int64_t hits = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = logits.data() + i * classes;
    std::vector<std::int32_t> order(static_cast<std::size_t>(classes));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return row[a] > row[b]; });
    hits += std::find(order.begin(), order.begin() + k, labels[i]) != order.begin() + k;
  }
  return hits;
}

// Logits drawn from a few integer values, so most rows hold ties, some around the label.
tensor tied_logits(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  tensor t = tensor::uninitialized({n, k});
  std::mt19937_64 gen(seed);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = static_cast<float>(gen() % 4);
  return t;
}

} // namespace

TEST_CASE("softmax cross-entropy matches the definition", "[softmax]") {
  for (const shape_t& s : {shape_t{128, 10}, shape_t{3, 1000}, shape_t{1, 2}}) {
    tensor logits = random_tensor(s, 1, -4.0f, 4.0f), p(s);
    auto labels = make_labels(s[0], s[1], 2);
    auto r = softmax_cross_entropy_forward(logits, labels, p);
    std::vector<double> want_p;
    double want = reference_loss_sum(logits, labels, &want_p);
    CHECK(r.loss_sum == Approx(want).epsilon(1e-5));
    CHECK(r.count == s[0]);
    require_close(p, want_p, 1e-5, 1e-7);
    CHECK(r.correct == count_correct(logits, labels));
  }
}

TEST_CASE("softmax cross-entropy is stable for huge logits", "[softmax]") {
  tensor logits = tensor::from_values({2, 3}, {1000.0f, 0.0f, -1000.0f, 50.0f, 50.0f, 50.0f});
  tensor p({2, 3});
  auto r = softmax_cross_entropy_forward(logits, {2, 1}, p);
  CHECK(std::isfinite(r.loss_sum));
  CHECK(r.loss_sum == Approx(2000.0 + std::log(3.0)).epsilon(1e-6));
  CHECK(p.data()[0] == Approx(1.0f));
  CHECK(p.data()[4] == Approx(1.0f / 3));
  CHECK(r.correct == 0); // row 0 picks class 0; row 1 ties and picks the first
}

TEST_CASE("count_correct counts arg-max hits", "[softmax]") {
  tensor logits = tensor::from_values({3, 3}, {0, 1, 0, 5, 2, 1, 0, 0, 9});
  CHECK(count_correct(logits, {1, 0, 1}) == 2);
}

TEST_CASE("softmax cross-entropy gradient matches finite differences", "[softmax][gradient]") {
  shape_t s{4, 6};
  tensor logits = random_tensor(s, 3, -2.0f, 2.0f), p(s), d(s);
  auto labels = make_labels(4, 6, 4);
  auto objective = [&] { return softmax_cross_entropy_forward(logits, labels, p).loss_sum / 4.0; };
  objective();
  softmax_cross_entropy_backward(p, labels, d);
  check_gradient("logits", logits, d, objective, 1e-2, 1e-2, 1e-4);
  // In place on the probabilities, as a loss layer may do.
  softmax_cross_entropy_forward(logits, labels, p);
  softmax_cross_entropy_backward(p, labels, p);
  require_close(p, d, 1e-6, 1e-7);
}

TEST_CASE("softmax cross-entropy rejects bad input", "[softmax][errors]") {
  tensor logits({2, 3}), p({2, 3});
  REQUIRE_THROWS_WITH(softmax_cross_entropy_forward(logits, {0, 3}, p),
                      Catch::Contains("row 1") && Catch::Contains("3"));
  REQUIRE_THROWS_AS(softmax_cross_entropy_forward(logits, {0, -1}, p), std::out_of_range);
  REQUIRE_THROWS_WITH(softmax_cross_entropy_forward(logits, {0}, p), Catch::Contains("[2, 3]"));
  tensor p_bad({3, 2});
  REQUIRE_THROWS_WITH(softmax_cross_entropy_forward(logits, {0, 1}, p_bad),
                      Catch::Contains("[3, 2]"));
  tensor flat({6});
  REQUIRE_THROWS_WITH(count_correct(flat, {0}), Catch::Contains("[6]"));
  REQUIRE_THROWS_WITH(softmax_cross_entropy_backward(logits, {0, 1}, p_bad),
                      Catch::Contains("[3, 2]"));
}

TEST_CASE("top-k counts the labels among the k largest logits, ties by lower index", "[softmax]") {
  // Row 0: class 1 and 2 tie for the largest; class 1 comes first. Row 1: a four-way tie.
  const tensor logits = tensor::from_values({2, 4}, {1, 3, 3, 0, 2, 2, 2, 2});
  CHECK(count_top_k(logits, {1, 0}, 1) == 2); // the first of the tied maxima is the top 1
  CHECK(count_top_k(logits, {2, 3}, 1) == 0);
  CHECK(count_top_k(logits, {2, 2}, 2) == 1); // row 0: rank 1 < 2; row 1: rank 2
  CHECK(count_top_k(logits, {2, 2}, 3) == 2);
  CHECK(count_top_k(logits, {3, 3}, 3) == 0);
  CHECK(count_top_k(logits, {3, 3}, 4) == 2);
  CHECK(label_in_top_k(logits.data(), 4, 0, 3));
  CHECK_FALSE(label_in_top_k(logits.data(), 4, 0, 2));
}

TEST_CASE("top-k agrees with a sorted reference, top-1 with accuracy, top-K with every row",
          "[softmax]") {
  for (const shape_t& s : {shape_t{257, 10}, shape_t{9, 1000}, shape_t{5, 1}}) {
    for (const tensor& logits : {tied_logits(s[0], s[1], 11), random_tensor(s, 12, -3.0f, 3.0f)}) {
      const auto labels = make_labels(s[0], s[1], 13);
      tensor p(s);
      std::set<std::int64_t> ks{s[1], s[1] / 2 + 1}; // every small k, a middle one, all
      for (std::int64_t k = 1; k <= std::min<std::int64_t>(s[1], 12); ++k)
        ks.insert(k);
      std::int64_t previous = 0;
      for (const auto k : ks) {
        const auto hits = count_top_k(logits, labels, static_cast<int>(k));
        CHECK(hits == reference_top_k(logits, labels, k));
        CHECK(hits >= previous); // a larger k never loses a hit
        previous = hits;
        const auto r = softmax_cross_entropy_forward(logits, labels, p, static_cast<int>(k));
        CHECK(r.top_k_correct == hits);
        if (k == 1)
          CHECK(hits == r.correct);
        if (k == s[1])
          CHECK(hits == s[0]);
      }
      CHECK(softmax_cross_entropy_forward(logits, labels, p).top_k_correct == 0); // not asked
    }
  }
}

TEST_CASE("top-k refuses a k outside the classes", "[softmax][errors]") {
  const tensor logits({2, 3});
  tensor p({2, 3});
  REQUIRE_THROWS_WITH(count_top_k(logits, {0, 1}, 0), Catch::Contains("top-k 0 is outside [1, 3]"));
  REQUIRE_THROWS_AS(count_top_k(logits, {0, 1}, 4), std::invalid_argument);
  REQUIRE_THROWS_WITH(softmax_cross_entropy_forward(logits, {0, 1}, p, 4),
                      Catch::Contains("top-k 4 is outside [0, 3]"));
  REQUIRE_THROWS_AS(softmax_cross_entropy_forward(logits, {0, 1}, p, -1), std::invalid_argument);
  REQUIRE_THROWS_AS(count_top_k(logits, {0, 3}, 1), std::out_of_range);
}
