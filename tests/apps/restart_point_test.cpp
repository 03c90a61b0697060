// Where `troupe launch --max-restarts` restarts from: the prefix among the nodes' flags, the
// newest checkpoint of either kind under it (parts and other prefixes do not count), and the
// nodes' flags with --load-epoch replaced.
#include <catch2/catch.hpp>

#include <fstream>

#include "apps/launch/restart_point.hpp"
#include "tests/io/test_files.hpp"

using namespace troupe;
using namespace troupe::launch;

TEST_CASE("the model prefix is read from the nodes' flags, the last one given") {
  CHECK_FALSE(model_prefix_of({"--config", "c.troupe"}));
  CHECK(*model_prefix_of({"--model-prefix", "runs/a", "--num-epochs", "3"}) == "runs/a");
  CHECK(*model_prefix_of({"--model-prefix=runs/a", "--model-prefix", "runs/b"}) == "runs/b");
  CHECK_FALSE(model_prefix_of({"--model-prefix"})); // no value: nothing to restart from
}

TEST_CASE("the newest checkpoint of either kind is found, parts and other prefixes are not") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  CHECK_FALSE(newest_checkpoint(prefix));
  CHECK_FALSE(newest_checkpoint(dir.file("missing/m")));
  for (const auto* name :
       {"m-0001.safetensors", "m-0002.manifest.json", "m-0003.server_0.safetensors",
        "m-0003.worker_0.safetensors", "mm-0009.safetensors", "other-0007.manifest.json",
        "m-0004.manifest.json.tmp.42"})
    std::ofstream(dir.file(name)) << "x";
  auto newest = newest_checkpoint(prefix);
  REQUIRE(newest);
  CHECK(newest->epoch == 2);
  CHECK(newest->file == dir.file("m-0002.manifest.json"));
  std::ofstream(dir.file("m-0010.safetensors")) << "x";
  CHECK(newest_checkpoint(prefix)->epoch == 10);
}

TEST_CASE("a restart's flags resume from the epoch, replacing a --load-epoch given") {
  using args = std::vector<std::string>;
  CHECK(resuming_from({"--config", "c", "--model-prefix", "m"}, 2)
        == args{"--config", "c", "--model-prefix", "m", "--load-epoch", "2"});
  CHECK(resuming_from({"--load-epoch", "1", "--config", "c", "--load-epoch=3"}, 4)
        == args{"--config", "c", "--load-epoch", "4"});
}
