// The compute actor's state and the pieces its files share. The compute actor is
// compute_actor.cpp (training, validation and the behaviour) and compute_rewind.cpp (an adopted
// compute's first weights) over compute_phase.hpp / compute_phase.cpp (a phase's bookkeeping and
// its watchdog, shared with the compute stand-in: compute_stand_in_state.hpp); compute_wiring.cpp
// checks the wiring and spawns one or the other. A GPU replica's gradients reach the host
// through gradient_staging (troupe/graph/gradient_staging.hpp). Private to actors/.
#pragma once

#include "actors/compute_phase.hpp"

#include <functional>
#include <optional>
#include <vector>

#include <troupe/graph/gradient_staging.hpp>

#include "actors/step_timeline.hpp"

namespace troupe::compute_parts {

struct compute_state : phase_core {
  push_tracker tracker;            // which groups backward has completed this step
  std::vector<std::size_t> unsent; // groups held back until backward ends (no overlap)
  gradient_staging gradients;      // where the pushes read each slot's gradient
  std::int64_t resume_from = 0;    // adopted: the first step to train (the step in flight)
  // the training batch after the step in flight
  bool fetching = false;              // a request to the training loader is in flight
  std::optional<loader_item> fetched; // its answer, until the step in flight is done
  bool between_steps = false;         // the last step is done; waiting for `fetched`
  clock_type::time_point step_end;    // when the last training step ended (its wait's start)
  step_timeline marks;                // the steps and pushes on the run's timeline, if any
  void drop_step() {
    fetching = false;
    fetched.reset();
    between_steps = false;
    marks.forget();
  }
  static inline const char* name = "compute";
};

// The spawned actor: the public protocol plus the watchdog's tick, which it sends only itself.
// Handles given out are local_compute_actor (or compute_actor), which lack it.
using compute_self_actor = local_compute_actor::extend<caf::reacts_to<watchdog_atom>>;
using compute_pointer = compute_self_actor::stateful_pointer<compute_state>;

compute_self_actor::behavior_type compute(compute_pointer self, std::shared_ptr<model> replica,
                                          compute_wiring wiring);

// An adopted compute's first weights (compute_rewind.cpp): every route's weights before the
// step in flight, installed; then `then`.
void rewind_all(compute_pointer self, std::function<void()> then);

// The wiring's checks (compute_wiring.cpp).
void check_wiring(model& replica, const compute_wiring& wiring);

} // namespace troupe::compute_parts
