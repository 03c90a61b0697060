// Semantic tests: defaults, every section's keys, presets and explicit wiring classification,
// and the plan's actors, routes and byte counts.
#include <catch2/catch.hpp>

#include "graph/config/job_config.hpp"
#include "graph/config/job_plan.hpp"
#include "graph/config/key_assignment.hpp"

namespace troupe {
namespace {

job_config parse(const std::string& text) { return parse_job_config("t.troupe", text); }

std::string error_of(const std::string& text) {
  try {
    build_plan(parse(text));
  } catch (const config_error& e) {
    return e.headline();
  }
  return "no error";
}

TEST_CASE("an empty config is the default job") {
  auto c = parse("");
  CHECK(c.model.network.value == "lenet");
  CHECK(c.train_data.dataset.value == "fashion_mnist");
  CHECK(c.train_data.batch.value == 128);
  CHECK(c.validation_data.batch.value == 500);
  CHECK(c.validation_data.split.value == "test");
  CHECK(c.topology.kind == topology_kind::bsp);
  CHECK(c.cluster.workers.value == 1);
  CHECK(c.schedule.steps.value == std::vector<double>{5, 7.5});
  CHECK_FALSE(c.optimizer.lr.given);
}

TEST_CASE("values keep their source positions") {
  auto c = parse("\n  cluster { workers = 4 }");
  CHECK(c.cluster.workers.given);
  CHECK(c.cluster.workers.span.line == 2);
  CHECK(c.cluster.workers.span.column == 23);
  CHECK(c.cluster.shards.value == 1);
}

TEST_CASE("cifar10 turns on crop and mirror and implies 3x32x32") {
  auto c = parse("data train = cifar10(\"/x\")\nmodel resnet(layers = 20)");
  CHECK(c.train_data.crop_pad.value == 4);
  CHECK(c.train_data.mirror.value);
  CHECK(c.validation_data.crop_pad.value == 0);
  CHECK(c.train_data.shape.value == std::vector<std::int64_t>{3, 32, 32});
  CHECK(c.model.layers.value == 20);
}

TEST_CASE("synthetic data sets shape and classes and the model follows") {
  auto c = parse("data train = synthetic(shape = [1, 12, 12], classes = 5, examples = 600)\nmodel mlp");
  CHECK(c.model.classes.value == 5);
  CHECK_FALSE(c.train_data.normalize.value);
  CHECK(c.validation_data.examples.value == 600);
}

TEST_CASE("data val none and eval_every 0 disable validation") {
  CHECK_FALSE(parse("data val = none").validation_data.enabled);
  CHECK_FALSE(parse("train { eval_every = 0 }").validation_data.enabled);
}

TEST_CASE("optimizer and schedule keys") {
  auto c = parse("optimizer sgd(0.2, momentum = 0.5, wd = 0, nesterov = true)\n"
                 "schedule cosine(final_lr = 0.001, warmup = 0)");
  CHECK(c.optimizer.lr.value == 0.2);
  CHECK(c.optimizer.nesterov.value);
  CHECK(c.schedule.policy.value == "cosine");
  CHECK(c.schedule.final_lr.value == 0.001);
  CHECK(parse("schedule constant").schedule.policy.value == "constant");
}

TEST_CASE("presets resolve kind and parameters") {
  CHECK(parse("topology async").topology.kind == topology_kind::async);
  auto ssp = parse("topology ssp(3)").topology;
  CHECK(ssp.kind == topology_kind::ssp);
  CHECK(ssp.staleness.value == 3);
  auto h = parse("cluster { workers = 4 }\ntopology hierarchical(machines = 2)").topology;
  CHECK(h.kind == topology_kind::hierarchical);
  CHECK(h.machines.value == 2);
  auto b = parse("cluster { workers = 4 }\ntopology backup(1)").topology;
  CHECK(b.backup_workers.value == 1);
  CHECK_FALSE(parse("topology bsp(deterministic = false)").topology.deterministic.value);
}

TEST_CASE("explicit wiring is classified") {
  auto b = parse("cluster { workers = 4 }\ntopology backup {\n loader -> compute\n"
                 " compute -> aggregate(first = 3) -> shard\n shard -> compute(all)\n}");
  CHECK(b.topology.kind == topology_kind::backup);
  CHECK(b.topology.backup_workers.value == 1);
  auto s = parse("topology ssp(2) {\n loader -> compute\n compute -> shard\n shard -> compute(sender)\n}");
  CHECK(s.topology.kind == topology_kind::ssp);
  CHECK(s.topology.explicit_wiring);
  CHECK(error_of("topology bsp {\n loader -> compute\n compute -> shard -> compute(sender)\n}")
        == "t.troupe:1:10: the wiring below is async, but the topology says bsp");
}

TEST_CASE("wiring mistakes point at the route") {
  CHECK(error_of("topology async {\n loader -> compute\n loader -> compute\n compute -> shard\n"
                 " shard -> compute(sender)\n}")
        == "t.troupe:3:2: duplicate route loader -> compute");
  CHECK(error_of("topology async {\n loader -> shard\n}") == "t.troupe:2:12: a loader sends batches only to compute");
  CHECK(error_of("topology async {\n compute -> loader\n}") == "t.troupe:2:13: nothing can send to a loader: it only reads data");
}

TEST_CASE("plan lists actors and routes with shard bytes") {
  auto p = build_plan(parse("cluster { servers = 2 workers = 2 }\nmodel mlp\ntopology bsp"));
  CHECK(p.actors == std::vector<std::string>{"loader_0", "loader_1", "compute_0", "compute_1",
                                             "aggregator", "shard_0", "shard_1"});
  CHECK(p.parameters == 784 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  CHECK(p.shard_bytes[0] + p.shard_bytes[1] == p.parameters * 4);
  CHECK(p.routes.size() == 2 + 2 + 2 + 4);
  auto dot = plan_to_dot(p, "t");
  CHECK(dot.rfind("digraph", 0) == 0);
  CHECK(dot.find("aggregator -> shard_0") != std::string::npos);
}

TEST_CASE("async plan sends each shard its own keys") {
  auto p = build_plan(parse("cluster { servers = 2 workers = 3 }\nmodel mlp\ntopology async"));
  CHECK(p.actors.size() == 3 + 3 + 2);
  CHECK(p.routes.size() == 3 + 3 * 2 + 2 * 3);
}

TEST_CASE("assign_keys balances bytes, ties to the lowest shard") {
  auto parts = assign_keys({100, 10, 60, 50, 5}, 2);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0] == std::vector<std::size_t>{0, 1, 4});
  CHECK(parts[1] == std::vector<std::size_t>{2, 3});
  CHECK(assign_keys({1, 2}, 5).size() == 2);
  CHECK_THROWS(assign_keys({1}, 0));
}

} // namespace
} // namespace troupe
