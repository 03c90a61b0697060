// Fused softmax + cross-entropy against a double-precision reference, stability with huge
// logits, the gradient of the mean loss by finite differences, accuracy counting, and errors.
#include <catch2/catch.hpp>

#include <troupe/kernels/softmax_cross_entropy.hpp>
#include "test_util.hpp"

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
