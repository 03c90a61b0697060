// A stand-in for a host application's own actor: it asks to be woken every 2 ms and records
// the gap between consecutive wake-ups. troupe_bench_host_latency reports the gaps; the session
// test (tests/actors/training_session_test.cpp) bounds the longest.
//   (tick_atom)  -> ()                     internal: one wake-up
//   (stop_atom)  -> std::vector<double>    stops ticking; the gaps so far, in milliseconds
#pragma once

#include <chrono>
#include <vector>

#include <caf/all.hpp>

namespace troupe::bench {

using tick_atom = caf::atom_constant<caf::atom("tick")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;

struct ticker_state {
  std::chrono::steady_clock::time_point last;
  std::vector<double> gaps_ms;
  bool running = true;
  static inline const char* name = "host_ticker";
};

inline caf::behavior host_ticker(caf::stateful_actor<ticker_state>* self) {
  constexpr auto period = std::chrono::milliseconds(2);
  self->state.last = std::chrono::steady_clock::now();
  self->delayed_send(self, period, tick_atom::value);
  return {
    [=](tick_atom) {
      auto now = std::chrono::steady_clock::now();
      self->state.gaps_ms.push_back(
        std::chrono::duration<double, std::milli>(now - self->state.last).count());
      self->state.last = now;
      if (self->state.running)
        self->delayed_send(self, period, tick_atom::value);
    },
    [=](stop_atom) {
      self->state.running = false;
      return self->state.gaps_ms;
    },
  };
}

} // namespace troupe::bench
