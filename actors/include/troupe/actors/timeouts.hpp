// How long an actor waits for an answer before it gives up with errc::timeout. Every request
// an actor makes is bound by one of these: a peer that stops answering ends the run with an
// error naming it instead of a hang. Dead peers are noticed sooner, by monitoring. Most
// requests carry it as CAF's request timeout; the compute actor's per-step requests (several
// a step) are watched by its own watchdog instead (compute_actor.hpp, "Liveness"), which
// leaves them `caf::infinite` for CAF and expires them within 1.25x of `step`.
#pragma once

#include <chrono>

#include <caf/timespan.hpp>

namespace troupe {

struct request_timeouts {
  /// Requests answered within one training step: a batch from a loader, a push or pull
  /// (which in BSP waits for the slowest worker's step), a metrics flush.
  caf::timespan step = std::chrono::minutes(10);
  /// One whole training or validation epoch (coordinator -> compute), and a whole run.
  caf::timespan phase = std::chrono::hours(48);
};

} // namespace troupe
