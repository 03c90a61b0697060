// Learning-rate schedules as functions of the (fractional) epoch, with optional linear warm-up.
//
// multi_step: base * factor^(number of boundaries passed) (MXNet's --lr-step-epochs/--lr-factor).
// cosine:     final + (base - final) * (1 + cos(pi * t / total)) / 2.
// constant:   base.
// Warm-up ramps linearly from base * warmup_begin_factor to the scheduled value over
// warmup_epochs (Goyal et al.'s gradual warm-up).
#pragma once

#include <string>
#include <vector>

namespace troupe {

enum class lr_policy { constant, multi_step, cosine };

struct lr_schedule_options {
  lr_policy policy = lr_policy::constant;
  float base_lr = 0.1f;
  std::vector<double> step_epochs; ///< multi_step boundaries, increasing
  float factor = 0.1f;             ///< multi_step multiplier
  double total_epochs = 1;         ///< cosine horizon
  float final_lr = 0.0f;           ///< cosine end value
  double warmup_epochs = 0;
  float warmup_begin_factor = 0.0f;
};

/// Fields in declaration order. `lr_policy` needs no overload: CAF 0.17 and value_hash both
/// write an enum as its underlying integer (an `inspect` for an enum would make CAF's
/// data_processor::apply ambiguous).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lr_schedule_options& x) {
  return f(x.policy, x.base_lr, x.step_epochs, x.factor, x.total_epochs, x.final_lr,
           x.warmup_epochs, x.warmup_begin_factor);
}

class lr_schedule {
public:
  /// Throws std::invalid_argument naming the bad field (negative lr, unsorted steps, ...).
  explicit lr_schedule(lr_schedule_options options);
  /// Learning rate at `epoch` (0-based, fractional: 2.5 is half way through the third epoch).
  float at(double epoch) const;
  const lr_schedule_options& options() const { return options_; }

private:
  lr_schedule_options options_;
};

/// Parses "constant", "multi-step", "cosine" (case-sensitive); throws naming the value.
lr_policy parse_lr_policy(const std::string& name);

} // namespace troupe
