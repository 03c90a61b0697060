// A whole single-process run through the actors on small synthetic data: it learns, it is
// deterministic, and the number of shards does not change the result.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/kernels/threading.hpp>

using namespace troupe;

namespace {

training_job small_job() {
  training_job o;
  o.model.network = "mlp";
  o.train_data.name = "synthetic";
  o.train_data.synthetic_shape = {1, 8, 8};
  o.train_data.synthetic_size = 512;
  o.train_data.synthetic_classes = 4;
  o.validation_data = o.train_data;
  o.validation_data.which = split::test;
  o.validation_data.synthetic_size = 768;  // the test split is a sixth: 128
  o.train_batches.batch_size = 32;
  o.validation_batches.batch_size = 64;
  o.validation_batches.shuffle = false;
  o.optimizer.sgd = sgd_options{0.9f, 1e-4f, false};
  o.optimizer.schedule.policy = lr_policy::constant;
  o.optimizer.schedule.base_lr = 0.05f;
  o.epochs = 3;
  return o;
}

double accuracy(const phase_report& r) {
  return static_cast<double>(r.correct) / static_cast<double>(r.samples);
}

} // namespace

TEST_CASE("a run through the actors trains, reports every phase and repeats exactly") {
  set_compute_threads(2);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  auto first = run_training(sys, job);
  REQUIRE(first.phases.size() == 6);  // train + validation per epoch
  for (std::size_t i = 0; i < first.phases.size(); ++i) {
    CHECK(first.phases[i].epoch == static_cast<std::int64_t>(i / 2));
    CHECK(first.phases[i].validation == (i % 2 == 1));
  }
  CHECK(first.phases[0].samples == 512);
  CHECK(first.phases[1].samples == 128);
  CHECK(first.phases[4].loss_sum / 512 < first.phases[0].loss_sum / 512);
  CHECK(accuracy(first.phases[5]) > 0.5);  // 4 classes: chance is 0.25

  auto second = run_training(sys, job);
  for (std::size_t i = 0; i < first.phases.size(); ++i) {
    CHECK(second.phases[i].correct == first.phases[i].correct);
    CHECK(second.phases[i].loss_sum == first.phases[i].loss_sum);
  }

  job.shards = 3;
  auto sharded = run_training(sys, job);
  for (std::size_t i = 0; i < first.phases.size(); ++i)
    CHECK(sharded.phases[i].loss_sum == first.phases[i].loss_sum);
}

TEST_CASE("a run with missing data fails before any actor starts, naming the file") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.train_data.name = "fashion-mnist";
  job.train_data.dir = "/nonexistent/fmnist";
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("/nonexistent/fmnist"));
}

TEST_CASE("a run with an unknown network fails with the list of networks") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.model.network = "alexnet";
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("alexnet") && Catch::Contains("lenet"));
}

TEST_CASE("a failure inside a running actor ends the run with its message") {
  // Validation data with more classes than the model has logits: the compute actor's
  // evaluate throws on the first validation batch, after a full training epoch.
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.epochs = 1;
  job.validation_data.synthetic_classes = 10;
  CHECK_THROWS_WITH(run_training(sys, job),
                    Catch::Contains("compute: ") && Catch::Contains("label"));
}

TEST_CASE("validate_every 2 validates after epochs 2 and 4 and after the last one") {
  set_compute_threads(2);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto job = small_job();
  job.epochs = 5;
  job.validate_every = 2;
  auto r = run_training(sys, job);
  std::vector<std::string> kinds;
  for (const auto& p : r.phases)
    kinds.push_back((p.validation ? "V" : "T") + std::to_string(p.epoch));
  CHECK(kinds == std::vector<std::string>{"T0", "T1", "V1", "T2", "T3", "V3", "T4", "V4"});
  job.validate_every = 0;
  CHECK_THROWS_WITH(run_training(sys, job), Catch::Contains("validate_every must be at least 1"));
}
