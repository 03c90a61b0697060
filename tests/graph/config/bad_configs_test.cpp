// The malformed-config corpus: each bad/NAME.troupe must fail with exactly the first line in
// bad/NAME.expected (`NAME.troupe:line:col: message`), through parsing, checking and planning,
// without crashing. Adding a case is adding two files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/job_plan.hpp>

#include "config_job.hpp"

namespace troupe {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("every malformed config fails at its expected position") {
  const fs::path dir = TROUPE_BAD_CONFIG_DIR;
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".troupe")
      continue;
    ++cases;
    auto name = entry.path().filename().string();
    auto expected = read(fs::path(entry.path()).replace_extension(".expected"));
    expected = expected.substr(0, expected.find('\n'));
    std::string got = "no error";
    try {
      auto config = parse_job_config(name, read(entry.path()));
      auto job = test::job_of(config);
      plan_config(config, job, expected_data_facts(job));
    } catch (const config_error& e) {
      got = e.headline();
    }
    INFO(name);
    CHECK(got == expected);
  }
  CHECK(cases >= 20);
}

} // namespace
} // namespace troupe
