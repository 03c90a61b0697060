// The compute stand-in's state ("Stand-in" in compute_actor.hpp): an actor of the compute
// actor's protocol (local_compute_actor) that computes nothing and takes a device's time on
// timers (compute_stand_in.cpp). Its phases are the compute actor's (phase_core and its
// functions, compute_phase.hpp); only the timed steps are its own. Private to actors/.
#pragma once

#include "actors/compute_phase.hpp"

#include <troupe/actors/stand_in_gradients.hpp>
#include <troupe/actors/stand_in_timing.hpp>

namespace troupe::compute_parts {

struct stand_in_state : phase_core {
  compute_stand_in settings;    // its time per step, samples per step and seed
  stand_in_gradients gradients; // what it pushes
  stand_in_timing timing;       // each group's share of the step
  std::int64_t index = 0;       // the index in the epoch of its next step
  // Its forward, one segment per push group in forward order: since when each group's weights
  // of the previous step are installed (not_yet: not), the next segment, whether a segment's
  // timer runs, whether backward's timers are set, and whether the phase has no step left (it
  // ends once all answered). Its times are the device's, not the actor's: `mark` is when the
  // last segment (or the last step's backward) ended on the device, and `segment_end` when the
  // running one will, so a timer that fires late does not make the next segment later.
  static constexpr auto not_yet = caf::actor_clock::time_point::max();
  std::vector<caf::actor_clock::time_point> ready;
  caf::actor_clock::time_point mark;
  caf::actor_clock::time_point segment_end;
  std::size_t segment = 0;
  bool timer = false;
  bool in_backward = false;
  bool ended = false;
  void drop_step() {} // its timers carry the phase they belong to
  static inline const char* name = "compute_stand_in";
};

// Its timers: (phase, step, group) is due to be pushed; (phase, step, segment) of the forward
// is done.
using stand_in_atom = caf::atom_constant<caf::atom("standin")>;
using stand_in_forward_atom = caf::atom_constant<caf::atom("standinfw")>;

// The spawned actor: the public protocol plus the watchdog's tick and its timers, which it sends
// only itself. Handles given out are local_compute_actor (or compute_actor), which lack them.
using stand_in_self_actor = local_compute_actor::extend<
  caf::reacts_to<watchdog_atom>,
  caf::reacts_to<stand_in_atom, std::uint64_t, std::int64_t, std::size_t>,
  caf::reacts_to<stand_in_forward_atom, std::uint64_t, std::int64_t, std::size_t>>;
using stand_in_pointer = stand_in_self_actor::stateful_pointer<stand_in_state>;

stand_in_self_actor::behavior_type stand_in_compute(stand_in_pointer self,
                                                    std::shared_ptr<model> replica,
                                                    compute_wiring wiring,
                                                    compute_stand_in settings);

} // namespace troupe::compute_parts
