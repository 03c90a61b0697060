// How model parameters (keys) are split over parameter shards: largest first onto the least
// loaded shard, ties to the lowest index, so every shard holds a similar number of bytes.
// Shared by the training session (which spawns the shards) and `troupe graph` (which labels
// routes with each shard's bytes), so both always agree.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <vector>

namespace troupe {

/// Slots per shard (each sorted ascending); shards that would be empty are dropped.
/// Deterministic. Throws std::invalid_argument if shards < 1.
std::vector<std::vector<std::size_t>> assign_keys(const std::vector<std::int64_t>& sizes,
                                                  int shards);

} // namespace troupe
