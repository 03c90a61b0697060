// Semantic tests: defaults, every section's keys, presets and the routes they expand to, and
// written routes compiled or refused at the route that cannot train.
// The plan a config leads to is tested in ../placement_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/key_assignment.hpp>

#include "config_errors.hpp"

namespace troupe {
namespace {

job_config parse(const std::string& text) {
  return parse_job_config("t.troupe", text);
}

using test::error_of;

TEST_CASE("an empty config is the default job") {
  auto c = parse("");
  CHECK(c.model.network.value == "lenet");
  CHECK(c.train_data.dataset.value == "fashion_mnist");
  CHECK(c.train_data.batch.value == 128);
  CHECK(c.validation_data.batch.value == 500);
  CHECK(c.validation_data.split.value == "test");
  CHECK(c.topology.preset == topology_kind::bsp);
  CHECK(c.topology.levels == std::vector<aggregation_level>{{aggregation_scope::all, 0}});
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

TEST_CASE("recordio reads its file, index and image keys, validation needs its own file") {
  auto c =
    parse("data train = recordio(\"/d/t.rec\", index = \"/d/t.idx\", shape = [3, 64, 48], "
          "classes = 100, rgb_mean = [123.68, 116.78, 103.94], scale = [0.2, 0.9], "
          "ratio = [0.5, 2], skip_bad_records = true, batch = 16)\n"
          "data val = recordio(\"/d/v.rec\", shape = [3, 64, 48], classes = 100, resize = 72)\n");
  const auto& t = c.train_data;
  CHECK(t.dataset.value == "recordio");
  CHECK(t.dir.value == "/d/t.rec");
  CHECK(t.index.value == "/d/t.idx");
  CHECK(t.shape.value == std::vector<std::int64_t>{3, 64, 48});
  CHECK(t.rgb_mean.value == std::vector<double>{123.68, 116.78, 103.94});
  CHECK(t.scale.value == std::vector<double>{0.2, 0.9});
  CHECK(t.ratio.value == std::vector<double>{0.5, 2});
  CHECK(t.skip_bad_records.value);
  CHECK(t.random_crop.value); // training default
  CHECK(t.mirror.value);
  CHECK(c.model.classes.value == 100);
  CHECK(c.validation_data.enabled);
  CHECK(c.validation_data.resize.value == 72);
  CHECK_FALSE(c.validation_data.random_crop.value);
  CHECK_FALSE(c.validation_data.mirror.value);

  auto alone = parse("data train = recordio(\"/d/t.rec\")\n");
  CHECK(alone.train_data.shape.value == std::vector<std::int64_t>{3, 224, 224});
  CHECK_FALSE(alone.validation_data.enabled);
  CHECK_THROWS_WITH(parse("data train = recordio(\"t.rec\", split = \"test\")\n"),
                    Catch::Contains("split"));
  CHECK_THROWS_WITH(parse("data train = recordio(\"t.rec\", rgb_std = [0, 1, 1])\n"),
                    Catch::Contains("rgb_std values must be in (0, 255]"));
}

TEST_CASE("synthetic data sets shape and classes and the model follows") {
  auto c =
    parse("data train = synthetic(shape = [1, 12, 12], classes = 5, examples = 600)\nmodel mlp");
  CHECK(c.model.classes.value == 5);
  CHECK_FALSE(c.train_data.normalize.value);
  CHECK(c.validation_data.examples.value == 600);
}

TEST_CASE("data val none and eval_every 0 disable validation") {
  CHECK_FALSE(parse("data val = none").validation_data.enabled);
  CHECK_FALSE(parse("train { eval_every = 0 }").validation_data.enabled);
}

TEST_CASE("train top_k is off by default and at most the data's classes") {
  CHECK(parse("").run.top_k.value == 0);
  CHECK(parse("train { top_k = 5 }").run.top_k.value == 5);
  CHECK(parse("train { top_k = 10 }").run.top_k.value == 10); // fashion_mnist: 10 classes
  CHECK(error_of("train { top_k = 11 }")
        == "t.troupe:1:17: top_k must be at most the 10 classes, got 11");
  CHECK(error_of("data train = synthetic(classes = 3)\ntrain { top_k = 4 }")
        == "t.troupe:2:17: top_k must be at most the 3 classes, got 4");
  CHECK(error_of("train { top_k = -1 }").find("t.troupe:1:17: top_k must be between 0 and") == 0);
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

TEST_CASE("the step, poly, cosine-restart and one-cycle schedules take their own keys") {
  const auto step = parse("schedule step(period = 2.5, factor = 0.5)").schedule;
  CHECK(step.period.value == 2.5);
  CHECK(step.factor.value == 0.5);
  const auto poly = parse("schedule poly(power = 1, final_lr = 0.001)").schedule;
  CHECK(poly.power.value == 1);
  CHECK(poly.final_lr.value == 0.001);
  const auto sgdr = parse("schedule cosine(cycle = 2, cycle_mult = 2)").schedule;
  CHECK(sgdr.cycle.value == 2);
  CHECK(sgdr.cycle_mult.value == 2);
  const auto one = parse("schedule one_cycle(pct_start = 0.25, div_factor = 10)").schedule;
  CHECK(one.pct_start.value == 0.25);
  CHECK(one.div_factor.value == 10);
  CHECK(one.warmup.value == 0); // its rise is its warm-up
  CHECK_THAT(error_of("schedule one_cycle(warmup = 1)"), Catch::Contains("t.troupe:1:20:"));
  CHECK_THAT(error_of("schedule cosine(period = 2)"), Catch::Contains("t.troupe:1:17:"));
  CHECK_THAT(error_of("schedule poly(power = 0)"), Catch::Contains("t.troupe:1:23: power"));
  CHECK_THAT(error_of("schedule cosine(cycle_mult = 0.5)"), Catch::Contains("cycle_mult"));
  CHECK_THAT(error_of("schedule one_cycle(pct_start = 1)"), Catch::Contains("pct_start"));
}

TEST_CASE("a warm-up the config writes must end before its first decay or its run's end") {
  CHECK(error_of("schedule multi_step(steps = [50%], warmup = 1)\ntrain { epochs = 2 }")
        == "t.troupe:1:45: a warm-up of 1 epoch does not end before the first decay at epoch 1 "
           "(50% of 2 epochs), so the lr would never reach its rate: give a shorter warm-up or "
           "later steps");
  CHECK_THAT(error_of("schedule multi_step(steps = [3], warmup = 3)"),
             Catch::Contains("t.troupe:1:43: a warm-up of 3 epochs does not end before the first "
                             "decay at epoch 3,"));
  CHECK_THAT(error_of("schedule step(period = 1, warmup = 1)"),
             Catch::Contains("before the first decay at epoch 1 (period = 1)"));
  CHECK_THAT(error_of("schedule cosine(warmup = 5)\ntrain { epochs = 5 }"),
             Catch::Contains("does not end before the run's end at epoch 5"));
  CHECK_THAT(error_of("schedule constant(warmup = 6)\ntrain { epochs = 5 }"),
             Catch::Contains("the run's end at epoch 5"));
  // just inside: the rate holds from epoch 0.9 to the decay at 1
  CHECK(parse("schedule multi_step(steps = [50%], warmup = 0.9)\ntrain { epochs = 2 }")
          .schedule.warmup.value
        == 0.9);
  CHECK(parse("schedule cosine(warmup = 4.5)\ntrain { epochs = 5 }").notes.empty());
}

TEST_CASE("the default warm-up stays within half the epochs before the first decay") {
  CHECK(parse("schedule multi_step(steps = [5%])").schedule.warmup.value == Approx(0.25));
  CHECK(parse("schedule multi_step(steps = [0.4])").schedule.warmup.value == Approx(0.2));
  CHECK(parse("schedule step(period = 1)").schedule.warmup.value == Approx(0.5));
  CHECK(parse("schedule cosine").schedule.warmup.value == 1); // a tenth of 10 epochs
  CHECK(parse("train { epochs = 3 }").schedule.warmup.value == Approx(0.3));
}

TEST_CASE("each optimizer reads its own keys and takes its own defaults") {
  auto adam = parse("optimizer adam(3e-4, beta1 = 0.8, beta2 = 0.99, eps = 1e-6)");
  CHECK(adam.optimizer.name.value == "adam");
  CHECK(adam.optimizer.lr.value == 3e-4);
  CHECK(adam.optimizer.beta1.value == 0.8);
  CHECK(adam.optimizer.beta2.value == 0.99);
  CHECK(adam.optimizer.eps.value == 1e-6);
  CHECK(adam.optimizer.wd.value == 0); // PyTorch's Adam decays nothing unless told
  CHECK(parse("optimizer adamw").optimizer.wd.value == 0.01);
  CHECK(parse("optimizer adamw(wd = 0.1)").optimizer.wd.value == 0.1);
  auto rmsprop = parse("optimizer rmsprop(alpha = 0.9)");
  CHECK(rmsprop.optimizer.momentum.value == 0);
  CHECK(rmsprop.optimizer.alpha.value == 0.9);
  CHECK(parse("optimizer rmsprop(momentum = 0.5)").optimizer.momentum.value == 0.5);
  CHECK(parse("optimizer adagrad").optimizer.eps.value == 1e-10);
  CHECK(parse("optimizer lamb").optimizer.eps.value == 1e-6);
  CHECK(parse("").optimizer.wd.value == 1e-4); // sgd's, as always
  CHECK(optimizer_default_lr("adam") == 1e-3);
  CHECK(optimizer_default_lr("rmsprop") == 1e-2);
  CHECK(optimizer_default_lr("sgd") == 0);
}

TEST_CASE("an unknown optimizer, or a key of another optimizer, is refused where written") {
  CHECK(error_of("optimizer adadelta(lr = 0.1)")
        == "t.troupe:1:11: unknown optimizer 'adadelta' (known: sgd, adam, adamw, rmsprop, "
           "adagrad, lamb or lars)");
  CHECK(error_of("optimizer sgd(lr = 0.1, beta1 = 0.9)").find("t.troupe:1:25: ") == 0);
  CHECK(error_of("optimizer sgd(lr = 0.1, beta1 = 0.9)").find("beta1") != std::string::npos);
  CHECK(error_of("optimizer adam(nesterov = true)").find("t.troupe:1:16: ") == 0);
  CHECK(error_of("optimizer adagrad(alpha = 0.5)").find("t.troupe:1:19: ") == 0);
}

using levels = std::vector<aggregation_level>;
const aggregation_level machine{aggregation_scope::machine, 0};
const aggregation_level all{aggregation_scope::all, 0};

std::string routes_text(const topology_config& t) {
  std::string out;
  for (const auto& r : t.routes)
    out += (out.empty() ? "" : "; ") + to_string(r);
  return out;
}

TEST_CASE("presets expand to their routes") {
  auto a = parse("topology async").topology;
  CHECK(a.preset == topology_kind::async);
  CHECK(a.levels.empty());
  CHECK(a.staleness == -1);
  CHECK(routes_text(a) == "loader -> compute; compute -> shard; shard -> compute(sender)");
  auto ssp = parse("topology ssp(3)").topology;
  CHECK(ssp.preset == topology_kind::ssp);
  CHECK(ssp.staleness == 3);
  CHECK(routes_text(ssp)
        == "loader -> compute; compute -> shard; shard -> compute(sender, staleness = 3)");
  auto h = parse("cluster { workers = 4 }\ntopology hierarchical(machines = 2)").topology;
  CHECK(h.machines.value == 2);
  CHECK(h.levels == levels{machine, all});
  CHECK(routes_text(h)
        == "loader -> compute; compute -> aggregate(machine); "
           "aggregate(machine) -> aggregate(all); aggregate(all) -> shard; shard -> compute(all)");
  auto b = parse("cluster { workers = 4 }\ntopology backup(1)").topology;
  CHECK(b.levels == levels{{aggregation_scope::all, 3}});
  CHECK(routes_text(b)
        == "loader -> compute; compute -> aggregate(all, need = 3); "
           "aggregate(all) -> shard; shard -> compute(all)");
  CHECK(parse("topology bsp").topology.levels == levels{all});
  CHECK_FALSE(parse("topology bsp(deterministic = false)").topology.deterministic.value);
}

TEST_CASE("a preset above a block must be what the block compiles to") {
  auto b = parse("cluster { workers = 4 }\ntopology backup {\n loader -> compute\n"
                 " compute -> aggregate(first = 3) -> shard\n shard -> compute(all)\n}");
  CHECK(b.topology.preset == topology_kind::backup);
  CHECK(b.topology.levels == levels{{aggregation_scope::all, 3}});
  // The head's argument fills what the block leaves unwritten.
  auto s =
    parse("topology ssp(2) {\n loader -> compute\n compute -> shard\n shard -> compute(sender)\n}");
  CHECK(s.topology.staleness == 2);
  CHECK(s.topology.explicit_wiring);
  CHECK(
    error_of("topology bsp {\n loader -> compute\n compute -> shard -> compute(sender)\n}")
    == "t.troupe:1:10: these routes are not the preset's, which is: loader -> compute, "
       "compute -> aggregate(all), aggregate(all) -> shard, shard -> compute(all) (give a route "
       "set of your own a name of your own, e.g. 'topology mine { ... }')");
  // What was written and what ran could differ before routes compiled: this ran a global
  // aggregate nobody wrote.
  CHECK(
    error_of("cluster { workers = 4 }\ntopology hierarchical(machines = 2) {\n loader -> compute\n"
             " compute -> aggregate(machine) -> shard\n shard -> aggregate(machine)\n}")
      .rfind("t.troupe:2:10: these routes are not the preset's", 0)
    == 0);
  CHECK(error_of("cluster { workers = 4 }\ntopology backup(2) {\n loader -> compute\n"
                 " compute -> aggregate(all, need = 3) -> shard\n shard -> compute(all)\n}")
          .rfind("t.troupe:2:10: these routes are not the preset's", 0)
        == 0);
}

TEST_CASE("route sets no preset names compile into their own programs") {
  auto local =
    parse("cluster { workers = 4 }\ntopology local_sync(machines = 2) {\n loader -> compute\n"
          " compute -> aggregate(machine) -> shard\n shard -> aggregate(machine)\n}")
      .topology;
  CHECK_FALSE(local.preset);
  CHECK(local.name.value == "local_sync");
  CHECK(local.levels == levels{machine});
  CHECK(local.staleness == -1);
  CHECK(routes_text(local)
        == "loader -> compute; compute -> aggregate(machine); "
           "aggregate(machine) -> shard; shard -> aggregate(machine)");
  auto ssp =
    parse("cluster { workers = 4 }\ntopology mine {\n loader -> compute\n"
          " compute -> aggregate(machine) -> shard\n shard -> aggregate(machine, staleness = 2)\n}")
      .topology;
  CHECK(ssp.machines.value == 2); // the default
  CHECK(ssp.levels == levels{machine});
  CHECK(ssp.staleness == 2);
  auto backup = parse("cluster { workers = 6 }\ntopology mine(machines = 2) {\n loader -> compute\n"
                      " compute -> aggregate(machine, need = 2) -> aggregate(all) -> shard\n"
                      " shard -> compute(all)\n}")
                  .topology;
  CHECK(backup.levels == levels{{aggregation_scope::machine, 2}, all});
  // Backups at the machine level of aggregation, need written where the aggregate starts.
  auto later =
    parse("cluster { workers = 6 }\ntopology mine(machines = 3) {\n loader -> compute\n"
          " compute -> aggregate(machine)\n aggregate(machine) -> aggregate(all, need = 2)\n"
          " aggregate(all) -> shard\n shard -> compute(all)\n}")
      .topology;
  CHECK(later.levels == levels{machine, {aggregation_scope::all, 2}});
  // An async route set spelled out under a name of its own.
  auto plain = parse("topology free {\n loader -> compute\n compute -> shard\n shard -> "
                     "compute(sender, staleness = 0)\n}")
                 .topology;
  CHECK(plain.levels.empty());
  CHECK(plain.staleness == 0);
}

TEST_CASE("route sets that cannot train are refused at the route") {
  const std::string head = "cluster { workers = 4 }\ntopology mine {\n loader -> compute\n";
  // The answer must go back the way the gradients came.
  CHECK(error_of(head + " compute -> aggregate(machine) -> shard\n shard -> compute(all)\n}")
        == "t.troupe:5:2: the shard answers whoever pushed to it, here aggregate(machine): write "
           "'shard -> aggregate(machine)'");
  CHECK(error_of(head + " compute -> shard\n shard -> compute(all)\n}")
        == "t.troupe:5:2: the shard answers whoever pushed to it, here compute: write "
           "'shard -> compute(sender)'");
  // A staleness bound with one source at the shard.
  CHECK(
    error_of(head + " compute -> aggregate(all) -> shard\n shard -> compute(all, staleness = 2)\n}")
    == "t.troupe:5:36: aggregate(all) is the shard's one source: a staleness bound needs "
       "several (computes or machines)");
  CHECK(
    error_of(head + " compute -> aggregate(all, staleness = 1) -> shard\n shard -> compute(all)\n}")
    == "t.troupe:4:40: staleness bounds a shard's answers: write it on the shard's route, "
       "e.g. 'shard -> compute(sender, staleness = 2)'");
  // Aggregates in an order that sums a single source.
  CHECK(
    error_of(
      head + " compute -> aggregate(all) -> aggregate(machine) -> shard\n shard -> compute(all)\n}")
    == "t.troupe:4:2: aggregate(machine) after aggregate(all) would sum a single source: sum "
       "each machine first, then all of them");
  // A barrier that can never fill, pointed at the need.
  CHECK(
    error_of(head
             + " compute -> aggregate(machine, need = 3) -> shard\n shard -> aggregate(machine)\n}")
    == "t.troupe:4:39: aggregate(machine) needs 3 contributions per step but has only 2 "
       "computes on a machine: the barrier could never fill");
  // Two ways on for the gradients; an aggregate nothing feeds; a second answer.
  CHECK(error_of(head
                 + " compute -> shard\n compute -> aggregate(all)\n aggregate -> shard\n"
                   " shard -> compute(sender)\n}")
        == "t.troupe:5:2: compute sends gradients both to shard and to aggregate(all): choose one "
           "path");
  CHECK(
    error_of(head + " compute -> shard\n aggregate(machine) -> shard\n shard -> compute(sender)\n}")
    == "t.troupe:5:2: aggregate(machine) receives no gradients: no route from compute leads to it");
  CHECK(
    error_of(head + " compute -> shard\n shard -> compute(sender)\n shard -> aggregate(machine)\n}")
    == "t.troupe:6:2: a shard answers once, whoever pushed to it: keep one route from shard");
  CHECK(error_of(head + " compute -> aggregate(all) -> aggregate(all)\n shard -> compute(all)\n}")
        == "t.troupe:4:2: this route closes a cycle without a shard: gradients would circulate "
           "without ever being applied");
  CHECK(error_of(head + " compute -> shard\n compute -> shard\n shard -> compute(sender)\n}")
        == "t.troupe:5:2: duplicate route compute -> shard");
  // Only a shard sends weights; machines need a machine route; a preset-less name needs routes.
  CHECK(error_of(head + " compute -> aggregate(all) -> compute(all)\n shard -> compute(all)\n}")
        == "t.troupe:4:31: only a shard sends weights to compute; aggregate(all) sends its sums on "
           "toward a shard (and passes the answer back)");
  CHECK(error_of("topology mine(machines = 2) {\n loader -> compute\n compute -> shard\n shard -> "
                 "compute(sender)\n}")
        == "t.troupe:1:26: machines group computes for aggregate(machine), which no route names");
  CHECK(error_of("topology mine")
        == "t.troupe:1:10: unknown topology 'mine' (presets: bsp, async, ssp, hierarchical or "
           "backup; a topology of your own writes its routes in a block)");
}

TEST_CASE("wiring mistakes point at the route") {
  CHECK(error_of("topology async {\n loader -> compute\n loader -> compute\n compute -> shard\n"
                 " shard -> compute(sender)\n}")
        == "t.troupe:3:2: duplicate route loader -> compute");
  CHECK(error_of("topology async {\n loader -> shard\n}")
        == "t.troupe:2:12: a loader sends batches only to compute");
  CHECK(error_of("topology async {\n compute -> loader\n}")
        == "t.troupe:2:13: nothing can send to a loader: it only reads data");
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
          .cluster.group_bytes.value
        == std::int64_t{1} << 40);
}

TEST_CASE("cluster priority defaults to true and reads false") {
  auto c = parse("");
  CHECK(c.cluster.priority.value);
  CHECK_FALSE(c.cluster.priority.given);
  auto off = parse("cluster {\n  priority = false\n}");
  CHECK_FALSE(off.cluster.priority.value);
  CHECK(off.cluster.priority.given);
  CHECK(off.cluster.priority.span.line == 2);
  CHECK(error_of("cluster { priority = 0 }")
        == "t.troupe:1:22: priority must be true or false, got a number");
  CHECK(error_of("cluster { priority = true priority = true }")
        == "t.troupe:1:27: duplicate key 'priority' in cluster");
}

TEST_CASE("cluster reads the link's rate and backward's time, not stated by default") {
  auto c = parse("");
  CHECK(c.cluster.link_mbit.value == 0);
  CHECK_FALSE(c.cluster.link_mbit.given);
  CHECK(c.cluster.backward_ms.value == -1);
  CHECK_FALSE(c.cluster.backward_ms.given);
  auto stated = parse("cluster {\n  link_mbit = 1000\n  backward_ms = 250.5\n}");
  CHECK(stated.cluster.link_mbit.value == 1000);
  CHECK(stated.cluster.link_mbit.given);
  CHECK(stated.cluster.link_mbit.span.line == 2);
  CHECK(stated.cluster.backward_ms.value == 250.5);
  CHECK(stated.cluster.backward_ms.span.line == 3);
  CHECK(parse("cluster { backward_ms = -1 }").cluster.backward_ms.value == -1);
  CHECK(parse("cluster { backward_ms = 0 link_mbit = 10000000 }").cluster.link_mbit.value
        == 10000000);
}

TEST_CASE("a bad link rate or backward time points at the value") {
  CHECK(error_of("cluster { link_mbit = -1 }")
        == "t.troupe:1:23: link_mbit must be between 0 and 10000000 (0: not stated), got -1");
  CHECK(error_of("cluster { link_mbit = 10000001 }")
        == "t.troupe:1:23: link_mbit must be between 0 and 10000000 (0: not stated), got 10000001");
  CHECK(error_of("cluster { link_mbit = 1000.5 }")
        == "t.troupe:1:23: link_mbit must be a whole number, got '1000.5'");
  CHECK(error_of("cluster { link_mbit = \"1gbit\" }")
        == "t.troupe:1:23: link_mbit must be a whole number, got a string");
  CHECK(error_of("cluster { backward_ms = -0.5 }")
        == "t.troupe:1:25: backward_ms must be -1 (the compute stand-in's backward) or 0 to "
           "3600000 milliseconds, "
           "got -0.5");
  CHECK(error_of("cluster { backward_ms = -2 }").rfind("t.troupe:1:25: backward_ms must be", 0)
        == 0);
  CHECK(error_of("cluster { backward_ms = 3600001 }").rfind("t.troupe:1:25: backward_ms must be", 0)
        == 0);
  CHECK(error_of("cluster { link_mbit = 1 link_mbit = 2 }")
        == "t.troupe:1:25: duplicate key 'link_mbit' in cluster");
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
        == "t.troupe:1:25: group_bytes must be between 0 and 1099511627776, got 1099511627777");
  CHECK(error_of("cluster { group_bytes = \"64k\" }")
        == "t.troupe:1:25: group_bytes must be a whole number, got a string");
  CHECK(error_of("cluster { overlap = \"yes\" }")
        == "t.troupe:1:21: overlap must be true or false, got a string");
  CHECK(error_of("cluster { overlap = true overlap = false }")
        == "t.troupe:1:26: duplicate key 'overlap' in cluster");
}

} // namespace
} // namespace troupe

namespace troupe {

TEST_CASE("compress on a route sets that hop's compression, and the routes print it back") {
  auto c = parse_job_config("t.troupe",
                            "cluster { workers = 4 }\n"
                            "topology hierarchical(machines = 2) {\n"
                            "  loader -> compute\n"
                            "  compute -> aggregate(machine, compress = \"push:fp16\")\n"
                            "  aggregate(machine) -> aggregate(all, compress = \"2bit:0.01\")\n"
                            "  aggregate(all) -> shard\n"
                            "  shard -> compute(all)\n"
                            "}\n");
  const auto& t = c.topology;
  REQUIRE(t.levels.size() == 2);
  REQUIRE(t.compression.size() == 3); // one per hop: into each level, then into the shard
  CHECK(t.compression[0].pushes == value_encoding::fp16);
  CHECK(t.compression[0].answers == value_encoding::none);
  CHECK(t.compression[1].pushes == value_encoding::two_bit);
  CHECK(t.compression[1].answers == value_encoding::two_bit);
  CHECK(t.compression[1].threshold == 0.01f);
  CHECK_FALSE(t.compression[2].active());
  std::vector<std::string> printed;
  for (const auto& r : t.routes)
    printed.push_back(to_string(r));
  CHECK(std::find(printed.begin(), printed.end(),
                  "aggregate(machine) -> aggregate(all, compress = \"2bit:0.01\")")
        != printed.end());
  CHECK(std::find(printed.begin(), printed.end(),
                  "compute -> aggregate(machine, compress = \"push:fp16\")")
        != printed.end());
  // A fitted 2-bit route reads and prints back as fitted.
  auto fit = parse_job_config("t.troupe", "cluster { workers = 4 }\n"
                                          "topology bsp {\n"
                                          "  loader -> compute\n"
                                          "  compute -> aggregate(all, compress = \"2bit:fit\")\n"
                                          "  aggregate -> shard\n"
                                          "  shard -> compute(all)\n"
                                          "}\n");
  REQUIRE(fit.topology.compression.size() == 2);
  CHECK(fit.topology.compression[0].fitted);
  CHECK(fit.topology.compression[0].answers == value_encoding::two_bit);
  printed.clear();
  for (const auto& r : fit.topology.routes)
    printed.push_back(to_string(r));
  CHECK(
    std::find(printed.begin(), printed.end(), "compute -> aggregate(all, compress = \"2bit:fit\")")
    != printed.end());
}

TEST_CASE(
  "the compression flag compresses the hop where gradients leave their machine, and only it") {
  std::string why;
  const auto two = *parse_compression("2bit", why);
  auto bsp = parse_job_config("t.troupe", "cluster { workers = 4 }\ntopology bsp\n");
  compress_machine_exit(bsp.topology, two);
  REQUIRE(bsp.topology.compression.size() == 2);
  CHECK(bsp.topology.compression[0] == two); // compute -> aggregate(all)
  CHECK_FALSE(bsp.topology.compression[1].active());
  auto hier =
    parse_job_config("t.troupe", "cluster { workers = 4 }\ntopology hierarchical(machines = 2)\n");
  compress_machine_exit(hier.topology, two);
  REQUIRE(hier.topology.compression.size() == 3);
  CHECK_FALSE(hier.topology.compression[0].active());
  CHECK(hier.topology.compression[1] == two); // aggregate(machine) -> aggregate(all)
  auto async = parse_job_config("t.troupe", "cluster { workers = 2 }\ntopology async\n");
  compress_machine_exit(async.topology, *parse_compression("push:fp16", why));
  REQUIRE(async.topology.compression.size() == 1);
  CHECK(async.topology.compression[0].pushes == value_encoding::fp16);
  compress_machine_exit(async.topology, compression_spec{});
  CHECK(async.topology.compression.empty());
}

} // namespace troupe
