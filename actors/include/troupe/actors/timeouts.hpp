// How long an actor waits for an answer before it gives up with errc::timeout: the one place
// these limits are set, for one process and across processes alike. Every request an actor
// makes is bound by one of them: a peer that stops answering ends the run with an error naming
// it instead of a hang. Dead peers are noticed sooner, by monitoring.
//
// The originator of a request turns its limit into a deadline (deadline.hpp) and the request
// carries it: a push's deadline in gradient_push::due, a pull's and a phase's as an argument.
// Every hop after it (aggregator, remote proxy, channel, serving node) waits for that deadline,
// never for a limit of its own. The compute actor's per-step requests (several a step) are
// watched by its own watchdog (compute_actor.hpp, "Liveness") rather than by CAF timers.
#pragma once

#include <chrono>
#include <cstdint>

#include <caf/timespan.hpp>

#include <troupe/actors/deadline.hpp>

namespace troupe {

struct request_timeouts {
  /// Requests answered within one training step: a batch from a loader, a push or pull
  /// (which in BSP waits for the slowest worker's step), a metrics flush.
  caf::timespan step = std::chrono::minutes(10);
  /// One whole training or validation epoch (coordinator -> compute), and a whole run.
  caf::timespan phase = std::chrono::hours(48);
};

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
