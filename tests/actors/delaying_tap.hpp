// A slow worker for the tests that need one (backup workers ending a straggler's epoch),
// made on the test side through the session's gradient tap (session_sinks::tap) rather than
// by a setting of the production wiring: the tap holds each push of the slow compute actor
// back for a fixed time, then hands it to the real target, whose answer goes straight back to
// the compute actor (the push's response promise is delegated). The slow worker's steps thus
// take that much longer, while its CPU stays free for the others (a timer, not a busy wait).
// Pulls pass through at once. The other workers' routes get no tap at all.
//
// Protocol: delaying_tap_actor = push_target_actor plus
//   (taken_atom) -> int64   pushes taken so far (held back or passed on)
// and (release_atom, uint64) to itself: held push number N leaves.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/messages.hpp>
#include <troupe/actors/training_session.hpp>

namespace troupe::test {

using release_atom = caf::atom_constant<caf::atom("release")>; // delaying tap -> itself
using taken_atom = caf::atom_constant<caf::atom("taken")>;     // test -> delaying tap

using delaying_tap_actor =
  push_target_actor::extend<caf::replies_to<taken_atom>::with<std::int64_t>,
                            caf::reacts_to<release_atom, std::uint64_t>>;

struct delaying_tap_state {
  struct held_push {
    caf::typed_response_promise<weight_set> promise;
    gradient_push push;
  };
  std::map<std::uint64_t, held_push> held; // by the number the release message names
  std::uint64_t taken = 0;                 // pushes so far; also the next one's number
  static inline const char* name = "delaying_tap";
};

inline delaying_tap_actor::behavior_type
delaying_tap(delaying_tap_actor::stateful_pointer<delaying_tap_state> self,
             push_target_actor downstream, caf::timespan delay) {
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      auto& st = self->state;
      const auto number = st.taken++;
      auto promise = self->make_response_promise<weight_set>();
      st.held.emplace(number, delaying_tap_state::held_push{promise, std::move(push)});
      self->delayed_send(self, delay, release_atom::value, number);
      return promise;
    },
    [=](release_atom, std::uint64_t number) {
      auto i = self->state.held.find(number);
      if (i == self->state.held.end())
        return;
      auto held = std::move(i->second);
      self->state.held.erase(i);
      held.promise.delegate(downstream, push_atom::value, std::move(held.push));
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return self->delegate(downstream, pull_atom::value, due);
    },
    [=](rewind_atom, std::int64_t step, std::int32_t source,
        deadline due) -> caf::result<weight_set> {
      return self->delegate(downstream, rewind_atom::value, step, source, due);
    },
    [=](taken_atom) -> caf::result<std::int64_t> {
      return static_cast<std::int64_t>(self->state.taken);
    },
  };
}

/// A session_sinks::tap that puts a delaying tap in front of every route of the workers in
/// `slow` (each push held back `delay`) and leaves the other workers' routes alone. The taps
/// it spawns are appended to `taps`, which must outlive the run; the caller stops them after.
inline gradient_tap slow_worker_tap(caf::actor_system& system, std::vector<int> slow,
                                    caf::timespan delay, std::vector<delaying_tap_actor>& taps) {
  return [&system, &taps, slow, delay](push_target_actor downstream,
                                       const tap_point& where) -> push_target_actor {
    if (std::find(slow.begin(), slow.end(), where.rank) == slow.end())
      return downstream;
    taps.push_back(system.spawn(delaying_tap, downstream, delay));
    return taps.back();
  };
}

} // namespace troupe::test
