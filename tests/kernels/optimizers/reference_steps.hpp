// The harness every optimizer's test shares: a few updates through optimizer_update against a
// plain scalar implementation written in the test, in double, compared to float rounding.
#pragma once

#include <functional>

#include "../test_util.hpp"
#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe::test {

/// One step of a reference over every element: weights, the step's gradient, the state (one
/// vector per state tensor), and the step's count t (1 for the first).
using reference_step = std::function<void(std::vector<double>& w, const std::vector<double>& g,
                                          std::vector<std::vector<double>>& state, int t)>;

/// Runs `steps` updates of `n` weights (decay: weight decay applies to them) with fresh
/// gradients, and `reference` beside them; weights and state must agree.
inline void check_reference(const update_rule& rule, float lr, bool decay, std::int64_t n,
                            int steps, const reference_step& reference) {
  tensor w = random_tensor({n}, 1);
  auto state = initial_optimizer_state(rule.kind, w.shape());
  std::vector<double> ref_w = to_double(w);
  std::vector<std::vector<double>> ref_state(state.tensors.size(),
                                             std::vector<double>(static_cast<std::size_t>(n)));
  for (int s = 0; s < steps; ++s) {
    tensor g = random_tensor({n}, 100 + static_cast<std::uint64_t>(s));
    optimizer_update(rule, lr, w, g, state, w, decay);
    reference(ref_w, to_double(g), ref_state, s + 1);
  }
  REQUIRE(state.steps == steps);
  require_close(w, ref_w, 1e-5, 1e-6);
  for (std::size_t k = 0; k < state.tensors.size(); ++k)
    require_close(state.tensors[k], ref_state[k], 1e-5, 1e-6);
}

} // namespace troupe::test
