// Semantic tests: defaults, every section's keys, presets and explicit wiring classification,
// and the plan's actors, routes and byte counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/job_plan.hpp>
#include <troupe/graph/config/key_assignment.hpp>

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

TEST_CASE("plan lists actors and routes with shard bytes, one aggregator per shard") {
  auto p = build_plan(parse("cluster { servers = 2 workers = 2 }\nmodel mlp\ntopology bsp"));
  CHECK(p.actors == std::vector<std::string>{"loader_0", "loader_1", "compute_0", "compute_1",
                                             "aggregator_0", "aggregator_1", "shard_0", "shard_1"});
  CHECK(p.parameters == 784 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  CHECK(p.shard_bytes[0] + p.shard_bytes[1] == p.parameters * 4);
  // batches, 2 workers x 2 aggregators, 2 aggregator -> shard, 2 shards x 2 workers (weights)
  CHECK(p.routes.size() == 2 + 4 + 2 + 4);
  auto dot = plan_to_dot(p, "t");
  CHECK(dot.rfind("digraph", 0) == 0);
  CHECK(dot.find("aggregator_0 -> shard_0") != std::string::npos);
  CHECK(dot.find("aggregator_1 -> shard_1") != std::string::npos);
  CHECK(dot.find("aggregator_0 -> shard_1") == std::string::npos);
  auto hier = build_plan(parse("cluster { servers = 2 workers = 4 }\nmodel mlp\ntopology hierarchical(machines = 2)"));
  CHECK(hier.actors[8] == "aggregator_0");
  CHECK(hier.actors[10] == "machine_aggregator_0_0");
  CHECK(hier.actors[13] == "machine_aggregator_1_1");
}

TEST_CASE("async plan sends each shard its own keys") {
  auto p = build_plan(parse("cluster { servers = 2 workers = 3 }\nmodel mlp\ntopology async"));
  CHECK(p.actors.size() == 3 + 3 + 2);
  CHECK(p.routes.size() == 3 + 3 * 2 + 2 * 3);
}

TEST_CASE("cluster slicing, grouping and overlap default to the key plan's options") {
  auto c = parse("");
  CHECK(c.cluster.slice_bytes.value == 4194304);
  CHECK(c.cluster.group_bytes.value == 65536);
  CHECK(c.cluster.overlap.value);
  CHECK_FALSE(c.cluster.slice_bytes.given);
  CHECK_FALSE(c.cluster.group_bytes.given);
  CHECK_FALSE(c.cluster.overlap.given);
  auto o = key_options_of(c);
  CHECK(o.slice_bytes == key_plan_options{}.slice_bytes);
  CHECK(o.group_bytes == key_plan_options{}.group_bytes);
}

TEST_CASE("cluster reads slice_bytes, group_bytes and overlap") {
  auto c = parse("cluster {\n  slice_bytes = 1024\n  group_bytes = 0\n  overlap = false\n}");
  CHECK(c.cluster.slice_bytes.value == 1024);
  CHECK(c.cluster.slice_bytes.given);
  CHECK(c.cluster.slice_bytes.span.line == 2);
  CHECK(c.cluster.group_bytes.value == 0);
  CHECK(c.cluster.group_bytes.span.line == 3);
  CHECK_FALSE(c.cluster.overlap.value);
  CHECK(c.cluster.overlap.given);
  CHECK(key_options_of(c).slice_bytes == 1024);
  CHECK(key_options_of(c).group_bytes == 0);
  // The bounds themselves are accepted.
  CHECK(parse("cluster { slice_bytes = 4 }").cluster.slice_bytes.value == 4);
  CHECK(parse("cluster { slice_bytes = 1099511627776 group_bytes = 1099511627776 }")
          .cluster.group_bytes.value == std::int64_t{1} << 40);
}

TEST_CASE("bad slice_bytes, group_bytes and overlap point at the value") {
  CHECK(error_of("cluster { slice_bytes = 3 }")
        == "t.troupe:1:25: slice_bytes must be at least 4 (a slice holds at least one float), "
           "got 3");
  CHECK(error_of("cluster { slice_bytes = 0 }")
        == "t.troupe:1:25: slice_bytes must be at least 4 (a slice holds at least one float), "
           "got 0");
  CHECK(error_of("cluster { slice_bytes = 4096.5 }")
        == "t.troupe:1:25: slice_bytes must be a whole number, got '4096.5'");
  CHECK(error_of("cluster { group_bytes = -65536 }")
        == "t.troupe:1:25: group_bytes must be at least 0 (0 = never bundle), got -65536");
  CHECK(error_of("cluster { group_bytes = -100000000000000000000 }")
        == "t.troupe:1:25: group_bytes must be between 0 and 1099511627776, got -1e+20");
  CHECK(error_of("cluster { group_bytes = 1099511627777 }")
        == "t.troupe:1:25: group_bytes must be between 0 and 1099511627776, got 1.09951e+12");
  CHECK(error_of("cluster { group_bytes = \"64k\" }")
        == "t.troupe:1:25: group_bytes must be a whole number, got a string");
  CHECK(error_of("cluster { overlap = \"yes\" }")
        == "t.troupe:1:21: overlap must be true or false, got a string");
  CHECK(error_of("cluster { overlap = true overlap = false }")
        == "t.troupe:1:26: duplicate key 'overlap' in cluster");
}

std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t total = 0;
  for (auto x : v)
    total += x;
  return total;
}

// MLP on 28x28: fc1.weight 100352 floats (392 KiB), fc2.weight 8192, fc3.weight 640, and
// biases of 128, 64 and 10: six keys unsliced; at 64 KiB slices fc1.weight becomes 7 keys.
TEST_CASE("a small slice_bytes cuts the big parameter and the shards still hold the model") {
  auto whole = build_plan(parse("cluster { shards = 3 }\nmodel mlp"));
  CHECK(whole.keys_per_step == 6);
  CHECK(whole.sliced.empty());
  auto cut = build_plan(parse("cluster { shards = 3  slice_bytes = 65536 }\nmodel mlp"));
  CHECK(cut.key_options.slice_bytes == 65536);
  CHECK(cut.keys_per_step == 12);
  CHECK(sum(cut.shard_keys) == 12);
  REQUIRE(cut.shard_bytes.size() == 3);
  CHECK(sum(cut.shard_bytes) == cut.parameters * 4);
  REQUIRE(cut.sliced.size() == 1);
  CHECK(cut.sliced[0].name == "fc1.weight");
  CHECK(cut.sliced[0].bytes == 100352 * 4);
  CHECK(cut.sliced[0].slices == 7);
  // Unsliced, one shard holds all of fc1.weight; sliced, no shard holds much more than a third.
  CHECK(*std::max_element(whole.shard_bytes.begin(), whole.shard_bytes.end()) >= 100352 * 4);
  CHECK(*std::max_element(cut.shard_bytes.begin(), cut.shard_bytes.end())
        < cut.parameters * 4 / 3 + 65536);
}

TEST_CASE("group_bytes decides the pushes per step, and every route counts them") {
  // One shard: fc1.weight (392 KiB) travels alone, the other five keys (35 KiB) in one push.
  auto grouped = build_plan(parse("model mlp"));
  CHECK(grouped.pushes_per_step == 2);
  CHECK(grouped.shard_pushes == std::vector<std::int64_t>{2});
  auto alone = build_plan(parse("cluster { group_bytes = 0 }\nmodel mlp"));
  CHECK(alone.pushes_per_step == 6);
  auto p = build_plan(parse("cluster { servers = 2 workers = 2 slice_bytes = 65536 }\nmodel mlp"));
  CHECK(sum(p.shard_pushes) == p.pushes_per_step);
  CHECK(p.pushes_per_step >= 2);
  CHECK(p.pushes_per_step <= p.keys_per_step);
  for (const auto& r : p.routes) {
    INFO(p.actors[r.from] << " -> " << p.actors[r.to]);
    if (r.carries == "batch")
      CHECK(r.messages == 0);
    else
      CHECK(r.messages >= 1);
  }
  // A worker's routes together carry every key and byte in pushes_per_step messages.
  std::int64_t keys = 0, bytes = 0, messages = 0;
  for (const auto& r : p.routes)
    if (p.actors[r.from] == "compute_0") {
      keys += r.keys, bytes += r.bytes, messages += r.messages;
    }
  CHECK(keys == p.keys_per_step);
  CHECK(bytes == p.parameters * 4);
  CHECK(messages == p.pushes_per_step);
  for (const auto& r : p.routes) {
    if (r.carries == "batch")
      continue;
    else
      CHECK(r.messages >= 1);
  }
  auto dot = plan_to_dot(p, "t");
  CHECK(dot.find("gradients: " + std::to_string(p.shard_keys[0]) + " keys in "
                 + std::to_string(p.shard_pushes[0]) + " pushes")
        != std::string::npos);
  CHECK(dot.find(" replies, ") != std::string::npos);
}

TEST_CASE("check prints slices, pushes per worker and keys per shard") {
  auto c = parse("cluster { shards = 2  slice_bytes = 65536  overlap = false }\nmodel mlp");
  auto p = build_plan(c);
  CHECK_FALSE(p.overlap);
  std::ostringstream config, plan;
  print_config(config, c);
  print_plan(plan, p);
  CHECK(config.str().find("cluster.slice_bytes = 65536  # line 1") != std::string::npos);
  CHECK(config.str().find("cluster.group_bytes = 65536  # default") != std::string::npos);
  CHECK(config.str().find("cluster.overlap = false  # line 1") != std::string::npos);
  CHECK(plan.str().find("fc1.weight (392 KiB) cut into 7 slices") != std::string::npos);
  CHECK(plan.str().find("each worker sends " + std::to_string(p.pushes_per_step)
                        + " per step, after backward")
        != std::string::npos);
  CHECK(plan.str().find("shard_1 owns " + std::to_string(p.shard_keys[1]) + " keys")
        != std::string::npos);
}

// CIFAR VGG-16: its 512-channel 3x3 convolutions (4.5 and 9 MiB) exceed the default 4 MiB slices.
TEST_CASE("vgg's big convolutions are sliced and spread evenly over the shards") {
  const std::string model = "data train = cifar10(\"/x\")\nmodel vgg\n";
  auto by_default = build_plan(parse("cluster { shards = 4 }\n" + model));
  CHECK_FALSE(by_default.sliced.empty());
  for (const auto& s : by_default.sliced)  // 256->512 (4.5 MiB): 2 slices; 512->512: 3
    CHECK(s.slices == (s.bytes + 4194303) / 4194304);
  auto fine = build_plan(parse("cluster { shards = 4  slice_bytes = 1048576 }\n" + model));
  CHECK(fine.keys_per_step > by_default.keys_per_step);
  for (const auto* p : {&by_default, &fine}) {
    REQUIRE(p->shard_bytes.size() == 4);
    CHECK(sum(p->shard_bytes) == p->parameters * 4);
    CHECK(sum(p->shard_keys) == p->keys_per_step);
    CHECK(sum(p->shard_pushes) == p->pushes_per_step);
  }
  auto [low, high] = std::minmax_element(fine.shard_bytes.begin(), fine.shard_bytes.end());
  CHECK(*high - *low <= 1048576);
}

} // namespace
} // namespace troupe
