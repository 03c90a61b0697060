// The run's own warnings: each kind at its bound and just inside it, the figures it compares,
// and the cause it names from what the run is (a fixed 2-bit threshold, staleness, the rate).
#include <catch2/catch.hpp>

#include <cmath>

#include <troupe/actors/run_watch.hpp>

using namespace troupe;

namespace {

run_watch_options ten_classes() {
  run_watch_options o;
  o.classes = 10;
  o.learning_rate = 0.1;
  return o;
}

const double chance_loss = std::log(10.0);

} // namespace

TEST_CASE("a learning run gets no warning") {
  run_watch w(ten_classes());
  const double losses[] = {1.2, 0.7, 0.5, 0.45};
  for (int e = 0; e < 4; ++e) {
    CHECK(w.trained(e, losses[e], 0.6 + 0.05 * e, true).empty());
    CHECK(w.validated(e, losses[e], 0.62 + 0.05 * e).empty());
  }
}

TEST_CASE("accuracy and loss near chance after an epoch warn, naming both and the bound") {
  run_watch w(ten_classes());
  CHECK(w.trained(0, 2.30, 0.10, true).empty()); // validation's figures decide
  const auto found = w.validated(0, 2.3029, 0.1);
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == "near_chance");
  CHECK(found[0].epoch == 0);
  CHECK_THAT(found[0].message,
             Catch::StartsWith("epoch 0: validation accuracy 0.1000 and loss 2.3029 are near "
                               "chance for 10 classes (accuracy 1/10, loss ln 10 = 2.3026)"));
  CHECK_THAT(found[0].message, Catch::Contains("try --lr 0.01"));
  // just inside the bounds: a slow start, not chance
  CHECK(w.validated(1, 0.9 * chance_loss - 0.01, 0.2).empty());
  CHECK(w.validated(2, chance_loss, 0.25).empty());
  CHECK(w.validated(3, 0.9 * chance_loss, 0.2499).size() == 1);
}

TEST_CASE("without validation the training figures are compared with chance") {
  run_watch w(ten_classes());
  const auto found = w.trained(0, 2.29, 0.11, false);
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0].message, Catch::Contains("training accuracy 0.1100"));
}

TEST_CASE("a training loss above 1.5 ln K is diverging") {
  run_watch w(ten_classes());
  CHECK(w.trained(0, 1.5 * chance_loss, 0.3, true).empty());
  const auto found = w.trained(1, 6.302, 0.1, true);
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == "diverging");
  CHECK_THAT(found[0].message, Catch::Contains("the training loss 6.3020 is above 1.5 ln 10 = "
                                               "3.4539"));
  CHECK(w.trained(2, std::nan(""), 0.1, true).front().kind == "diverging");
}

TEST_CASE("a training loss that rose in each of the last N epochs is rising") {
  auto o = ten_classes();
  o.rising_epochs = 2;
  run_watch w(o);
  CHECK(w.trained(0, 1.0, 0.6, true).empty());
  CHECK(w.trained(1, 1.1, 0.6, true).empty()); // one rise
  const auto found = w.trained(2, 1.2, 0.6, true);
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == "rising");
  CHECK_THAT(found[0].message, Catch::Contains("rose for 2 epochs (1.0000 to 1.2000)"));
  CHECK(w.trained(3, 1.1, 0.6, true).empty()); // fell again

  o.rising_epochs = 1;
  run_watch once(o);
  CHECK(once.trained(0, 1.0, 0.6, true).empty());
  CHECK(once.trained(1, 1.0, 0.6, true).empty()); // level is not rising
  CHECK(once.trained(2, 1.01, 0.6, true).size() == 1);
}

TEST_CASE("the cause named follows what the run is") {
  auto o = ten_classes();
  o.two_bit_threshold = 0.5f;
  CHECK_THAT(run_watch(o).validated(0, 2.3, 0.1).front().message,
             Catch::Contains("the 2-bit threshold 0.5 is likely far above the gradients")
               && Catch::Contains("\"2bit\""));
  o = ten_classes();
  o.asynchronous = true;
  o.staleness = 3;
  CHECK_THAT(run_watch(o).trained(0, 6.3, 0.1, true).front().message,
             Catch::Contains("stale gradients (staleness 3) at lr 0.1 likely overshoot: try a "
                             "lower --lr (0.025)"));
  o.staleness = -1;
  CHECK_THAT(run_watch(o).trained(0, 6.3, 0.1, true).front().message,
             Catch::Contains("stale gradients (async)"));
  CHECK_THAT(run_watch(ten_classes()).trained(0, 6.3, 0.1, true).front().message,
             Catch::Contains("the lr 0.1 is likely too high: try --lr 0.01"));
}

TEST_CASE("compressed pushes that send under 1% of their values make vanishing, naming why") {
  auto o = ten_classes();
  run_watch plain(o);
  // a learning epoch that pushed nothing compressed, and one that sent 1% exactly: no warning
  CHECK(plain.trained(0, 1.2, 0.6, false).empty());
  CHECK(plain.trained(1, 1.0, 0.7, false, push_counts{1000, 10}).empty());
  const auto found = plain.trained(2, 0.9, 0.72, false, push_counts{100000, 46});
  REQUIRE(found.size() == 1); // the accuracy does not matter: the hop's count says it
  CHECK(found[0].kind == "vanishing");
  CHECK(found[0].epoch == 2);
  CHECK_THAT(found[0].message,
             Catch::StartsWith("epoch 2: the compressed pushes sent 0.046% of their gradient "
                               "values (46 of 100000) non-zero: the updates vanish in the hop; ")
               && Catch::Contains("too small for the hop's encoding"));
  o.two_bit_threshold = 0.5f;
  run_watch fixed_threshold(o);
  const auto named = fixed_threshold.trained(0, 1.2, 0.6, false, push_counts{100, 0});
  REQUIRE(named.size() == 1);
  CHECK_THAT(named[0].message, Catch::Contains("sent 0.000% of their gradient values (0 of 100)")
                                 && Catch::Contains("the 2-bit threshold 0.5 is likely far above"));
}

TEST_CASE("without classes to compare with, nothing warns") {
  run_watch_options o;
  o.classes = 1;
  run_watch w(o);
  CHECK(w.trained(0, 100, 0, false).empty());
  CHECK(w.validated(0, 100, 0).empty());
}

TEST_CASE("a warning's JSON holds its epoch, kind and message") {
  CHECK(warning_json({3, "rising", "a \"quoted\" line"})
        == R"({"epoch":3,"kind":"rising","message":"a \"quoted\" line"})");
}
