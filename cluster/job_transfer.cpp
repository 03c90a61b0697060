// See job_transfer.hpp. CAF's serializers need no actor system for plain values.
#include <troupe/cluster/job_transfer.hpp>

#include <stdexcept>
#include <string>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/error.hpp>

#include <troupe/graph/value_hash.hpp>

namespace troupe {

std::vector<char> job_bytes(const training_job& job) {
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  auto copy = job; // inspect takes a mutable reference
  if (auto err = sink(copy))
    throw std::invalid_argument("job: cannot serialize: " + caf::to_string(err));
  return bytes;
}

namespace {

training_job read_job(const std::vector<char>& bytes, std::uint64_t expected_hash,
                      std::uint64_t (*hash_of)(const training_job&)) {
  training_job job;
  caf::binary_deserializer source{nullptr, bytes};
  if (auto err = source(job))
    throw std::invalid_argument("job: the " + std::to_string(bytes.size())
                                + " bytes are not a job (" + caf::to_string(err) + ")");
  if (source.remaining() != 0)
    throw std::invalid_argument("job: " + std::to_string(source.remaining())
                                + " bytes are left after the job");
  const auto hash = hash_of(job);
  if (hash != expected_hash)
    throw std::invalid_argument("job: its hash is " + std::to_string(hash) + ", the message names "
                                + std::to_string(expected_hash));
  check_job(job);
  return job;
}

std::uint64_t without_counts(const training_job& job) {
  return job_hash_without_counts(job);
}

} // namespace

training_job job_from_bytes(const std::vector<char>& bytes, std::uint64_t expected_hash) {
  return read_job(bytes, expected_hash, &job_hash);
}

training_job joined_job_from_bytes(const std::vector<char>& bytes, std::uint64_t expected) {
  return read_job(bytes, expected, &without_counts);
}

std::uint64_t job_hash_without_counts(training_job job) {
  job.nodes.servers = 0;
  job.nodes.workers = 0;
  return job_hash(job);
}

} // namespace troupe
