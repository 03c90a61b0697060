// Checkpoints through whole runs: a run resumed from its epoch-2 checkpoint ends with the
// uninterrupted run's weights bit for bit (one and several workers and shards, sliced keys,
// bsp, hierarchical, async with one worker, a model with batch norm), and the comparison is
// sensitive: a checkpoint with its momentum or its batch-norm statistics zeroed resumes into
// other weights. A checkpoint resumes with another number of shards (keys re-sharded), and a
// cluster run's manifest and parts resume in one process, both bit-identical. A checkpoint that
// does not fit the job is refused before training, naming the file; the actors' own
// snapshot/restore messages refuse what they cannot take.
#include <catch2/catch.hpp>

#include <cstring>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/io/checkpoint_file.hpp>
#include <troupe/io/checkpoint_parts.hpp>

#include "tests/io/checkpoint_split.hpp"
#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

training_job small_job(const std::string& network = "mlp") {
  training_job o;
  o.model.network = network;
  o.model.num_layers = network == "resnet" ? 8 : 0;
  o.train_data.name = "synthetic";
  o.train_data.synthetic_shape = network == "resnet" ? shape_t{3, 8, 8} : shape_t{1, 8, 8};
  o.train_data.synthetic_size = 256;
  o.train_data.synthetic_classes = 4;
  o.validation_data = o.train_data;
  o.validation_data.which = split::test;
  o.train_batches.batch_size = 32;
  o.validation_batches.batch_size = 64;
  o.validation_batches.shuffle = false;
  o.optimizer.sgd = sgd_options{0.9f, 1e-4f, false};
  o.optimizer.schedule.policy = lr_policy::multi_step; // a schedule whose position matters
  o.optimizer.schedule.base_lr = 0.05f;
  o.optimizer.schedule.step_epochs = {2.5};
  o.epochs = 4;
  return o;
}

training_result run(const training_job& job, const std::string& prefix,
                    std::int64_t load_epoch = -1) {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  session_output out;
  out.checkpoint.prefix = prefix;
  out.checkpoint.load_epoch = load_epoch;
  return run_training(sys, job, out);
}

bool same_weights(const training_result& a, const training_result& b) {
  REQUIRE(a.final_weights.size() == b.final_weights.size());
  for (std::size_t k = 0; k < a.final_weights.size(); ++k) {
    const auto& x = a.final_weights[k];
    const auto& y = b.final_weights[k];
    if (x.shape() != y.shape() || std::memcmp(x.data(), y.data(), x.bytes()) != 0)
      return false;
  }
  return true;
}

// Trains 4 epochs saving every epoch, resumes from epoch 2 into a second prefix, and checks
// both the resumed run's weights and its final checkpoint against the uninterrupted run's.
void check_resume_is_exact(const training_job& job) {
  test::temp_dir dir;
  const auto whole = run(job, dir.file("whole"));
  for (int e = 1; e <= 4; ++e)
    CHECK(read_checkpoint(checkpoint_path(dir.file("whole"), e)).epoch == e);
  const auto resumed = run(job, dir.file("whole"), 2);
  CHECK(same_weights(whole, resumed));
  REQUIRE(resumed.phases.size() == 4); // epochs 2 and 3 only, each trained and validated
  CHECK(resumed.phases.front().epoch == 2);
  // Validation after epoch 2 reads the replicas' batch-norm statistics: the same loss.
  CHECK(resumed.phases[1].loss_sum == whole.phases[5].loss_sum);
  const auto saved = read_checkpoint(checkpoint_path(dir.file("whole"), 4));
  for (std::size_t slot = 0; slot < saved.parameters.size(); ++slot)
    CHECK(std::memcmp(saved.parameters[slot].value.data(), whole.final_weights[slot].data(),
                      whole.final_weights[slot].bytes())
          == 0);
}

} // namespace

TEST_CASE("a run resumed from its epoch-2 checkpoint ends bit-identical: one worker, one shard") {
  check_resume_is_exact(small_job());
}

TEST_CASE("resumed bsp with 2 workers and 2 shards over sliced keys ends bit-identical") {
  auto job = small_job();
  job.topology.workers = 2;
  job.shards = 2;
  job.topology.keys.slice_bytes = 4096; // the first layer's weight is cut into slices
  check_resume_is_exact(job);
}

TEST_CASE("resumed hierarchical and one-worker async runs end bit-identical") {
  auto job = small_job();
  job.topology.workers = 4;
  use_preset(job.topology, topology_kind::hierarchical, 2);
  check_resume_is_exact(job);
  job = small_job();
  use_preset(job.topology, topology_kind::async);
  check_resume_is_exact(job);
}

TEST_CASE("a model with batch norm resumes bit-identical, its running statistics restored") {
  check_resume_is_exact(small_job("resnet"));
}

TEST_CASE("the resumed weights depend on the restored momentum and batch-norm statistics") {
  test::temp_dir dir;
  auto job = small_job("resnet");
  const auto whole = run(job, dir.file("m"));
  auto zeroed = read_checkpoint(checkpoint_path(dir.file("m"), 2));
  for (auto& s : zeroed.state)
    s.tensors.at(0).fill(0.0f);
  write_checkpoint(checkpoint_path(dir.file("no_momentum"), 2), zeroed);
  CHECK_FALSE(same_weights(whole, run(job, dir.file("no_momentum"), 2)));
  auto fresh_statistics = read_checkpoint(checkpoint_path(dir.file("m"), 2));
  for (auto& b : fresh_statistics.replicas[0].buffers)
    b.value.fill(0.0f);
  write_checkpoint(checkpoint_path(dir.file("no_statistics"), 2), fresh_statistics);
  // Training uses batch statistics, so only validation would differ: the losses tell.
  const auto resumed = run(job, dir.file("no_statistics"), 2);
  CHECK(resumed.phases[1].loss_sum != whole.phases[5].loss_sum);
}

// The checkpoint of the job's last epoch (a job that failed once its final checkpoint was
// saved, restarted by troupe launch --max-restarts): nothing is trained, and the final
// weights are those of the run that saved it.
TEST_CASE("resuming after the last epoch trains nothing and ends with the saved weights") {
  test::temp_dir dir;
  auto job = small_job();
  const auto whole = run(job, dir.file("m"));
  const auto resumed = run(job, dir.file("m"), job.epochs);
  REQUIRE_FALSE(whole.final_weights.empty());
  CHECK(resumed.phases.empty());
  CHECK(same_weights(whole, resumed));
}

TEST_CASE("a checkpoint that does not fit the job is refused before training, naming the file") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  auto job = small_job();
  job.epochs = 2;
  CHECK_THROWS_WITH(run(job, prefix, 1),
                    Contains(prefix + "-0001.safetensors") && Contains("cannot open"));
  run(job, prefix);
  job.epochs = 4;
  auto other = job;
  other.model.network = "lenet";
  CHECK_THROWS_WITH(run(other, prefix, 1),
                    Contains(prefix + "-0001.safetensors") && Contains("another model"));
  other = job;
  other.topology.workers = 2;
  CHECK_THROWS_WITH(run(other, prefix, 1), Contains("1 worker(s), this run has 2"));
  // Shards whose counters differ (async/ssp) cannot be re-sharded: their own count only.
  auto uneven = read_checkpoint(checkpoint_path(prefix, 1));
  uneven.shards = {uneven.shards[0], uneven.shards[0]};
  uneven.shards[1].updates += 1;
  write_checkpoint(checkpoint_path(dir.file("uneven"), 1), uneven);
  CHECK_THROWS_WITH(run(job, dir.file("uneven"), 1),
                    Contains(dir.file("uneven") + "-0001.safetensors")
                      && Contains("counters differ (async/ssp): resume with 2 shards"));
  other = job;
  other.train_batches.batch_size = 64;
  CHECK_THROWS_WITH(run(other, prefix, 1), Contains("8 steps per epoch, this run has 4"));
  CHECK_THROWS_WITH(run(job, prefix, 5),
                    Contains("resuming after epoch 5 goes past the job's 4 epochs"));
  CHECK_THROWS_WITH(run(job, "", 1), Contains("needs the model prefix"));
  std::filesystem::rename(checkpoint_path(prefix, 2), checkpoint_path(prefix, 3));
  CHECK_THROWS_WITH(run(job, prefix, 3), Contains("holds the state after epoch 2, not 3"));
}

TEST_CASE("a checkpoint resumes with another number of shards, bit-identical (keys re-sharded)") {
  for (auto kind : {topology_kind::bsp, topology_kind::hierarchical}) {
    auto job = small_job();
    job.topology.workers = 4;
    use_preset(job.topology, kind, 2);
    job.shards = 2;
    job.topology.keys.slice_bytes = 4096;
    test::temp_dir dir;
    const auto whole = run(job, dir.file("m"));
    for (int shards : {1, 3}) {
      auto other = job;
      other.shards = shards;
      CHECK(same_weights(whole, run(other, dir.file("m"), 2)));
    }
  }
}

TEST_CASE("a cluster checkpoint (manifest and parts) resumes in one process, bit-identical") {
  auto job = small_job();
  job.topology.workers = 2;
  job.shards = 2;
  job.topology.keys.slice_bytes = 4096;
  test::temp_dir dir;
  const auto whole = run(job, dir.file("m"));
  // Epoch 2 rewritten as a 3-shard cluster run's files: 2 servers, 2 worker nodes.
  const auto single = read_checkpoint(checkpoint_path(dir.file("m"), 2));
  std::vector<std::int64_t> sizes;
  for (const auto& p : single.parameters)
    sizes.push_back(p.value.numel());
  std::vector<std::vector<test::split_key>> shards;
  for (const auto& keys : plan_keys(sizes, 3, job.topology.keys).shards) {
    shards.emplace_back();
    for (const auto& k : keys)
      shards.back().push_back({k.slot, k.offset, k.length, k.whole});
  }
  REQUIRE(shards.size() == 3);
  test::write_split(dir.file("m"), single, shards, 2, 2);
  REQUIRE_FALSE(std::filesystem::exists(checkpoint_path(dir.file("m"), 2)));
  const auto resumed = run(job, dir.file("m"), 2);
  CHECK(same_weights(whole, resumed));
  // A corrupt part stops the resume before training, naming the part.
  const auto part = checkpoint_part_path(dir.file("m"), 2, "server_1");
  auto bytes = test::read_whole_file(part);
  bytes[bytes.size() / 2] ^= 0x01;
  test::write_file(part, bytes);
  CHECK_THROWS_WITH(run(job, dir.file("m"), 2), Contains(part + ": checksum"));
}

TEST_CASE("a shard's snapshot is a copy, and restore refuses what does not fit") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  shard_options o;
  o.optimizer.sgd = sgd_options{0.9f, 0, false};
  o.schedule.policy = lr_policy::constant;
  std::vector<shard_key> keys{{"w", tensor::from_values({2}, {1, 2}), true}};
  auto shard = spawn_param_shard(sys, keys, o);
  gradient_push push;
  push.keys = {0};
  push.gradients = {tensor::from_values({2}, {1, 1})};
  shard_snapshot snap;
  self->request(shard, std::chrono::seconds(5), push_atom::value, push)
    .receive([](weight_set&) {}, [](caf::error&) {});
  self->request(shard, std::chrono::seconds(5), snapshot_atom::value)
    .receive([&](shard_snapshot& s) { snap = std::move(s); },
             [](caf::error& e) { FAIL(error_text(e)); });
  REQUIRE(snap.state.size() == 1);
  CHECK(snap.counters.updates == 1);
  const float momentum = snap.state[0].tensors.at(0).data()[0];
  push.step = 1;
  self->request(shard, std::chrono::seconds(5), push_atom::value, push)
    .receive([](weight_set&) {}, [](caf::error&) {});
  CHECK(snap.state[0].tensors.at(0).data()[0] == momentum); // the update did not reach the snapshot
  std::string refused;
  self->request(shard, std::chrono::seconds(5), restore_atom::value, snap)
    .receive([](bool) {}, [&](caf::error& e) { refused = error_text(e); });
  CHECK_THAT(refused, Contains("has applied pushes already"));
  auto fresh = spawn_param_shard(sys, keys, o);
  snap.weights[0] = tensor({3});
  self->request(fresh, std::chrono::seconds(5), restore_atom::value, snap)
    .receive([](bool) {}, [&](caf::error& e) { refused = error_text(e); });
  CHECK_THAT(refused, Contains("key 'w' has shape [2]"));
  self->send_exit(shard, caf::exit_reason::user_shutdown);
  self->send_exit(fresh, caf::exit_reason::user_shutdown);
}
