// `troupe check` and `troupe graph` (apps/config_command.cpp) take every flag `troupe train`
// takes, from train's own definition, and resolve the job train would run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "apps/config_command.hpp"
#include "apps/flags.hpp"

using namespace troupe;

namespace {

std::string example(const std::string& name) {
  return std::string(TROUPE_EXAMPLES_DIR) + "/" + name;
}

} // namespace

TEST_CASE("check takes every flag train takes") {
  const auto names = train_flag_names();
  REQUIRE(names.count("num-epochs") == 1);
  REQUIRE(names.count("topology") == 1);
  REQUIRE(names.count("kv-store") == 1);
  REQUIRE(names.size() > 40);
  for (const auto& name : names) {
    INFO(name);
    // The value is beside the point: a refusal must be of the value, never of the flag. A
    // switch is given alone, a flag with a value is given 1.
    std::string what = "accepted";
    for (const std::vector<std::string> value : {std::vector<std::string>{}, {"1"}}) {
      std::vector<std::string> args{example("fashion_bsp.troupe"), "--" + name};
      args.insert(args.end(), value.begin(), value.end());
      try {
        parse_check_args("check", args);
        what = "accepted";
      } catch (const usage_error& e) {
        what = e.what();
      }
      if (what.find("needs a value") == std::string::npos)
        break;
    }
    CHECK(what.find("unknown flag") == std::string::npos);
    CHECK(what.find("unexpected argument") == std::string::npos);
    CHECK(what.find("is not read") == std::string::npos);
    CHECK(what.find("needs a value") == std::string::npos);
  }
  const auto help = parse_check_args("check", {"--help"}).cli.help_text;
  for (const auto& name : names)
    CHECK(help.find("--" + name) != std::string::npos);
}

TEST_CASE("check prints the job the flags resolve over the config") {
  const auto config = example("fashion_bsp.troupe");
  const auto plain = parse_check_args("check", {config}).cli.config;
  CHECK(plain.run.epochs.value == 10);
  CHECK(plain.topology.name.value == "bsp");
  const auto r = parse_check_args(
    "check", {"--config", config, "--num-epochs", "3", "--lr", "0.1", "--topology", "async"});
  const auto& c = r.cli.config;
  CHECK(c.run.epochs.value == 3);
  CHECK(c.optimizer.lr.value == 0.1);
  CHECK(c.topology.name.value == "async");
  CHECK(c.topology.levels.empty());
  CHECK(r.cli.job.epochs == 3);
  // CONFIG first is --config CONFIG.
  const auto positional = parse_check_args("check", {config, "--num-epochs", "3"}).cli.config;
  CHECK(positional.run.epochs.value == 3);
  CHECK(positional.path == config);
  // A check shows the language's thread count unless one is given.
  CHECK(plain.run.threads.value == 2);
  CHECK(parse_check_args("check", {config, "--threads", "3"}).cli.config.run.threads.value == 3);
}

TEST_CASE("check's own flags, and what only check takes") {
  const auto config = example("fashion_bsp.troupe");
  CHECK(parse_check_args("check", {config, "--push-groups"}).push_groups);
  CHECK(parse_check_args("check", {config, "--reference"}).reference);
  CHECK_THROWS_WITH(parse_check_args("graph", {config, "--push-groups"}),
                    Catch::Contains("unknown flag --push-groups"));
  CHECK_THROWS_WITH(parse_check_args("check", {config, "--topology", "star"}),
                    Catch::Contains("--topology: unknown topology 'star'"));
  CHECK(parse_check_args("graph", {config, "--workers", "2"}).cli.job.topology.workers == 2);
}
