// The limit of a request spanning many phases (a whole run) saturates instead of wrapping:
// 48 h times the 80001 phases of 40000 epochs passes int64 nanoseconds, and the wrapped,
// negative limit would end such runs at once with request_timeout.
#include <catch2/catch.hpp>

#include <troupe/actors/timeouts.hpp>

using namespace troupe;

TEST_CASE("a run's limit grows with its phases and saturates at the longest wait") {
  const request_timeouts t;
  CHECK(phases_limit(t, 3) == t.phase * 3);
  CHECK(phases_limit(t, 1001) == t.phase * 1001); // 500 epochs: exact (11 years)
  for (std::int64_t epochs : {20000, 36000, 40000, 50000, 70000, 100000000, 1000000000}) {
    const auto limit = phases_limit(t, epochs * 2 + 2);
    CHECK(limit == longest_wait);
    CHECK(limit > t.phase);
  }
  CHECK(phases_limit(t, 0) == caf::timespan{0});
}

TEST_CASE("a deadline saturates, never reports negative time, and the earlier of two wins") {
  const auto soon = deadline::after(std::chrono::milliseconds(50));
  const auto later = deadline::after(std::chrono::hours(1));
  CHECK(deadline::earlier(soon, later).at == soon.at);
  CHECK(deadline::earlier(later, soon).at == soon.at);
  CHECK(later.left() > std::chrono::minutes(59));
  CHECK(later.left_with_grace() - later.left() <= answer_grace);
  // Longer than the clock can hold, or negative: clamped, never wrapped.
  const auto forever = deadline::after(caf::timespan::max());
  CHECK(forever.left() == longest_wait);
  CHECK_FALSE(forever.passed());
  const auto past = deadline::after(std::chrono::milliseconds(-5));
  CHECK(past.left() == caf::timespan{0});
  CHECK(past.passed());
  CHECK(deadline{}.left() == longest_wait); // the default: never
}
