// Adam's bias corrections of step t, shared by Adam and AdamW (adam_cpu.cpp, adamw_cpu.cpp):
// scalars of the step, computed in double as PyTorch computes them in Python, then applied in
// float. Private to kernels/.
#pragma once

#include <cmath>
#include <cstdint>

#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

struct adam_bias {
  float step_size;  ///< lr / (1 - beta1^t)
  float bias2_root; ///< sqrt(1 - beta2^t)
};

inline adam_bias adam_bias_of(const update_rule& rule, float lr, std::int64_t t) {
  const double bias1 = 1.0 - std::pow(static_cast<double>(rule.beta1), static_cast<double>(t));
  const double bias2 = 1.0 - std::pow(static_cast<double>(rule.beta2), static_cast<double>(t));
  return {static_cast<float>(lr / bias1), static_cast<float>(std::sqrt(bias2))};
}

} // namespace troupe
