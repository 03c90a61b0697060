// The job an assignment carries: it survives the trip with the same hash, and bytes that are
// cut, padded, another job's, or a job no run could use are refused naming why.
#include <catch2/catch.hpp>

#include <stdexcept>

#include <troupe/cluster/job_transfer.hpp>
#include <troupe/graph/value_hash.hpp>

using namespace troupe;

namespace {

training_job sample_job() {
  training_job job;
  job.model.network = "lenet";
  job.epochs = 3;
  job.shards = 2;
  job.topology.workers = 4;
  use_preset(job.topology, topology_kind::hierarchical, 2);
  job.nodes = {2, 2};
  job.train_batches.augment.mean = {0.286f};
  job.train_batches.augment.stdev = {0.353f};
  return job;
}

} // namespace

TEST_CASE("a job crosses as bytes and keeps its hash", "[cluster][job]") {
  const auto job = sample_job();
  const auto bytes = job_bytes(job);
  REQUIRE_FALSE(bytes.empty());
  const auto back = job_from_bytes(bytes, job_hash(job));
  CHECK(job_hash(back) == job_hash(job));
  CHECK(back.nodes.servers == 2);
  CHECK(back.topology.machines == 2);
  CHECK(back.train_batches.augment.stdev == std::vector<float>{0.353f});
}

TEST_CASE("bytes that are not the named job are refused", "[cluster][job]") {
  const auto job = sample_job();
  const auto bytes = job_bytes(job);
  const auto hash = job_hash(job);

  auto cut = bytes;
  cut.resize(cut.size() / 2);
  CHECK_THROWS_WITH(job_from_bytes(cut, hash), Catch::Contains("are not a job"));

  auto padded = bytes;
  padded.push_back(0);
  CHECK_THROWS_WITH(job_from_bytes(padded, hash),
                    Catch::Contains("1 bytes are left after the job"));

  CHECK_THROWS_WITH(job_from_bytes(bytes, hash + 1),
                    Catch::Contains("its hash is " + std::to_string(hash)));

  auto unusable = job;
  unusable.epochs = -1;
  CHECK_THROWS_WITH(job_from_bytes(job_bytes(unusable), job_hash(unusable)),
                    Catch::Contains("epochs must not be negative"));
}
