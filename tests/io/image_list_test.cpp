// Tests for io/image_list.cpp: listing class folders in MXNet's order, and .lst files written
// and read back, including the lines a reader must refuse.
#include <troupe/io/image_list.hpp>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include <troupe/io/dataset.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

void touch(const std::string& path) {
  test::write_file(path, {0xff, 0xd8});
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

TEST_CASE("list_image_folder numbers classes and files in sorted name order", "[io][image_list]") {
  test::temp_dir dir;
  for (const char* folder : {"zebra", "Ant", "cat", "empty"})
    std::filesystem::create_directory(dir.file(folder));
  touch(dir.file("zebra/b.jpg"));
  touch(dir.file("zebra/a.JPEG"));
  touch(dir.file("cat/x.jpeg"));
  touch(dir.file("cat/notes.txt")); // not an image
  touch(dir.file("Ant/1.jpg"));
  touch(dir.file("loose.jpg")); // not in a class folder
  const auto entries = list_image_folder(dir.path());
  REQUIRE(entries.size() == 4);
  // Byte order: "Ant" < "cat" < "empty" < "zebra"; the empty folder still takes class 2.
  CHECK(entries[0].path == "Ant/1.jpg");
  CHECK(entries[1].path == "cat/x.jpeg");
  CHECK(entries[2].path == "zebra/a.JPEG");
  CHECK(entries[3].path == "zebra/b.jpg");
  CHECK(entries[0].labels == std::vector<float>{0});
  CHECK(entries[1].labels == std::vector<float>{1});
  CHECK(entries[3].labels == std::vector<float>{3});
  for (std::size_t i = 0; i < entries.size(); ++i)
    CHECK(entries[i].index == i);
}

TEST_CASE("list_image_folder refuses folders without classes or images", "[io][image_list]") {
  test::temp_dir dir;
  CHECK_THROWS_WITH(list_image_folder(dir.file("missing")), Contains("not a directory"));
  CHECK_THROWS_WITH(list_image_folder(dir.path()), Contains("no class sub-folders"));
  std::filesystem::create_directory(dir.file("a"));
  CHECK_THROWS_AS(list_image_folder(dir.path()), io_error);
}

TEST_CASE("write_image_list writes MXNet's .lst lines and read_image_list reads them",
          "[io][image_list]") {
  test::temp_dir dir;
  const std::vector<image_list_entry> entries{{0, {1.0f}, "a/x.jpg"},
                                              {7, {2.0f, 0.5f}, "b/y z.jpg"}};
  write_image_list(dir.file("l.lst"), entries);
  const auto text = read_text(dir.file("l.lst"));
  CHECK(text == "0\t1.000000\ta/x.jpg\n7\t2.000000\t0.500000\tb/y z.jpg\n");
  const auto back = read_image_list(dir.file("l.lst"));
  REQUIRE(back.size() == 2);
  CHECK(back[1].index == 7);
  CHECK(back[1].labels == entries[1].labels);
  CHECK(back[1].path == "b/y z.jpg");
}

TEST_CASE("read_image_list names the line it cannot read", "[io][image_list]") {
  test::temp_dir dir;
  auto read = [&](const std::string& text) {
    test::write_file(dir.file("l.lst"), test::bytes(text.begin(), text.end()));
    return read_image_list(dir.file("l.lst"));
  };
  CHECK_THROWS_WITH(read("0\t1\ta.jpg\n1\ta.jpg\n"),
                    Contains("l.lst: line 2: expected index<TAB>label(s)<TAB>path"));
  CHECK_THROWS_WITH(read("x\t1\ta.jpg\n"), Contains("line 1: index 'x'"));
  CHECK_THROWS_WITH(read("0\tone\ta.jpg\n"), Contains("label 'one' is not a number"));
  CHECK_THROWS_WITH(read_image_list(dir.file("none.lst")), Contains("cannot open"));
}

TEST_CASE("read_image_list names the file and the system's reason when it cannot open it",
          "[io][image_list]") {
  CHECK_THROWS_WITH(
    read_image_list("/nonexistent/troupe/train.lst"),
    Contains("/nonexistent/troupe/train.lst: cannot open the image list: No such file"));
}
