// How long an actor waits for an answer before it gives up with errc::timeout. Every request
// an actor makes is bound by one of these: a peer that stops answering ends the run with an
// error naming it instead of a hang. Dead peers are noticed sooner, by monitoring. Most
// requests carry it as CAF's request timeout; the compute actor's per-step requests (several
// a step) are watched by its own watchdog instead (compute_actor.hpp, "Liveness"), which
// leaves them `caf::infinite` for CAF and expires them within 1.25x of `step`.
#pragma once

#include <chrono>
#include <cstdint>

#include <caf/timespan.hpp>

namespace troupe {

struct request_timeouts {
  /// Requests answered within one training step: a batch from a loader, a push or pull
  /// (which in BSP waits for the slowest worker's step), a metrics flush.
  caf::timespan step = std::chrono::minutes(10);
  /// One whole training or validation epoch (coordinator -> compute), and a whole run.
  caf::timespan phase = std::chrono::hours(48);
};

/// The longest wait a request is given: about a century. CAF adds a request's timeout to the
/// clock's now, so a bound near the largest timespan would itself wrap around.
inline constexpr caf::timespan longest_wait = std::chrono::hours(24 * 365 * 100);

/// The limit of a request that spans `phases` phases (a whole run: two per epoch and some):
/// `phase` times `phases`, saturating at `longest_wait`. Multiplied plainly, 48 h times the
/// phases of 40000 epochs passes the 292 years a timespan's int64 nanoseconds hold and wraps to
/// a negative limit, which ends the run at once with request_timeout.
inline caf::timespan phases_limit(const request_timeouts& timeouts, std::int64_t phases) {
  const auto per = timeouts.phase.count();
  if (phases <= 0 || per <= 0)
    return caf::timespan{0};
  if (per > longest_wait.count() / phases)
    return longest_wait;
  return caf::timespan{per * phases};
}

} // namespace troupe
