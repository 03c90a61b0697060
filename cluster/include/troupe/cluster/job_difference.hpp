// What makes two jobs different, in the words of the config: a node whose own config resolves
// to another job than the scheduler's is refused, and the refusal names the keys that differ
// (`optimizer lr 0.5, the scheduler's 0.02`) rather than two hashes alone. Hashes, where they
// are shown, are written as `troupe check` writes them: 16 hexadecimal digits.
//
// The process counts (nodes.servers, nodes.workers) are never a difference: they are the
// scheduler's or the launcher's to say (job_hash_without_counts).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <troupe/graph/job.hpp>

namespace troupe {

/// `hash` as 16 lower-case hexadecimal digits, as `troupe check` prints a plan's hash.
std::string hash_text(std::uint64_t hash);

/// One line per config key in which `theirs` differs from `ours`: the key, their value and
/// ours where a value reads in one line ("optimizer lr 0.5 (the scheduler's 0.02)"; `ours`
/// names our side, e.g. "the scheduler's"). Empty when the jobs agree but for process counts.
std::vector<std::string> job_differences(const training_job& theirs, const training_job& ours,
                                         const std::string& ours_name);

/// The differences joined into one clause: "optimizer lr 0.5 (the scheduler's 0.02) and
/// train epochs 3 (the scheduler's 2)"; at most `limit` keys, then "and N more".
std::string difference_text(const std::vector<std::string>& differences, std::size_t limit = 4);

} // namespace troupe
