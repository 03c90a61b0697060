// Tests for apps/classification_scores.cpp: the figures troupe eval prints, on logits whose
// ranks are known.
#include "apps/classification_scores.hpp"

#include <cmath>

#include <catch2/catch.hpp>

using namespace troupe;

TEST_CASE("scores count accuracy, top-k, loss and per-class accuracy") {
  classification_scores s(3, 2);
  // Row 0: label 0 ranks first. Row 1: label 2 ranks second. Row 2: label 1 ranks last.
  s.add(tensor::from_values({3, 3}, {3, 1, 0, 2, 0, 1, 5, 0, 4}), {0, 2, 1});
  CHECK(s.examples() == 3);
  CHECK(s.accuracy() == Approx(1.0 / 3));
  CHECK(s.top_k_accuracy() == Approx(2.0 / 3));
  const double row0 = -std::log(std::exp(3.0) / (std::exp(3.0) + std::exp(1.0) + 1));
  const double row1 = -std::log(std::exp(1.0) / (std::exp(2.0) + 1 + std::exp(1.0)));
  const double row2 = -std::log(1 / (std::exp(5.0) + 1 + std::exp(4.0)));
  CHECK(s.mean_loss() == Approx((row0 + row1 + row2) / 3));
  CHECK(s.class_accuracy(0) == 1.0);
  CHECK(s.class_accuracy(1) == 0.0);
  CHECK(s.class_examples(2) == 1);
  s.add(tensor::from_values({1, 3}, {0, 0, 0}), {1}); // a tie: arg-max is class 0, top-2 holds
  CHECK(s.accuracy() == Approx(1.0 / 4));
  CHECK(s.top_k_accuracy() == Approx(3.0 / 4));
}

TEST_CASE("scores refuse a top-k beyond the classes and logits of the wrong shape") {
  CHECK_THROWS_WITH(classification_scores(3, 4), Catch::Contains("between 1 and the 3 classes"));
  classification_scores s(3, 1);
  CHECK_THROWS_WITH(s.add(tensor({2, 4}), {0, 1}), Catch::Contains("logits of shape [2, 4]"));
  CHECK_THROWS(s.add(tensor({1, 3}), {7}));
}
