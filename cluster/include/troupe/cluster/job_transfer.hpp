// The training job as the bytes a scheduler's assignment carries to every node
// (assignment_message::job): CAF 0.17's binary serialization of training_job, whose fields
// graph/job.hpp's `inspect` lists. A node trusts nothing in them: the bytes must deserialize
// completely, the job's hash must be the one the assignment names, and the job must pass
// check_job, or the node refuses the assignment with a message saying which.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include <troupe/graph/job.hpp>

namespace troupe {

std::vector<char> job_bytes(const training_job& job);

/// Throws std::invalid_argument naming the problem (and both hashes when they differ).
training_job job_from_bytes(const std::vector<char>& bytes, std::uint64_t expected_hash);

/// The same for a job a node's join carries (its own config's), whose hash `expected` leaves
/// the process counts out (job_hash_without_counts).
training_job joined_job_from_bytes(const std::vector<char>& bytes, std::uint64_t expected);

/// job_hash of `job` with its process counts left out (they are the scheduler's, or a
/// launcher's, to say): what a node's own config must agree on with the scheduler's job.
std::uint64_t job_hash_without_counts(training_job job);

} // namespace troupe
