// Class names (io/class_names.cpp): each dataset's own labels, its files' when it carries
// them, the class numbers otherwise; a names file too short is refused naming it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <troupe/io/class_names.hpp>

#include "test_files.hpp"

namespace troupe {
namespace {

dataset_options options_of(const std::string& name, const std::string& dir) {
  dataset_options o;
  o.name = name;
  o.dir = dir;
  return o;
}

const std::vector<std::string> digits{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};

} // namespace

TEST_CASE("fashion-mnist, mnist and synthetic classes are named by the dataset") {
  const auto fashion = class_names(options_of("fashion-mnist", "/nowhere"), 10);
  CHECK(fashion
        == std::vector<std::string>{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
                                    "Shirt", "Sneaker", "Bag", "Ankle boot"});
  CHECK(class_names(options_of("mnist", "/nowhere"), 10) == digits);
  CHECK(class_names(options_of("synthetic", ""), 3) == std::vector<std::string>{"0", "1", "2"});
}

TEST_CASE("cifar10 reads batches.meta.txt, else its published names") {
  test::temp_dir dir;
  const auto fixed = class_names(options_of("cifar10", dir.path()), 10);
  CHECK(fixed.front() == "airplane");
  CHECK(fixed.back() == "truck");
  std::ofstream(dir.file("batches.meta.txt"))
    << "plane\ncar\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\n  lorry \n\n";
  const auto meta = class_names(options_of("cifar10", dir.path()), 10);
  CHECK(meta.front() == "plane");
  CHECK(meta[1] == "car");
  CHECK(meta.back() == "lorry"); // blanks around a name and blank lines are not names
  // The binary version unpacks into cifar-10-batches-bin: the reader looks there too.
  test::temp_dir parent;
  std::filesystem::create_directory(parent.file("cifar-10-batches-bin"));
  std::ofstream(parent.file("cifar-10-batches-bin/batches.meta.txt"))
    << "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
  CHECK(class_names(options_of("cifar10", parent.path()), 10).back() == "j");
}

TEST_CASE("a batches.meta.txt with fewer names than classes is refused naming it") {
  test::temp_dir dir;
  std::ofstream(dir.file("batches.meta.txt")) << "plane\ncar\n";
  CHECK_THROWS_WITH(class_names(options_of("cifar10", dir.path()), 10),
                    dir.file("batches.meta.txt") + ": 2 class names, expected 10 (one a line)");
}

TEST_CASE("recordio classes are the folders of the .lst beside the .rec, else numbers") {
  test::temp_dir dir;
  const auto rec = dir.file("train.rec");
  const auto o = options_of("recordio", rec);
  CHECK(class_names(o, 2) == std::vector<std::string>{"0", "1"}); // no .lst
  std::ofstream(dir.file("train.lst")) << "0\t0.000000\tcat/a.jpg\n1\t1.000000\tdog/b.jpg\n"
                                       << "2\t0.000000\tcat/c.jpg\n";
  CHECK(class_names(o, 2) == std::vector<std::string>{"cat", "dog"});
  // A label with two folders, a path without one, or a class no line has: numbers.
  std::ofstream(dir.file("train.lst")) << "0\t0.000000\tcat/a.jpg\n1\t0.000000\tdog/b.jpg\n";
  CHECK(class_names(o, 2) == std::vector<std::string>{"0", "1"});
  std::ofstream(dir.file("train.lst")) << "0\t0.000000\ta.jpg\n1\t1.000000\tdog/b.jpg\n";
  CHECK(class_names(o, 2) == std::vector<std::string>{"0", "1"});
  std::ofstream(dir.file("train.lst")) << "0\t0.000000\tcat/a.jpg\n";
  CHECK(class_names(o, 2) == std::vector<std::string>{"0", "1"});
  // A .lst that does not read is refused, naming its line.
  std::ofstream(dir.file("train.lst")) << "zero\t0.000000\tcat/a.jpg\n";
  CHECK_THROWS_WITH(class_names(o, 2), Catch::Contains("train.lst: line 1"));
}

} // namespace troupe
