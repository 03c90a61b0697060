// A request's deadline: the moment its originator stops waiting, as a steady_clock time point.
// It travels with the request, so every hop (in this process, or across one after the wire
// carried the time left) gives up at the same moment instead of starting a clock of its own.
//
// Thread-safety: a plain value.
#pragma once

#include <algorithm>
#include <chrono>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/timespan.hpp>

namespace troupe {

struct deadline {
  std::chrono::steady_clock::time_point at{};
  /// `span` from now.
  static deadline after(caf::timespan span) {
    return deadline{std::chrono::steady_clock::now()
                    + std::chrono::duration_cast<std::chrono::steady_clock::duration>(span)};
  }
  /// What is left of it (never negative).
  caf::timespan left() const {
    const auto rest = std::chrono::duration_cast<caf::timespan>(at - std::chrono::steady_clock::now());
    return std::max(rest, caf::timespan{0});
  }
};

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::deadline)
