// The values that may cross a process boundary through CAF itself, round-tripped through CAF
// 0.17's binary_serializer / binary_deserializer: a training_job (every nested options struct
// and enum), tensors (empty, scalar, 3-D), and the reports and result the actors send.
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <troupe/actors/messages.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/value_hash.hpp>
#include <troupe/kernels/tensor.hpp>

using namespace troupe;

namespace {

// No actor system: plain values need no execution unit.
template <class T> std::vector<char> save(T& value) {
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  auto err = sink(value);
  REQUIRE(!err);
  return bytes;
}

// Loads a T from `bytes`, requiring that the whole buffer is consumed.
template <class T> T load(const std::vector<char>& bytes) {
  T value;
  caf::binary_deserializer source{nullptr, bytes};
  auto err = source(value);
  REQUIRE(!err);
  CHECK(source.remaining() == 0);
  return value;
}

void require_same(const tensor& a, const tensor& b) {
  REQUIRE(a.shape() == b.shape());
  REQUIRE(a.numel() == b.numel());
  for (std::int64_t i = 0; i < a.numel(); ++i)
    CHECK(a.data()[i] == b.data()[i]);
}

training_job non_default_job() {
  training_job job;
  job.model = model_spec{"resnet", 20, {3, 32, 32}, 10, 42};
  job.train_data.name = "cifar10";
  job.train_data.dir = "/data/cifar-10-batches-bin";
  job.validation_data = job.train_data;
  job.validation_data.which = split::test;
  job.validation_data.synthetic_shape = {3, 8, 8};
  job.train_batches.batch_size = 64;
  job.train_batches.seed = 0xfedcba9876543210ULL;
  job.train_batches.parts = 4;
  job.train_batches.part = 3;
  job.train_batches.augment =
    augment_options{{0.49f, 0.48f, 0.45f}, {0.25f, 0.24f, 0.26f}, 4, true};
  job.validation_batches.shuffle = false;
  job.validation_batches.drop_last = true;
  job.optimizer.sgd = sgd_options{0.95f, 5e-4f, true};
  job.optimizer.schedule.policy = lr_policy::multi_step;
  job.optimizer.schedule.step_epochs = {80, 120.5};
  job.optimizer.schedule.warmup_epochs = 2.5;
  job.prefetch_depth = 5;
  job.epochs = 160;
  job.validate = false;
  job.validate_every = 3;
  job.shards = 2;
  job.topology.workers = 4;
  use_preset(job.topology, topology_kind::hierarchical, 2);
  job.topology.deterministic = false;
  job.topology.keys = key_plan_options{1 << 20, 0};
  return job;
}

} // namespace

TEST_CASE("a training_job round-trips through CAF's binary serializer") {
  auto job = non_default_job();
  REQUIRE(job_hash(job) != job_hash(training_job{}));
  auto bytes = save(job);
  REQUIRE(!bytes.empty());
  auto loaded = load<training_job>(bytes);
  CHECK(job_hash(loaded) == job_hash(job));
  auto again = save(loaded);
  REQUIRE(again.size() == bytes.size());
  CHECK(again == bytes);
  // A few fields by name, enums among them, so a failure says where.
  CHECK(loaded.model.network == "resnet");
  CHECK(loaded.validation_data.which == split::test);
  CHECK(loaded.optimizer.schedule.policy == lr_policy::multi_step);
  CHECK(loaded.optimizer.schedule.step_epochs == std::vector<double>{80, 120.5});
  CHECK(loaded.topology.name == "hierarchical");
  CHECK(loaded.topology.levels == job.topology.levels);
  CHECK(loaded.topology.keys.group_bytes == 0);
  CHECK(loaded.train_batches.augment.stdev == std::vector<float>{0.25f, 0.24f, 0.26f});
}

TEST_CASE("tensors round-trip through CAF's binary serializer with storage of their own") {
  SECTION("3-D") {
    auto t = tensor::from_values({2, 1, 3}, {1.5f, -2, 0, 3.25f, -0.0f, 1e-30f});
    auto loaded = load<tensor>(save(t));
    require_same(loaded, t);
    CHECK_FALSE(loaded.shares_storage_with(t));
  }
  SECTION("empty (default) stays empty") {
    tensor t;
    auto loaded = load<tensor>(save(t));
    CHECK(loaded.empty());
    CHECK(loaded.rank() == 0);
  }
  SECTION("rank-0 scalar stays a scalar") {
    auto t = tensor::from_values({}, {7});
    auto loaded = load<tensor>(save(t));
    REQUIRE(loaded.numel() == 1);
    CHECK(loaded.rank() == 0);
    CHECK(loaded.data()[0] == 7);
  }
  SECTION("zero extent") {
    tensor t(shape_t{0, 4});
    auto loaded = load<tensor>(save(t));
    CHECK(loaded.shape() == shape_t{0, 4});
    CHECK(loaded.numel() == 0);
  }
  SECTION("an element count that disagrees with the shape throws") {
    shape_t shape{2, 3};
    std::vector<float> values(5, 1.0f);
    std::vector<char> bytes;
    caf::binary_serializer sink{nullptr, bytes};
    REQUIRE(!sink(shape, values));
    CHECK_THROWS_AS(load<tensor>(bytes), std::invalid_argument);
  }
  SECTION("truncated input is an error, not a tensor") {
    auto t = tensor::from_values({2}, {1, 2});
    auto bytes = save(t);
    bytes.pop_back();
    tensor loaded;
    caf::binary_deserializer source{nullptr, bytes};
    CHECK(source(loaded));
    CHECK(loaded.empty());
  }
}

#ifdef TROUPE_MESSAGES_INSPECTABLE
TEST_CASE("reports and results round-trip through CAF's binary serializer") {
  SECTION("batch_report") {
    batch_report r{3, 7, 12, 469, 128, 117, 12.625, 0.05f};
    auto loaded = load<batch_report>(save(r));
    CHECK(loaded.rank == 3);
    CHECK(loaded.epoch == 7);
    CHECK(loaded.index == 12);
    CHECK(loaded.batches == 469);
    CHECK(loaded.samples == 128);
    CHECK(loaded.correct == 117);
    CHECK(loaded.loss_sum == 12.625);
    CHECK(loaded.learning_rate == 0.05f);
  }
  SECTION("phase_report") {
    phase_report r{9, true, 10000, 9123, 2345.5, 1.75};
    auto loaded = load<phase_report>(save(r));
    CHECK(loaded.epoch == 9);
    CHECK(loaded.validation);
    CHECK(loaded.samples == 10000);
    CHECK(loaded.correct == 9123);
    CHECK(loaded.loss_sum == 2345.5);
    CHECK(loaded.seconds == 1.75);
  }
  SECTION("training_result") {
    // Still whitelisted as unsafe, CAF would skip it silently instead of serializing it.
    CHECK_FALSE(caf::allowed_unsafe_message_type<training_result>::value);
    training_result r;
    r.phases = {phase_report{0, false, 60000, 51000, 30000, 4.5, 3.25},
                phase_report{0, true, 10000, 8700, 4000, 0.5}};
    r.parameter_names = {"fc1.weight", "fc1.bias"};
    r.final_weights = {tensor::from_values({2, 3}, {1, 2, 3, 4, 5, 6}),
                       tensor::from_values({2}, {-1, 0.5f})};
    r.plan_hash = 0x0123456789abcdefULL;
    auto bytes = save(r);
    REQUIRE(!bytes.empty());
    auto loaded = load<training_result>(bytes);
    REQUIRE(loaded.phases.size() == 2);
    CHECK(loaded.phases[1].validation);
    CHECK(loaded.phases[1].correct == 8700);
    CHECK(loaded.phases[0].seconds == 4.5);
    CHECK(loaded.phases[0].step_seconds == 3.25);
    CHECK(loaded.parameter_names == r.parameter_names);
    REQUIRE(loaded.final_weights.size() == 2);
    require_same(loaded.final_weights[0], r.final_weights[0]);
    require_same(loaded.final_weights[1], r.final_weights[1]);
    CHECK(loaded.plan_hash == 0x0123456789abcdefULL);
    auto again = save(loaded);
    REQUIRE(again.size() == bytes.size());
    CHECK(again == bytes);
  }
}
#endif
