// How long an actor waits for an answer before it gives up with errc::timeout. Every request
// an actor makes uses one of these (never caf::infinite): a peer that stops answering ends the
// run with an error naming it instead of a hang. Dead peers are noticed sooner, by monitoring.
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
