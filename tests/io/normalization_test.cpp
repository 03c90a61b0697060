// Tests for io/normalization.cpp: the published per-channel statistics and the error for a
// dataset without them.
#include <troupe/io/normalization.hpp>

#include <stdexcept>

#include <catch2/catch.hpp>

using namespace troupe;
using Catch::Contains;

TEST_CASE("standard_normalization gives the published statistics", "[io][normalization]") {
  using stats = std::pair<std::vector<float>, std::vector<float>>;
  CHECK(standard_normalization("fashion-mnist") == stats{{0.2860f}, {0.3530f}});
  CHECK(standard_normalization("mnist") == stats{{0.1307f}, {0.3081f}});
  CHECK(standard_normalization("cifar10")
        == stats{{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}});
  CHECK(standard_normalization("imagenet")
        == stats{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}});
}

TEST_CASE("standard_normalization names the known datasets for any other", "[io][normalization]") {
  REQUIRE_THROWS_AS(standard_normalization("synthetic"), std::invalid_argument);
  REQUIRE_THROWS_WITH(standard_normalization("svhn"),
                      Contains("'svhn'") && Contains("fashion-mnist, mnist, cifar10, imagenet"));
}
