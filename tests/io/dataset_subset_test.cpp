// Tests for io/dataset_subset.cpp: the class-list text, which examples a subset keeps and in
// what order, the class count, and each refusal.
#include <troupe/io/dataset_subset.hpp>

#include <catch2/catch.hpp>

#include <troupe/io/synthetic.hpp>

using namespace troupe;
using Catch::Contains;

namespace {

// Ten examples of 1x1x2, labels 0 1 2 3 4 0 1 2 3 4, pixel i*2 and i*2+1 for example i.
std::shared_ptr<const dataset> ten_examples() {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 10; ++i) {
    pixels.push_back(static_cast<std::uint8_t>(2 * i));
    pixels.push_back(static_cast<std::uint8_t>(2 * i + 1));
    labels.push_back(i % 5);
  }
  return std::make_shared<const dataset>("tiny", shape_t{1, 1, 2}, 5, pixels, labels);
}

subset_options only(std::vector<int> classes, std::int64_t first = 0, int count = 0) {
  subset_options o;
  o.classes = std::move(classes);
  o.first = first;
  o.class_count = count;
  return o;
}

} // namespace

TEST_CASE("parse_class_list reads ranges and single classes", "[io][dataset_subset]") {
  CHECK(parse_class_list("0-4") == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(parse_class_list("0,1,2") == std::vector<int>{0, 1, 2});
  CHECK(parse_class_list("7,0-2") == std::vector<int>{0, 1, 2, 7});
  CHECK(parse_class_list("3") == std::vector<int>{3});
  CHECK(class_list_text({0, 1, 2, 7}) == "0-2,7");
  CHECK(class_list_text({3, 5}) == "3,5");
}

TEST_CASE("parse_class_list refuses text that names no class list", "[io][dataset_subset]") {
  CHECK_THROWS_WITH(parse_class_list(""), Contains("name at least one class"));
  CHECK_THROWS_WITH(parse_class_list("0-x"), Contains("\"x\" is not a class index"));
  CHECK_THROWS_WITH(parse_class_list("1,,2"), Contains("\"\" is not a class index"));
  CHECK_THROWS_WITH(parse_class_list("-1"), Contains("is not a class index"));
  CHECK_THROWS_WITH(parse_class_list("4-2"), Contains("the range 4-2 runs backwards"));
  CHECK_THROWS_WITH(parse_class_list("1,0-2"), Contains("class 1 is named twice"));
}

TEST_CASE("a class filter keeps those classes' examples in file order, labels unchanged",
          "[io][dataset_subset]") {
  const auto kept = take_subset(ten_examples(), only({1, 3}));
  REQUIRE(kept->size() == 4);
  CHECK(kept->classes() == 5);
  const std::int32_t labels[] = {1, 3, 1, 3};
  const std::uint8_t first_pixels[] = {2, 6, 12, 16}; // examples 1, 3, 6, 8
  for (std::int64_t i = 0; i < 4; ++i) {
    CHECK(kept->label(i) == labels[i]);
    CHECK(kept->pixels(i)[0] == first_pixels[i]);
    CHECK(kept->pixels(i)[1] == first_pixels[i] + 1);
  }
  CHECK(kept->description() == "tiny (classes 1,3)");
}

TEST_CASE("first keeps the first N examples the filter leaves", "[io][dataset_subset]") {
  CHECK(take_subset(ten_examples(), only({}, 3))->size() == 3);
  const auto kept = take_subset(ten_examples(), only({0, 1, 2, 3, 4}, 7));
  REQUIRE(kept->size() == 7);
  CHECK(kept->label(6) == 1);
  const auto filtered = take_subset(ten_examples(), only({4}, 1));
  REQUIRE(filtered->size() == 1);
  CHECK(filtered->pixels(0)[0] == 8);
  CHECK(filtered->description() == "tiny (classes 4, first 1)");
}

TEST_CASE("a class count sets the outputs and must hold every kept label", "[io][dataset_subset]") {
  CHECK(take_subset(ten_examples(), only({}, 0, 12))->classes() == 12);
  CHECK(take_subset(ten_examples(), only({0, 1}, 0, 2))->classes() == 2);
  CHECK_THROWS_WITH(take_subset(ten_examples(), only({0, 3}, 0, 3)),
                    Contains("tiny: 3 classes cannot hold label 3") && Contains("at least 4"));
  CHECK_THROWS_WITH(take_subset(ten_examples(), only({}, 0, 4)),
                    Contains("4 classes cannot hold label 4"));
}

TEST_CASE("no subset asked gives the dataset itself", "[io][dataset_subset]") {
  const auto full = ten_examples();
  CHECK(take_subset(full, subset_options{}) == full);
}

TEST_CASE("a subset outside the dataset or of no example is refused", "[io][dataset_subset]") {
  CHECK_THROWS_AS(take_subset(ten_examples(), only({5})), io_error);
  CHECK_THROWS_WITH(take_subset(ten_examples(), only({2, 5})),
                    Contains("tiny: class 5 is outside [0, 5)"));
  CHECK_THROWS_WITH(take_subset(ten_examples(), only({}, 11)),
                    Contains("the first 11 examples were asked for, it holds 10"));
  CHECK_THROWS_WITH(take_subset(ten_examples(), only({2}, 3)), Contains("its classes 2 hold 2"));
  // A class the files know but no example has.
  std::vector<std::uint8_t> pixels{1, 2};
  const auto two = std::make_shared<const dataset>("pair", shape_t{1, 1, 1}, 4, pixels,
                                                   std::vector<std::int32_t>{0, 1});
  CHECK_THROWS_WITH(take_subset(two, only({3})), Contains("pair: classes 3 keeps no example"));
}

TEST_CASE("open_dataset takes the subset its options ask for", "[io][dataset_subset]") {
  dataset_options o;
  o.name = "synthetic";
  o.synthetic_shape = {1, 4, 4};
  o.synthetic_classes = 10;
  o.synthetic_size = 600;
  o.subset.classes = {0, 1, 2, 3, 4};
  const auto whole = make_synthetic({{1, 4, 4}, 10, 600, 0}, split::train);
  std::int64_t expected = 0;
  for (std::int64_t i = 0; i < whole->size(); ++i)
    expected += whole->label(i) < 5 ? 1 : 0;
  const auto kept = open_dataset(o);
  CHECK(kept->size() == expected);
  for (std::int64_t i = 0; i < kept->size(); ++i)
    CHECK(kept->label(i) < 5);
}
