// Learning-rate schedules as functions of the (fractional) epoch, with optional linear warm-up.
//
// multi_step: base * factor^(boundaries passed) (MXNet's --lr-step-epochs/--lr-factor).
// step:       base * factor^floor(epoch / period) (MXNet's FactorScheduler, in epochs).
// cosine:     final + (base - final) * (1 + cos(pi * u / span)) / 2, u the epochs since the
//             warm-up ended and span the rest of the run; with `cycle` > 0 the cosine restarts
//             every cycle epochs, each cycle cycle_mult times longer than the one before
//             (Loshchilov and Hutter's SGDR).
// poly:       final + (base - final) * (1 - u / span)^power (MXNet's PolyScheduler).
// one_cycle:  Smith's one cycle as PyTorch's OneCycleLR anneals it: a cosine from
//             base / div_factor up to base over pct_start of the run, then a cosine down to
//             base / (div_factor * final_div_factor); it is its own warm-up.
// constant:   base.
// Warm-up ramps linearly from base * warmup_begin_factor to the scheduled value over
// warmup_epochs (Goyal et al.'s gradual warm-up). cosine and poly start their decay where the
// warm-up ends, so the ramp always reaches base.
#pragma once

#include <string>
#include <vector>

namespace troupe {

enum class lr_policy { constant, multi_step, cosine, step, poly, one_cycle };

struct lr_schedule_options {
  lr_policy policy = lr_policy::constant;
  float base_lr = 0.1f;
  std::vector<double> step_epochs; ///< multi_step boundaries, increasing
  float factor = 0.1f;             ///< multi_step and step multiplier
  double total_epochs = 1;         ///< the run's length: cosine, poly and one_cycle's horizon
  float final_lr = 0.0f;           ///< cosine and poly end value
  double warmup_epochs = 0;
  float warmup_begin_factor = 0.0f;
  double period = 1;             ///< step: epochs between two decays
  double power = 2;              ///< poly: the exponent
  double cycle = 0;              ///< cosine: the first cycle's epochs; 0: one cycle, no restarts
  double cycle_mult = 1;         ///< cosine: each cycle this many times the one before
  double pct_start = 0.3;        ///< one_cycle: the share of the run rising to base
  double div_factor = 25;        ///< one_cycle: starts at base / div_factor
  double final_div_factor = 1e4; ///< one_cycle: ends at base / (div_factor * final_div_factor)
};

/// Fields in declaration order. `lr_policy` needs no overload: CAF 0.17 and value_hash both
/// write an enum as its underlying integer (an `inspect` for an enum would make CAF's
/// data_processor::apply ambiguous).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lr_schedule_options& x) {
  return f(x.policy, x.base_lr, x.step_epochs, x.factor, x.total_epochs, x.final_lr,
           x.warmup_epochs, x.warmup_begin_factor, x.period, x.power, x.cycle, x.cycle_mult,
           x.pct_start, x.div_factor, x.final_div_factor);
}

class lr_schedule {
public:
  /// Throws std::invalid_argument naming the bad field (negative lr, unsorted steps, a
  /// warm-up as long as a cosine's run, ...).
  explicit lr_schedule(lr_schedule_options options);
  /// Learning rate at `epoch` (0-based, fractional: 2.5 is half way through the third epoch).
  float at(double epoch) const;
  const lr_schedule_options& options() const { return options_; }

private:
  lr_schedule_options options_;
};

/// Parses "constant", "multi-step", "step", "cosine", "poly", "one-cycle" (case-sensitive;
/// `_` for `-` too, as the config language spells them); throws naming the value.
lr_policy parse_lr_policy(const std::string& name);

/// The name parse_lr_policy reads: "multi-step", "one-cycle", ...
const char* to_string(lr_policy policy);

} // namespace troupe
