// Tests for io/metrics_log.cpp: JSON Lines output round-trips numbers exactly, escapes strings,
// reports files it cannot open or write, and never leaves part of a line behind.
#include <troupe/io/metrics_log.hpp>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <sys/resource.h>

#include <catch2/catch.hpp>

#include "tests/io/test_files.hpp"
#include <troupe/io/dataset.hpp>

using namespace troupe;
using Catch::Contains;

namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

} // namespace

TEST_CASE("jsonl_writer escapes control characters and keeps UTF-8", "[io][metrics]") {
  test::temp_dir dir;
  const auto path = dir.file("escapes.jsonl");
  jsonl_writer writer(path);
  writer.write({}, {{"quote", "say \"hi\" C:\\dir"},
                    {"named", "a\nb\tc\rd\be\ff"},
                    {"other", std::string("\x01\x1f nul\0byte", 11)},
                    {"utf8", "caf\xc3\xa9 \xe2\x82\xac"},
                    {"bad", "x\xff y"}});
  const auto lines = read_lines(path);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]
        == "{\"quote\":\"say \\\"hi\\\" C:\\\\dir\","
           "\"named\":\"a\\nb\\tc\\rd\\be\\ff\","
           "\"other\":\"\\u0001\\u001f nul\\u0000byte\","
           "\"utf8\":\"caf\xc3\xa9 \xe2\x82\xac\"," // UTF-8 passes through
           "\"bad\":\"x\xef\xbf\xbd y\"}");         // invalid UTF-8: U+FFFD
}

TEST_CASE("jsonl_writer embeds JSON values and refuses text that is not JSON", "[io][metrics]") {
  test::temp_dir dir;
  const auto path = dir.file("embedded.jsonl");
  jsonl_writer writer(path);
  writer.write({{"epoch", 1}}, {}, {{"traffic", R"({"worker 0": {"rx": 12, "tx": 3}})"}});
  CHECK(read_lines(path)
        == std::vector<std::string>{R"({"epoch":1,"traffic":{"worker 0":{"rx":12,"tx":3}}})"});
  CHECK_THROWS_WITH(writer.write({}, {}, {{"traffic", "{\"rx\":"}}),
                    Contains("the value of 'traffic' is not JSON"));
}

TEST_CASE("json_number prints integers as integers and others round-trip", "[io][metrics]") {
  CHECK(json_number(0) == "0");
  CHECK(json_number(1200) == "1200");
  CHECK(json_number(-7) == "-7");
  CHECK(json_number(9007199254740991.0) == "9007199254740991");
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(0.25) == "0.25");
  CHECK(json_number(std::nan("")) == "null");
  CHECK(json_number(INFINITY) == "null");
  for (double value : {1.0 / 3.0, 2.0 / 3.0, 1e-300, 6.02214076e23, -0.1 - 0.2, 1e300 * 7.0,
                       std::nextafter(1.0, 2.0), 9007199254740994.0}) {
    const auto text = json_number(value);
    CHECK(std::strtod(text.c_str(), nullptr) == value);
  }
}

TEST_CASE("jsonl_writer writes one flushed object per line", "[io][metrics]") {
  test::temp_dir dir;
  const auto path = dir.file("metrics.jsonl");
  jsonl_writer writer(path);
  CHECK(writer.path() == path);
  writer.write({{"epoch", 3}, {"loss", 0.5}, {"lr", 1.0 / 3.0}}, {{"phase", "train"}});
  // Readable before the writer is closed: each line is flushed.
  auto lines = read_lines(path);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "{\"epoch\":3,\"loss\":0.5,\"lr\":0.3333333333333333,\"phase\":\"train\"}");
  writer.write({}, {{"note", "a \"quoted\"\nline"}});
  writer.write({});
  lines = read_lines(path);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == "{\"note\":\"a \\\"quoted\\\"\\nline\"}");
  CHECK(lines[2] == "{}");
}

TEST_CASE("jsonl_writer truncates or appends", "[io][metrics]") {
  test::temp_dir dir;
  const auto path = dir.file("m.jsonl");
  jsonl_writer(path).write({{"a", 1}});
  jsonl_writer(path, true).write({{"b", 2}});
  CHECK(read_lines(path) == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"});
  jsonl_writer(path).write({{"c", 3}});
  CHECK(read_lines(path) == std::vector<std::string>{"{\"c\":3}"});
}

TEST_CASE("jsonl_writer lines from several threads never interleave", "[io][metrics]") {
  test::temp_dir dir;
  const auto path = dir.file("m.jsonl");
  {
    jsonl_writer writer(path);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&writer, t] {
        for (int i = 0; i < 200; ++i)
          writer.write({{"thread", t}, {"i", i}}, {{"pad", std::string(100, 'x')}});
      });
    for (auto& thread : threads)
      thread.join();
  }
  const auto lines = read_lines(path);
  REQUIRE(lines.size() == 800);
  for (const auto& line : lines) {
    REQUIRE(line.front() == '{');
    REQUIRE(line.back() == '}');
  }
}

TEST_CASE("jsonl_writer names a path it cannot open", "[io][metrics]") {
  test::temp_dir dir;
  const auto path = dir.file("no-such-dir/metrics.jsonl");
  REQUIRE_THROWS_AS(jsonl_writer(path), io_error);
  REQUIRE_THROWS_WITH(jsonl_writer(path),
                      path + ": cannot open for writing: No such file or directory");
}

TEST_CASE("jsonl_writer reports a failed write", "[io][metrics]") {
  if (!std::filesystem::exists("/dev/full")) {
    WARN("skipped: no /dev/full on this system");
    return;
  }
  jsonl_writer writer("/dev/full");
  REQUIRE_THROWS_AS(writer.write({{"x", 1}}), io_error);
  REQUIRE_THROWS_WITH(writer.write({{"x", 1}}), "/dev/full: write failed: No space left on device");
}

namespace {

// A file size limit for this process, with SIGXFSZ ignored so that write(2) reports EFBIG
// instead of killing the test: the cheapest full disk there is, and it works without root.
// Both are restored on scope exit (the limit applies to every file the process writes).
class file_size_limit {
public:
  explicit file_size_limit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  }
  ~file_size_limit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  file_size_limit(const file_size_limit&) = delete;
  file_size_limit& operator=(const file_size_limit&) = delete;

private:
  rlimit saved_{};
  void (*old_handler_)(int) = SIG_DFL;
};

std::string whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace

TEST_CASE("jsonl_writer writes a line whole or not at all, then stops", "[io][metrics]") {
  test::temp_dir dir;
  const auto path = dir.file("full.jsonl");
  jsonl_writer writer(path);
  writer.write({{"epoch", 0}}, {{"phase", "train"}});
  const auto first = whole_file(path);
  {
    // Room for half of the next line: write(2) takes the first half, then refuses the rest.
    file_size_limit limit(first.size() + 20);
    CHECK_THROWS_WITH(
      writer.write({{"epoch", 1}}, {{"phase", "train"}, {"pad", std::string(40, 'x')}}),
      path + ": write failed: File too large");
    CHECK(whole_file(path) == first); // the cut line was taken back
    // A line short enough to fit is refused too: no line may follow a lost one.
    CHECK_THROWS_WITH(writer.write({{"e", 2}}), path + ": write failed: File too large");
    CHECK(whole_file(path) == first);
  }
  CHECK_THROWS_WITH(writer.write({{"e", 3}}), path + ": write failed: File too large");
  const auto lines = read_lines(path);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == R"({"epoch":0,"phase":"train"})");
}
