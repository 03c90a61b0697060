// Typed overrides (config_overrides, graph/config/config_overrides.cpp): a data statement or a
// compute count given as values gives the job the same statement written in the text gives,
// every derived default included; a bad value is refused once, named as its giver names it.
#include <catch2/catch.hpp>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/value_hash.hpp>

#include "config_job.hpp"

namespace troupe {
namespace {

job_config written(const std::string& text) {
  return parse_job_config("t.troupe", text);
}

job_config overridden(const std::string& text, const config_overrides& o) {
  return parse_job_config("t.troupe", text, o);
}

// The values of a data statement and what follows from it, without the source positions.
void check_same_data(const data_config& a, const data_config& b) {
  CHECK(a.enabled == b.enabled);
  CHECK(a.dataset.value == b.dataset.value);
  CHECK(a.dir.value == b.dir.value);
  CHECK(a.index.value == b.index.value);
  CHECK(a.split.value == b.split.value);
  CHECK(a.batch.value == b.batch.value);
  CHECK(a.crop_pad.value == b.crop_pad.value);
  CHECK(a.mirror.value == b.mirror.value);
  CHECK(a.normalize.value == b.normalize.value);
  CHECK(a.shuffle.value == b.shuffle.value);
  CHECK(a.shape.value == b.shape.value);
  CHECK(a.classes.value == b.classes.value);
  CHECK(a.examples.value == b.examples.value);
  CHECK(a.rgb_mean.value == b.rgb_mean.value);
  CHECK(a.rgb_std.value == b.rgb_std.value);
  CHECK(a.random_crop.value == b.random_crop.value);
}

void check_same_job(const job_config& a, const job_config& b) {
  check_same_data(a.train_data, b.train_data);
  check_same_data(a.validation_data, b.validation_data);
  CHECK(a.model.classes.value == b.model.classes.value);
  CHECK(a.cluster.workers.value == b.cluster.workers.value);
  CHECK(a.topology.levels == b.topology.levels);
  CHECK(a.schedule.steps.value == b.schedule.steps.value);
  CHECK(job_hash(test::job_of(a)) == job_hash(test::job_of(b)));
}

// Flag names, as troupe train gives them (apps/train_flags.cpp).
std::string flag_of(const std::string& key) {
  if (key == "data.dataset")
    return "--dataset";
  if (key == "data.shape")
    return "--image-shape";
  if (key == "data.classes")
    return "--num-classes";
  if (key == "data.examples")
    return "--num-examples";
  if (key == "data.rgb_std")
    return "--rgb-std";
  if (key == "cluster.workers")
    return "--workers";
  return key;
}

std::string refusal(const config_overrides& o, const std::string& text = "") {
  try {
    overridden(text, o);
  } catch (const config_error& e) {
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("a synthetic data override is the written statement") {
  config_overrides o;
  o.train_data =
    data_override{"synthetic", {}, {}, std::vector<std::int64_t>{3, 16, 16}, 5, 600, {}, {}};
  const auto a = overridden("model mlp", o);
  const auto b =
    written("data train = synthetic(shape = [3, 16, 16], classes = 5, examples = 600)\nmodel mlp");
  check_same_job(a, b);
  CHECK_FALSE(a.train_data.normalize.value);
  CHECK(a.validation_data.examples.value == 600); // validation follows the training set
  CHECK(a.model.classes.value == 5);
  CHECK(a.train_data.dataset.given);
}

TEST_CASE("a file dataset override is the written statement, augmentation per dataset") {
  config_overrides o;
  o.train_data = data_override{"cifar10", std::string("/d/cifar"), {}, {}, {}, {}, {}, {}};
  const auto a = overridden("", o);
  check_same_job(a, written("data train = cifar10(\"/d/cifar\")"));
  CHECK(a.train_data.crop_pad.value == 4);
  CHECK(a.train_data.mirror.value);
  CHECK(a.validation_data.dir.value == "/d/cifar");
}

TEST_CASE("recordio overrides, training and validation, are the written statements") {
  data_override train{"recordio",
                      std::string("/d/t.rec"),
                      std::string("/d/t.idx"),
                      std::vector<std::int64_t>{3, 64, 48},
                      100,
                      {},
                      std::vector<double>{123.68, 116.78, 103.94},
                      {}};
  auto val = train;
  val.dir = "/d/v.rec";
  val.index.reset();
  config_overrides o;
  o.train_data = train;
  o.validation_data = val;
  const auto a = overridden("", o);
  check_same_job(
    a, written("data train = recordio(\"/d/t.rec\", index = \"/d/t.idx\", shape = [3, 64, 48], "
               "classes = 100, rgb_mean = [123.68, 116.78, 103.94])\n"
               "data val = recordio(\"/d/v.rec\", shape = [3, 64, 48], classes = 100, "
               "rgb_mean = [123.68, 116.78, 103.94])\n"));
  CHECK(a.validation_data.enabled);
  CHECK(a.train_data.random_crop.value);
  CHECK_FALSE(a.validation_data.random_crop.value);

  config_overrides alone;
  alone.train_data = data_override{"recordio", std::string("t.rec"), {}, {}, {}, {}, {}, {}};
  const auto b = overridden("", alone);
  check_same_job(b, written("data train = recordio(\"t.rec\")"));
  CHECK(b.train_data.shape.value == std::vector<std::int64_t>{3, 224, 224});
  CHECK_FALSE(b.validation_data.enabled); // a .rec has no test split beside it
}

TEST_CASE("a data override replaces the statement the text wrote") {
  config_overrides o;
  o.train_data = data_override{"mnist", std::string("/m"), {}, {}, {}, {}, {}, {}};
  check_same_job(overridden("data train = cifar10(\"/c\", batch = 64)", o),
                 written("data train = mnist(\"/m\")"));
}

TEST_CASE("a bad override is refused once, named as its giver names it") {
  auto with = [](data_override d) {
    config_overrides o;
    o.train_data = std::move(d);
    o.name_of = flag_of;
    return o;
  };
  data_override shape{"synthetic", {}, {}, std::vector<std::int64_t>{3, 5000, 8}, {}, {}, {}, {}};
  CHECK(refusal(with(shape)) == "--image-shape must be between 1 and 4096, got 5000");
  data_override classes{"synthetic", {}, {}, {}, 1, {}, {}, {}};
  CHECK(refusal(with(classes)) == "--num-classes must be between 2 and 100000, got 1");
  data_override examples{"synthetic", {}, {}, {}, {}, 5, {}, {}};
  CHECK_THAT(refusal(with(examples)), Catch::StartsWith("--num-examples must be between 6"));
  data_override gray{
    "recordio", std::string("t.rec"), {}, std::vector<std::int64_t>{1, 32, 32}, {}, {}, {}, {}};
  CHECK_THAT(refusal(with(gray)),
             Catch::StartsWith("--image-shape: ") && Catch::Contains("C must be 3"));
  data_override two{"synthetic", {}, {}, std::vector<std::int64_t>{3, 32}, {}, {}, {}, {}};
  CHECK(refusal(with(two)) == "--image-shape must have 3 elements [channels, height, width]");
  data_override stdev{"recordio", std::string("t.rec"),        {}, {}, {}, {},
                      {},         std::vector<double>{0, 1, 1}};
  CHECK(refusal(with(stdev)) == "--rgb-std values must be in (0, 255]");
  CHECK_THAT(refusal(with(data_override{"svhn", {}, {}, {}, {}, {}, {}, {}})),
             Catch::StartsWith("--dataset: unknown dataset 'svhn'"));
  data_override foreign{"cifar10", std::string("/c"), {}, {}, {}, 600, {}, {}};
  CHECK(refusal(with(foreign)) == "--num-examples does not apply to cifar10 data");
  // Without names, the key: the message is still the language's.
  auto unnamed = with(classes);
  unnamed.name_of = nullptr;
  CHECK(refusal(unnamed) == "data.classes must be between 2 and 100000, got 1");
  config_overrides workers;
  workers.name_of = flag_of;
  workers.workers = 0;
  CHECK(refusal(workers) == "--workers must be between 1 and 1024, got 0");
}

TEST_CASE("a compute count override compiles the topology as writing workers does") {
  config_overrides o;
  o.workers = 4;
  for (const std::string topology : {"topology backup(1)", "topology hierarchical(machines = 2)",
                                     "topology mine(machines = 2) {\n loader -> compute\n"
                                     " compute -> aggregate(machine, need = 1) -> shard\n"
                                     " shard -> aggregate(machine)\n}"}) {
    INFO(topology);
    const auto a = overridden("cluster { workers = 2 }\n" + topology, o);
    const auto b = written("cluster { workers = 4 }\n" + topology);
    check_same_job(a, b);
    CHECK(a.cluster.workers.given);
  }
  CHECK(overridden("topology backup(1)", o).topology.levels
        == std::vector<aggregation_level>{{aggregation_scope::all, 3}});
  // The count the topology is compiled for is the override's: what it cannot train is refused.
  config_overrides two;
  two.workers = 2;
  CHECK_THAT(refusal(two, "cluster { workers = 4 }\ntopology backup(3)"),
             Catch::Contains("backup workers (3) must be fewer than workers (2)"));
}

TEST_CASE("the default compute count is asked once and yields the topology a written count does") {
  int asked = 0;
  config_overrides o;
  o.default_workers = [&asked](const cluster_config& cluster) -> std::optional<int> {
    ++asked;
    return cluster.worker_nodes.value;
  };
  const std::string nodes = "cluster { server_nodes = 1  worker_nodes = 4 }\n";
  const auto a = overridden(nodes + "topology backup(1)", o);
  CHECK(asked == 1);
  check_same_job(
    a, written("cluster { server_nodes = 1  worker_nodes = 4  workers = 4 }\ntopology backup(1)"));
  CHECK_FALSE(a.cluster.workers.given); // a default, not a value the user gave
  // A count the text gives stands; the question is still asked (troupe node resolves its place).
  const auto b = overridden("cluster { server_nodes = 1  worker_nodes = 4  workers = 8 }\n", o);
  CHECK(asked == 2);
  CHECK(b.cluster.workers.value == 8);
  o.default_workers = [](const cluster_config&) { return std::optional<int>{}; };
  CHECK(overridden("", o).cluster.workers.value == 1);
}

} // namespace troupe

namespace troupe {
namespace {

config_overrides preset(topology_kind kind, int argument, int workers = 4) {
  config_overrides o;
  o.workers = workers;
  o.topology = topology_override{kind, argument, "--topology x"};
  return o;
}

} // namespace

TEST_CASE("a topology override is the preset written without a block") {
  const std::pair<topology_override, std::string> cases[] = {
    {{topology_kind::bsp, -1, ""}, "topology bsp"},
    {{topology_kind::async, -1, ""}, "topology async"},
    {{topology_kind::ssp, 3, ""}, "topology ssp(staleness = 3)"},
    {{topology_kind::ssp, -1, ""}, "topology ssp"},
    {{topology_kind::hierarchical, 4, ""}, "topology hierarchical(machines = 4)"},
    {{topology_kind::backup, 2, ""}, "topology backup(2)"}};
  for (const auto& [given, text] : cases) {
    INFO(text);
    auto o = preset(given.preset, given.argument);
    const auto a = overridden("", o);
    const auto b = written("cluster { workers = 4 }\n" + text);
    check_same_job(a, b);
    CHECK(a.topology.name.value == b.topology.name.value);
    CHECK(a.topology.staleness == b.topology.staleness);
    CHECK(a.topology.machines.value == b.topology.machines.value);
    CHECK(a.topology.routes.size() == b.topology.routes.size());
    CHECK(a.topology.name.given);
    CHECK(a.topology.name.span.line == 0); // given by no line of the text
  }
}

TEST_CASE("a topology override replaces the text's statement, routes and all") {
  const auto o = preset(topology_kind::async, -1);
  const auto a = overridden("topology mine { loader -> compute\n compute -> aggregate(all) -> "
                            "shard\n shard -> compute(all) }",
                            o);
  CHECK(a.topology.name.value == "async");
  CHECK_FALSE(a.topology.explicit_wiring);
  CHECK(a.topology.levels.empty());
  CHECK(overridden("topology ssp(5)", preset(topology_kind::ssp, 1)).topology.staleness == 1);
}

TEST_CASE("a topology override the computes cannot train is refused naming its giver") {
  CHECK(refusal(preset(topology_kind::backup, 4))
        == "--topology x: backup workers (4) must be at least 1 and fewer than workers (4) "
           "(--workers 4)");
  CHECK_THAT(refusal(preset(topology_kind::backup, -1, 1)),
             Catch::Contains("backup workers (1) must be at least 1 and fewer than workers (1)"));
  CHECK(refusal(preset(topology_kind::hierarchical, 3))
        == "--topology x: aggregate(machine) needs workers (4) to split evenly over machines (3) "
           "(--workers 4)");
  CHECK_THAT(refusal(preset(topology_kind::hierarchical, 0)), Catch::Contains("machines (0)"));
  CHECK_THAT(refusal(preset(topology_kind::ssp, 2000000)),
             Catch::Contains("staleness must be between 0 and 1000000"));
  CHECK(refusal(preset(topology_kind::hierarchical, 2)) == "accepted");
}

} // namespace troupe
