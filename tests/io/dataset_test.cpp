// Tests for io/dataset.cpp: the constructor's invariants and open_dataset's dispatch by name.
#include <troupe/io/dataset.hpp>

#include <catch2/catch.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

TEST_CASE("dataset holds pixels and labels as given", "[io][dataset]") {
  std::vector<std::uint8_t> pixels{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  dataset data("tiny", {1, 2, 3}, 4, pixels, {3, 0});
  CHECK(data.size() == 2);
  CHECK(data.sample_numel() == 6);
  CHECK(data.sample_shape() == shape_t{1, 2, 3});
  CHECK(data.classes() == 4);
  CHECK(data.description() == "tiny");
  CHECK(data.label(0) == 3);
  CHECK(data.label(1) == 0);
  CHECK(data.pixels(1)[0] == 7);
  CHECK(data.pixels(1)[5] == 12);
}

TEST_CASE("dataset rejects pixels that do not match the labels", "[io][dataset]") {
  std::vector<std::uint8_t> pixels(11);
  REQUIRE_THROWS_AS(dataset("tiny", {1, 2, 3}, 4, pixels, {0, 1}), io_error);
  REQUIRE_THROWS_WITH(dataset("tiny", {1, 2, 3}, 4, pixels, {0, 1}),
                      Contains("tiny") && Contains("11 pixel bytes") && Contains("12 bytes"));
}

TEST_CASE("dataset rejects labels below 0 or not below classes", "[io][dataset]") {
  std::vector<std::uint8_t> pixels(3);
  REQUIRE_THROWS_WITH(dataset("tiny", {1, 1, 1}, 4, pixels, {0, 4, 1}),
                      Contains("tiny: label 4 at index 1 is out of range [0, 4)"));
  REQUIRE_THROWS_WITH(dataset("tiny", {1, 1, 1}, 4, pixels, {0, 1, -1}),
                      Contains("label -1 at index 2"));
}

TEST_CASE("dataset rejects a bad sample shape or class count", "[io][dataset]") {
  REQUIRE_THROWS_WITH(dataset("tiny", {2, 2}, 4, {}, {}), Contains("sample shape [2, 2]"));
  REQUIRE_THROWS_WITH(dataset("tiny", {1, 0, 2}, 4, {}, {}), Contains("[1, 0, 2]"));
  REQUIRE_THROWS_WITH(dataset("tiny", {1, 1, 1}, 0, {}, {}), Contains("class count 0"));
}

TEST_CASE("dataset_names lists every name open_dataset accepts", "[io][dataset]") {
  CHECK(dataset_names()
        == std::vector<std::string>{"fashion-mnist", "mnist", "cifar10", "synthetic", "recordio"});
}

TEST_CASE("open_dataset rejects an unknown name and lists the valid ones", "[io][dataset]") {
  dataset_options options;
  options.name = "imagenet";
  REQUIRE_THROWS_AS(open_dataset(options), std::invalid_argument);
  REQUIRE_THROWS_WITH(open_dataset(options),
                      Contains("'imagenet'")
                        && Contains("fashion-mnist, mnist, cifar10, synthetic"));
}

TEST_CASE("open_dataset reads mnist and fashion-mnist directories", "[io][dataset]") {
  test::temp_dir dir;
  test::write_file(dir.file("t10k-images-idx3-ubyte"),
                   test::idx_bytes({2, 3, 3}, test::pattern_pixels(2, 3, 3)));
  test::write_gzip_file(dir.file("t10k-labels-idx1-ubyte.gz"), test::idx_bytes({2}, {9, 4}));
  for (std::string name : {"mnist", "fashion-mnist"}) {
    dataset_options options;
    options.name = name;
    options.dir = dir.path();
    options.which = split::test;
    const auto data = open_dataset(options);
    CHECK(data->size() == 2);
    CHECK(data->sample_shape() == shape_t{1, 3, 3});
    CHECK(data->label(0) == 9);
    CHECK(data->description() == name + " test (" + dir.path() + ")");
  }
}

TEST_CASE("open_dataset reads a cifar10 directory", "[io][dataset]") {
  test::temp_dir dir;
  test::write_file(dir.file("test_batch.bin"), test::cifar_record(7, 1));
  dataset_options options;
  options.name = "cifar10";
  options.dir = dir.path();
  options.which = split::test;
  const auto data = open_dataset(options);
  CHECK(data->size() == 1);
  CHECK(data->label(0) == 7);
  CHECK(data->sample_shape() == shape_t{3, 32, 32});
}

TEST_CASE("open_dataset makes synthetic data from the options", "[io][dataset]") {
  dataset_options options;
  options.name = "synthetic";
  options.synthetic_shape = {3, 8, 8};
  options.synthetic_classes = 5;
  options.synthetic_size = 120;
  options.synthetic_seed = 9;
  const auto train = open_dataset(options);
  CHECK(train->size() == 120);
  CHECK(train->sample_shape() == shape_t{3, 8, 8});
  CHECK(train->classes() == 5);
  options.which = split::test;
  CHECK(open_dataset(options)->size() == 20);
}

TEST_CASE("open_dataset names the directory when the files are missing", "[io][dataset]") {
  test::temp_dir dir;
  dataset_options options;
  options.dir = dir.path();
  REQUIRE_THROWS_AS(open_dataset(options), io_error);
  REQUIRE_THROWS_WITH(open_dataset(options),
                      Contains(dir.path()) && Contains("train-images-idx3-ubyte"));
}
