// job_hash lives here so the walk over training_job's fields is compiled once, in graph.
#include <troupe/graph/value_hash.hpp>

#include <troupe/graph/job.hpp>

namespace troupe {

std::uint64_t job_hash(const training_job& job) {
  return value_hash(job);
}

} // namespace troupe
