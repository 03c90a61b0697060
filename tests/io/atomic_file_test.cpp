// Tests for io/atomic_file.cpp: the target holds the old bytes or the new ones, the temporary
// file never outlives the call, and failures name the path and the step.
#include <troupe/io/atomic_file.hpp>

#include <filesystem>

#include <catch2/catch.hpp>
#include <unistd.h>

#include <troupe/io/dataset.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir))
    ++n;
  return n;
}

} // namespace

TEST_CASE("write_file_atomically creates and replaces, leaving no temporary", "[io][atomic_file]") {
  test::temp_dir dir;
  const auto path = dir.file("state.bin");
  write_file_atomically(path, {1, 2, 3});
  CHECK(test::read_whole_file(path) == test::bytes{1, 2, 3});
  write_file_atomically(path, test::bytes(100000, 7));
  CHECK(test::read_whole_file(path) == test::bytes(100000, 7));
  write_file_atomically(path, {});
  CHECK(test::read_whole_file(path).empty());
  CHECK(files_in(dir.path()) == 1);
}

TEST_CASE("a stale temporary file of this process id is replaced", "[io][atomic_file]") {
  test::temp_dir dir;
  const auto path = dir.file("x");
  test::write_file(path + ".tmp." + std::to_string(::getpid()), {9, 9});
  write_file_atomically(path, {4});
  CHECK(test::read_whole_file(path) == test::bytes{4});
  CHECK(files_in(dir.path()) == 1);
}

TEST_CASE("write_file_atomically fails naming the path, the old file untouched",
          "[io][atomic_file]") {
  test::temp_dir dir;
  CHECK_THROWS_WITH(write_file_atomically(dir.file("no/such/dir/f"), {1}),
                    Contains(dir.file("no/such/dir/f"))
                      && Contains("cannot create the temporary file"));
  // A directory in the way of the rename: the temporary is written, the rename fails.
  std::filesystem::create_directory(dir.file("taken"));
  test::write_file(dir.file("taken/inside"), {1});
  CHECK_THROWS_WITH(write_file_atomically(dir.file("taken"), {5}),
                    Contains(dir.file("taken") + ": cannot rename"));
  CHECK(files_in(dir.path()) == 1); // the temporary is gone
  CHECK(test::read_whole_file(dir.file("taken/inside")) == test::bytes{1});
}

TEST_CASE("a displaced file is removed before the rename, or the write fails naming it",
          "[io][atomic_file]") {
  test::temp_dir dir;
  const auto path = dir.file("m-0003.manifest.json");
  const auto other = dir.file("m-0003.safetensors");
  test::write_file(other, {1});
  write_file_atomically(path, {2}, other);
  CHECK_FALSE(std::filesystem::exists(other));
  write_file_atomically(path, {3}, other); // nothing to displace: fine
  CHECK(test::read_whole_file(path) == test::bytes{3});
  // A displaced path that cannot be removed (a non-empty folder): the old file stays as it was.
  std::filesystem::create_directory(other);
  test::write_file(other + "/inside", {1});
  CHECK_THROWS_WITH(write_file_atomically(path, {4}, other),
                    Contains(other + ": cannot remove it before writing " + path));
  CHECK(test::read_whole_file(path) == test::bytes{3});
  CHECK(files_in(dir.path()) == 2); // no temporary left
}

TEST_CASE("check_can_create creates nothing that stays", "[io][atomic_file]") {
  test::temp_dir dir;
  check_can_create(dir.file("m-0000.safetensors"));
  CHECK(files_in(dir.path()) == 0);
  // A stale temporary of this process id does not make the check fail, and is gone after it.
  test::write_file(dir.file("m-0000.safetensors.tmp." + std::to_string(::getpid())), {1});
  check_can_create(dir.file("m-0000.safetensors"));
  CHECK(files_in(dir.path()) == 0);
}

// Folders that take no files, whoever runs the test: root ignores permission bits, so the
// read-only cases are a regular file in the place of the folder and /proc.
TEST_CASE("check_can_create names a folder that takes no files, and why", "[io][atomic_file]") {
  test::temp_dir dir;
  CHECK_THROWS_WITH(check_can_create(dir.file("missing/m-0000.safetensors")),
                    dir.file("missing") + ": cannot create files in it: No such file or directory");
  test::write_file(dir.file("somefile"), {1});
  CHECK_THROWS_WITH(check_can_create(dir.file("somefile/m-0000.safetensors")),
                    dir.file("somefile") + ": cannot create files in it: Not a directory");
  CHECK(test::read_whole_file(dir.file("somefile")) == test::bytes{1});
  if (std::filesystem::is_directory("/proc/self"))
    CHECK_THROWS_WITH(check_can_create("/proc/self/m-0000.safetensors"),
                      Contains("/proc/self: cannot create files in it: "));
}
