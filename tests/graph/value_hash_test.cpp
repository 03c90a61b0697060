// value_hash / job_hash: the encoding is the documented one, the hash of the default job is
// pinned (a change of field order or encoding shows up here), equal jobs hash equal, and
// changing any single field of a training_job, nested ones included, changes the hash.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <troupe/graph/job.hpp>
#include <troupe/graph/value_hash.hpp>

namespace troupe {
namespace {

// 64-bit FNV-1a over `bytes`, written out independently of value_hasher.
std::uint64_t fnv1a(const std::vector<unsigned char>& bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (auto b : bytes) {
    h ^= b;
    h *= 1099511628211ULL;
  }
  return h;
}

TEST_CASE("value_hash encodes scalars, strings and vectors as documented") {
  CHECK(value_hash(true) == fnv1a({1}));
  CHECK(value_hash(false) == fnv1a({0}));
  CHECK(value_hash(std::int32_t{-2}) == fnv1a({0xfe, 0xff, 0xff, 0xff}));
  CHECK(value_hash(std::uint16_t{0x1234}) == fnv1a({0x34, 0x12}));
  CHECK(value_hash(std::int64_t{1}) == fnv1a({1, 0, 0, 0, 0, 0, 0, 0}));
  CHECK(value_hash(1.0f) == fnv1a({0x00, 0x00, 0x80, 0x3f}));       // 0x3f800000
  CHECK(value_hash(-2.0) == fnv1a({0, 0, 0, 0, 0, 0, 0x00, 0xc0})); // 0xc000000000000000
  CHECK(value_hash(0.0f) != value_hash(-0.0f));
  // Enums go through their underlying type.
  CHECK(value_hash(topology_kind::ssp) == value_hash(static_cast<int>(topology_kind::ssp)));
  CHECK(value_hash(std::string("ab")) == fnv1a({2, 0, 0, 0, 0, 0, 0, 0, 'a', 'b'}));
  CHECK(value_hash(std::vector<std::int32_t>{7}) == fnv1a({1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0}));
  // A struct is its fields in declaration order, with nothing between them.
  CHECK(value_hash(sgd_options{1.0f, 0.0f, true})
        == fnv1a({0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0, 1}));
}

TEST_CASE("value_hash keeps adjacent vectors and strings apart") {
  augment_options a, b;
  a.mean = {0.5f};
  b.stdev = {0.5f};
  CHECK(value_hash(a) != value_hash(b));
  dataset_options c, d;
  c.name = "ab";
  c.dir = "";
  d.name = "a";
  d.dir = "b";
  CHECK(value_hash(c) != value_hash(d));
}

TEST_CASE("job_hash of the default training_job is pinned") {
  // If this fails, the fields of training_job (or of a struct inside it), their order or the
  // encoding changed: processes built before and after no longer agree on a job's hash. Update
  // the literal only when that is intended. (The first literal was cross-checked against an
  // encoder written apart, in Python, when the default job was 521 bytes of encoding; this one
  // follows the multi-node fields, e.g. on_worker_loss, and the RecordIO dataset and
  // augmentation fields, and training_job::top_k: the previous hash,
  // 0x83cc8c8ef3c29b88, times the FNV prime four times for top_k's four zero bytes; then the
  // topology became its route program: name, machines, levels and staleness in
  // place of the preset's kind, staleness, backups and machines; then the test knob
  // topology.straggler / straggle_ms left the job: 0xe92954f1461c2f6a with FNV undone, byte
  // by byte, over the 13 zero bytes after them (nodes, top_k) and their 8 bytes ff ff ff ff
  // 00 00 00 00, and the 13 zero bytes fed again; then cluster_nodes::adopt_on_worker_loss
  // (on_worker_loss = adopt) added one byte after continue_on_worker_loss; then
  // cluster_nodes::replicas four bytes, 01 00 00 00, after it; then
  // topology_options::priority one byte, 01, after overlap; and
  // topology_options::compression, an empty list after topology.keys: its
  // length; then cluster_nodes::replicas (01 00 00 00) became shard_backups, 00 00 00 00;
  // then lr_schedule_options gained seven doubles after warmup_begin_factor: period, power,
  // cycle, cycle_mult, pct_start, div_factor, final_div_factor; dataset_options::subset,
  // 20 zero bytes (an empty class list's length, first, class_count) after skip_bad_records
  // in both datasets; augment_options' colour jitter and rotation, four zero doubles after
  // resize_shorter, in the training and the validation batches' options; and
  // optimizer_options became an update_rule and its schedule: the optimizer's kind (one
  // byte, 00) before the SGD options, and beta1, beta2, eps, alpha and trust (five floats)
  // after them; then training_job::init_from and reset_layers, an empty string's and an empty
  // list's lengths, 16 zero bytes after top_k.)
  CHECK(job_hash(training_job{}) == 0x386099d05f5fb6f9ULL);
}

TEST_CASE("job_hash is equal for equal jobs and matches value_hash") {
  training_job a;
  a.model.network = "resnet";
  a.optimizer.schedule.step_epochs = {30, 60};
  use_preset(a.topology, topology_kind::hierarchical);
  training_job b = a;
  CHECK(job_hash(a) == job_hash(b));
  CHECK(job_hash(a) == value_hash(a));
  CHECK(job_hash(a) == job_hash(a));
  CHECK(job_hash(a) != job_hash(training_job{}));
}

// One change per field of training_job, nested fields included, each to a value other than
// the default.
std::vector<std::pair<std::string, std::function<void(training_job&)>>> single_field_changes() {
  using job = training_job;
  std::vector<std::pair<std::string, std::function<void(job&)>>> changes{
    {"model.network", [](job& j) { j.model.network = "lenet"; }},
    {"model.num_layers", [](job& j) { j.model.num_layers = 20; }},
    {"model.sample_shape",
     [](job& j) {
       j.model.sample_shape = {3, 32, 32};
     }},
    {"model.classes", [](job& j) { j.model.classes = 100; }},
    {"model.seed", [](job& j) { j.model.seed = 1; }},
    {"optimizer.kind", [](job& j) { j.optimizer.kind = optimizer_kind::adam; }},
    {"optimizer.sgd.momentum", [](job& j) { j.optimizer.sgd.momentum = 0.8f; }},
    {"optimizer.sgd.weight_decay", [](job& j) { j.optimizer.sgd.weight_decay = 1e-4f; }},
    {"optimizer.sgd.nesterov", [](job& j) { j.optimizer.sgd.nesterov = true; }},
    {"optimizer.beta1", [](job& j) { j.optimizer.beta1 = 0.8f; }},
    {"optimizer.beta2", [](job& j) { j.optimizer.beta2 = 0.99f; }},
    {"optimizer.eps", [](job& j) { j.optimizer.eps = 1e-6f; }},
    {"optimizer.alpha", [](job& j) { j.optimizer.alpha = 0.9f; }},
    {"optimizer.trust", [](job& j) { j.optimizer.trust = 0.01f; }},
    {"optimizer.schedule.policy", [](job& j) { j.optimizer.schedule.policy = lr_policy::cosine; }},
    {"optimizer.schedule.base_lr", [](job& j) { j.optimizer.schedule.base_lr = 0.05f; }},
    {"optimizer.schedule.step_epochs", [](job& j) { j.optimizer.schedule.step_epochs = {5}; }},
    {"optimizer.schedule.factor", [](job& j) { j.optimizer.schedule.factor = 0.5f; }},
    {"optimizer.schedule.total_epochs", [](job& j) { j.optimizer.schedule.total_epochs = 90; }},
    {"optimizer.schedule.final_lr", [](job& j) { j.optimizer.schedule.final_lr = 1e-3f; }},
    {"optimizer.schedule.warmup_epochs", [](job& j) { j.optimizer.schedule.warmup_epochs = 5; }},
    {"optimizer.schedule.warmup_begin_factor",
     [](job& j) { j.optimizer.schedule.warmup_begin_factor = 0.1f; }},
    {"optimizer.schedule.period", [](job& j) { j.optimizer.schedule.period = 30; }},
    {"optimizer.schedule.power", [](job& j) { j.optimizer.schedule.power = 1; }},
    {"optimizer.schedule.cycle", [](job& j) { j.optimizer.schedule.cycle = 10; }},
    {"optimizer.schedule.cycle_mult", [](job& j) { j.optimizer.schedule.cycle_mult = 2; }},
    {"optimizer.schedule.pct_start", [](job& j) { j.optimizer.schedule.pct_start = 0.25; }},
    {"optimizer.schedule.div_factor", [](job& j) { j.optimizer.schedule.div_factor = 10; }},
    {"optimizer.schedule.final_div_factor",
     [](job& j) { j.optimizer.schedule.final_div_factor = 100; }},
    {"prefetch_depth", [](job& j) { j.prefetch_depth = 4; }},
    {"epochs", [](job& j) { j.epochs = 11; }},
    {"validate", [](job& j) { j.validate = false; }},
    {"validate_every", [](job& j) { j.validate_every = 2; }},
    {"shards", [](job& j) { j.shards = 2; }},
    {"topology.name", [](job& j) { j.topology.name = "mine"; }},
    {"topology.workers", [](job& j) { j.topology.workers = 2; }},
    {"topology.machines", [](job& j) { j.topology.machines = 2; }},
    {"topology.levels", [](job& j) { j.topology.levels.clear(); }},
    {"topology.levels.need", [](job& j) { j.topology.levels[0].need = 1; }},
    {"topology.levels.scope",
     [](job& j) { j.topology.levels[0].scope = aggregation_scope::machine; }},
    {"topology.staleness", [](job& j) { j.topology.staleness = 1; }},
    {"topology.deterministic", [](job& j) { j.topology.deterministic = false; }},
    {"topology.overlap", [](job& j) { j.topology.overlap = false; }},
    {"topology.priority", [](job& j) { j.topology.priority = false; }},
    {"topology.keys.slice_bytes", [](job& j) { j.topology.keys.slice_bytes = 1 << 20; }},
    {"topology.keys.group_bytes", [](job& j) { j.topology.keys.group_bytes = 0; }},
    {"nodes.servers", [](job& j) { j.nodes.servers = 1; }},
    {"nodes.workers", [](job& j) { j.nodes.workers = 1; }},
    {"nodes.continue_on_worker_loss", [](job& j) { j.nodes.continue_on_worker_loss = true; }},
    {"nodes.adopt_on_worker_loss", [](job& j) { j.nodes.adopt_on_worker_loss = true; }},
    {"nodes.shard_backups", [](job& j) { j.nodes.shard_backups = 1; }},
    {"top_k", [](job& j) { j.top_k = 5; }},
    {"init_from", [](job& j) { j.init_from = "runs/lenet-3"; }},
    {"reset_layers", [](job& j) { j.reset_layers = {"fc2"}; }},
  };
  // The two data sets and the two batch sources have the same fields each.
  for (auto [prefix, data] : {std::pair{"train_data", &job::train_data},
                              std::pair{"validation_data", &job::validation_data}}) {
    auto add = [&, prefix = std::string(prefix),
                data = data](const char* field, std::function<void(dataset_options&)> change) {
      changes.emplace_back(prefix + "." + field, [data, change](job& j) { change(j.*data); });
    };
    add("name", [](dataset_options& d) { d.name = "mnist"; });
    add("dir", [](dataset_options& d) { d.dir = "/tmp"; });
    add("which", [](dataset_options& d) { d.which = split::test; });
    add("synthetic_shape", [](dataset_options& d) { d.synthetic_shape = {1, 28, 29}; });
    add("synthetic_classes", [](dataset_options& d) { d.synthetic_classes = 11; });
    add("synthetic_size", [](dataset_options& d) { d.synthetic_size = 60001; });
    add("synthetic_seed", [](dataset_options& d) { d.synthetic_seed = 7; });
    add("record_index", [](dataset_options& d) { d.record_index = "/tmp/a.idx"; });
    add("record_shape", [](dataset_options& d) { d.record_shape = {3, 224, 225}; });
    add("record_classes", [](dataset_options& d) { d.record_classes = 999; });
    add("skip_bad_records", [](dataset_options& d) { d.skip_bad_records = true; });
  }
  for (auto [prefix, batches] : {std::pair{"train_batches", &job::train_batches},
                                 std::pair{"validation_batches", &job::validation_batches}}) {
    auto add = [&, prefix = std::string(prefix), batches = batches](
                 const char* field, std::function<void(batch_source_options&)> change) {
      changes.emplace_back(prefix + "." + field, [batches, change](job& j) { change(j.*batches); });
    };
    add("batch_size", [](batch_source_options& b) { b.batch_size = 64; });
    add("shuffle", [](batch_source_options& b) { b.shuffle = false; });
    add("seed", [](batch_source_options& b) { b.seed = 3; });
    add("part", [](batch_source_options& b) { b.part = 1; });
    add("parts", [](batch_source_options& b) { b.parts = 2; });
    add("drop_last", [](batch_source_options& b) { b.drop_last = true; });
    add("augment.mean", [](batch_source_options& b) { b.augment.mean = {0.5f}; });
    add("augment.stdev", [](batch_source_options& b) { b.augment.stdev = {0.25f}; });
    add("augment.pad_crop", [](batch_source_options& b) { b.augment.pad_crop = 4; });
    add("augment.mirror", [](batch_source_options& b) { b.augment.mirror = true; });
    add("augment.random_resized_crop",
        [](batch_source_options& b) { b.augment.random_resized_crop = true; });
    add("augment.crop_scale_min", [](batch_source_options& b) { b.augment.crop_scale_min = 0.1; });
    add("augment.crop_scale_max", [](batch_source_options& b) { b.augment.crop_scale_max = 0.9; });
    add("augment.crop_ratio_min", [](batch_source_options& b) { b.augment.crop_ratio_min = 0.5; });
    add("augment.crop_ratio_max", [](batch_source_options& b) { b.augment.crop_ratio_max = 2; });
    add("augment.resize_shorter", [](batch_source_options& b) { b.augment.resize_shorter = 256; });
  }
  return changes;
}

TEST_CASE("changing any single field of a training_job changes job_hash") {
  const auto changes = single_field_changes();
  // One per field of the job and of the structs inside it (a field added without a change
  // listed here fails this count).
  REQUIRE(changes.size() == 108);
  const auto base = job_hash(training_job{});
  std::set<std::uint64_t> seen{base};
  for (const auto& [field, change] : changes) {
    training_job changed;
    change(changed);
    const auto hash = job_hash(changed);
    INFO(field);
    CHECK(hash != base);
    CHECK(seen.insert(hash).second); // and no two changes give the same hash
    CHECK(job_hash(changed) == hash);
  }
}

} // namespace
} // namespace troupe
