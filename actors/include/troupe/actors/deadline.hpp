// The one clock of a request: the moment by which its originator wants an answer. The
// originator sets it once (from request_timeouts, timeouts.hpp); every hop that passes the
// request on (an aggregator, a remote proxy, the channel, the serving node) waits for that same
// moment instead of starting a timer of its own, so a push waits as long in one process as
// across several. Across processes the wire carries what is left of it (a duration: the two
// machines' steady clocks share no epoch), and the receiving node turns that back into a
// deadline on its own clock.
//
// The hop nearest the silent actor gives up at the deadline and names what it waited for; an
// originator that makes a plain CAF request waits `answer_grace` longer, so that named error
// reaches it before CAF's anonymous request_timeout would.
//
// Thread-safety: a plain value.
#pragma once

#include <algorithm>
#include <chrono>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/timespan.hpp>

namespace troupe {

/// The longest wait a request is given: about a century. CAF adds a request's timeout to the
/// clock's now, so a bound near the largest timespan would itself wrap around.
inline constexpr caf::timespan longest_wait = std::chrono::hours(24 * 365 * 100);

/// How long an originator waits past its request's deadline for the hop that gave up on it to
/// say why. Small next to any deadline; large next to a failure frame's trip between nodes.
inline constexpr caf::timespan answer_grace = std::chrono::milliseconds(500);

/// How long a channel holds a request past its deadline for the far hop's failure frame, sent
/// at the deadline, to arrive before it fails the request itself without the cause. Inside
/// answer_grace, so the channel's own failure still reaches the originator before CAF's
/// anonymous timeout does.
inline constexpr caf::timespan remote_failure_grace = answer_grace / 2;

struct deadline {
  using clock = std::chrono::steady_clock;
  clock::time_point at = clock::time_point::max(); ///< max(): never

  /// `limit` from now; a limit too long for the clock (or negative) saturates.
  static deadline after(caf::timespan limit) {
    const auto now = clock::now();
    const auto room = std::chrono::duration_cast<caf::timespan>(clock::time_point::max() - now);
    return deadline{now + std::clamp(limit, caf::timespan{0}, room)};
  }
  /// The earlier of two deadlines.
  static deadline earlier(deadline a, deadline b) { return a.at <= b.at ? a : b; }

  /// What is left of it (0 once it has passed; longest_wait at most).
  caf::timespan left() const {
    const auto now = clock::now();
    if (at <= now)
      return caf::timespan{0};
    const auto rest = std::chrono::duration_cast<caf::timespan>(at - now);
    return std::min<caf::timespan>(rest, longest_wait);
  }
  /// What an originator gives CAF as the request's timeout: the deadline and the grace.
  caf::timespan left_with_grace() const { return left() + answer_grace; }
  bool passed() const { return clock::now() >= at; }
};

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::deadline)
