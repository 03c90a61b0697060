// job_differences: a node refused for another job is told which config keys differ, with
// both values, and hashes read as `troupe check` prints them.
#include <catch2/catch.hpp>

#include <troupe/cluster/job_difference.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/graph/value_hash.hpp>

using namespace troupe;

namespace {

training_job sample_job() {
  training_job job;
  job.model.network = "mlp";
  job.epochs = 2;
  job.topology.workers = 2;
  job.nodes = {1, 2};
  job.optimizer.schedule.base_lr = 0.02f;
  return job;
}

} // namespace

TEST_CASE("jobs that differ in lr and epochs name both keys with both values", "[cluster][job]") {
  auto theirs = sample_job();
  theirs.optimizer.schedule.base_lr = 0.5f;
  theirs.epochs = 3;
  const auto lines = job_differences(theirs, sample_job(), "the scheduler's");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "optimizer lr 0.5 (the scheduler's 0.02)");
  CHECK(lines[1] == "train epochs 3 (the scheduler's 2)");
  CHECK(difference_text(lines) == lines[0] + " and " + lines[1]);
}

TEST_CASE("process counts are no difference", "[cluster][job]") {
  auto theirs = sample_job();
  theirs.nodes = {3, 4};
  CHECK(job_differences(theirs, sample_job(), "ours").empty());
  CHECK(job_hash_without_counts(theirs) == job_hash_without_counts(sample_job()));
}

TEST_CASE("a structure is named without its values, long lists are cut", "[cluster][job]") {
  auto theirs = sample_job();
  theirs.train_data.dir = "/elsewhere";
  theirs.topology.workers = 4;
  theirs.top_k = 3;
  theirs.shards = 2;
  theirs.prefetch_depth = 5;
  const auto lines = job_differences(theirs, sample_job(), "ours");
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "data train");
  CHECK(difference_text(lines, 2) == lines[0] + ", " + lines[1] + " and 3 more");
}

TEST_CASE("hashes are 16 hexadecimal digits", "[cluster][job]") {
  CHECK(hash_text(0x1a2bULL) == "0000000000001a2b");
  CHECK(hash_text(~0ULL) == "ffffffffffffffff");
}

TEST_CASE("another compression is named with both settings, and it travels with the job",
          "[cluster][job]") {
  auto theirs = sample_job();
  std::string why;
  theirs.topology.compression = {*parse_compression("2bit:0.05", why), compression_spec{}};
  const auto lines = job_differences(theirs, sample_job(), "the scheduler's");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]
        == "compression by hop (--compression, compress) [2bit:0.05, none] (the scheduler's [])");
  // The job that crosses to the nodes keeps it: a node compresses as its scheduler planned.
  const auto back = job_from_bytes(job_bytes(theirs), job_hash(theirs));
  REQUIRE(back.topology.compression.size() == 2);
  CHECK(back.topology.compression[0] == theirs.topology.compression[0]);
}
