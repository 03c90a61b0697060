// Learning-rate schedules. Options are validated once, at construction, so `at` is a few
// arithmetic operations and cannot fail in the middle of training.
//
// Conventions: a multi-step or step boundary counts as passed from the boundary epoch on
// (epoch 30.0 already has the reduced rate); cosine and poly run from the warm-up's end to
// total_epochs and stay at final_lr after; warm-up interpolates linearly from
// base_lr * warmup_begin_factor at epoch 0 to the schedule's own value at warmup_epochs, so
// the curve is continuous where warm-up ends.
#include <troupe/kernels/lr_schedule.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace troupe {

namespace {

constexpr double pi = 3.14159265358979323846;

[[noreturn]] void bad_field(const std::string& field, const std::string& why) {
  throw std::invalid_argument("lr_schedule: " + field + " " + why);
}

void require(bool holds, const char* field, const char* bound, double value) {
  if (!holds || !std::isfinite(value))
    bad_field(field, std::string("must be finite and ") + bound + ", got " + std::to_string(value));
}

void validate_steps(const lr_schedule_options& o) {
  for (std::size_t i = 0; i < o.step_epochs.size(); ++i) {
    double e = o.step_epochs[i];
    if (!(e >= 0) || !std::isfinite(e))
      bad_field("step_epochs", "entry " + std::to_string(i) + " must be finite and >= 0, got "
                                 + std::to_string(e));
    if (i > 0 && !(e > o.step_epochs[i - 1]))
      bad_field("step_epochs", "must be strictly increasing, but entry " + std::to_string(i) + " ("
                                 + std::to_string(e) + ") follows "
                                 + std::to_string(o.step_epochs[i - 1]));
  }
}

// The policies whose decay spans the run after the warm-up need a run longer than it.
void validate_horizon(const lr_schedule_options& o) {
  require(o.total_epochs > 0, "total_epochs", "> 0", o.total_epochs);
  if (!(o.warmup_epochs < o.total_epochs))
    bad_field("warmup_epochs", "must be shorter than the run's " + std::to_string(o.total_epochs)
                                 + " epochs, got " + std::to_string(o.warmup_epochs));
}

void validate(const lr_schedule_options& o) {
  require(o.base_lr >= 0, "base_lr", ">= 0", o.base_lr);
  require(o.warmup_epochs >= 0, "warmup_epochs", ">= 0", o.warmup_epochs);
  require(o.warmup_begin_factor >= 0, "warmup_begin_factor", ">= 0", o.warmup_begin_factor);
  switch (o.policy) {
  case lr_policy::constant:
    return;
  case lr_policy::multi_step:
    require(o.factor > 0, "factor", "> 0", o.factor);
    return validate_steps(o);
  case lr_policy::step:
    require(o.factor > 0, "factor", "> 0", o.factor);
    return require(o.period > 0, "period", "> 0", o.period);
  case lr_policy::poly:
    require(o.power > 0, "power", "> 0", o.power);
    require(o.final_lr >= 0, "final_lr", ">= 0", o.final_lr);
    return validate_horizon(o);
  case lr_policy::cosine:
    require(o.final_lr >= 0, "final_lr", ">= 0", o.final_lr);
    require(o.cycle >= 0, "cycle", ">= 0", o.cycle);
    require(o.cycle_mult >= 1, "cycle_mult", ">= 1", o.cycle_mult);
    return validate_horizon(o);
  case lr_policy::one_cycle:
    require(o.pct_start > 0 && o.pct_start < 1, "pct_start", "between 0 and 1", o.pct_start);
    require(o.div_factor >= 1, "div_factor", ">= 1", o.div_factor);
    require(o.final_div_factor >= 1, "final_div_factor", ">= 1", o.final_div_factor);
    require(o.total_epochs > 0, "total_epochs", "> 0", o.total_epochs);
    if (o.warmup_epochs > 0)
      bad_field("warmup_epochs", "must be 0 for one_cycle, whose rise (pct_start) is its warm-up");
    return;
  }
}

// From `from` (u = 0) to `to` (u = span) along half a cosine.
double cosine_between(double from, double to, double u, double span) {
  const double t = std::min(std::max(u, 0.0), span);
  return to + (from - to) * (1 + std::cos(pi * t / span)) / 2;
}

// SGDR: the position inside the current cycle and that cycle's length.
double cosine_restarts(const lr_schedule_options& o, double u, double span) {
  if (o.cycle <= 0)
    return cosine_between(o.base_lr, o.final_lr, u, span);
  double length = o.cycle;
  while (u >= length) {
    u -= length;
    length *= o.cycle_mult;
  }
  return cosine_between(o.base_lr, o.final_lr, u, length);
}

double one_cycle(const lr_schedule_options& o, double epoch) {
  const double peak = o.base_lr, start = peak / o.div_factor, end = start / o.final_div_factor;
  const double rise = o.pct_start * o.total_epochs;
  if (epoch < rise)
    return cosine_between(start, peak, epoch, rise);
  return cosine_between(peak, end, epoch - rise, o.total_epochs - rise);
}

double scheduled(const lr_schedule_options& o, double epoch) {
  const double u = std::max(epoch - o.warmup_epochs, 0.0), span = o.total_epochs - o.warmup_epochs;
  switch (o.policy) {
  case lr_policy::constant:
    return o.base_lr;
  case lr_policy::multi_step: {
    double lr = o.base_lr;
    for (double boundary : o.step_epochs)
      if (epoch >= boundary)
        lr *= o.factor;
    return lr;
  }
  case lr_policy::step:
    return o.base_lr * std::pow(static_cast<double>(o.factor), std::floor(epoch / o.period));
  case lr_policy::cosine:
    return cosine_restarts(o, u, span);
  case lr_policy::poly:
    return o.final_lr + (o.base_lr - o.final_lr) * std::pow(1 - std::min(u, span) / span, o.power);
  case lr_policy::one_cycle:
    return one_cycle(o, epoch);
  }
  return o.base_lr;
}

} // namespace

lr_schedule::lr_schedule(lr_schedule_options options) : options_(std::move(options)) {
  validate(options_);
}

float lr_schedule::at(double epoch) const {
  const auto& o = options_;
  if (o.warmup_epochs > 0 && epoch < o.warmup_epochs) {
    double start = static_cast<double>(o.base_lr) * o.warmup_begin_factor;
    double end = scheduled(o, o.warmup_epochs);
    double t = std::max(epoch, 0.0) / o.warmup_epochs;
    return static_cast<float>(start + (end - start) * t);
  }
  return static_cast<float>(scheduled(o, epoch));
}

namespace {

struct policy_name {
  lr_policy policy;
  const char* name;
};
constexpr policy_name policy_names[] = {
  {lr_policy::constant, "constant"}, {lr_policy::multi_step, "multi-step"},
  {lr_policy::step, "step"},         {lr_policy::cosine, "cosine"},
  {lr_policy::poly, "poly"},         {lr_policy::one_cycle, "one-cycle"},
};

} // namespace

lr_policy parse_lr_policy(const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const auto& p : policy_names)
    if (dashed == p.name)
      return p.policy;
  throw std::invalid_argument("lr_policy: unknown policy \"" + name
                              + "\" (expected constant, multi-step, step, cosine, poly or "
                                "one-cycle)");
}

const char* to_string(lr_policy policy) {
  for (const auto& p : policy_names)
    if (p.policy == policy)
      return p.name;
  return "unknown";
}

} // namespace troupe
