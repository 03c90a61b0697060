// Learning-rate schedules. Options are validated once, at construction, so `at` is a few
// arithmetic operations and cannot fail in the middle of training.
//
// Conventions: a multi-step boundary counts as passed from the boundary epoch on (epoch 30.0
// already has the reduced rate); cosine runs from epoch 0 to total_epochs and stays at final_lr
// after; warm-up interpolates linearly from base_lr * warmup_begin_factor at epoch 0 to the
// schedule's own value at warmup_epochs, so the curve is continuous where warm-up ends.
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

void validate(const lr_schedule_options& o) {
  if (!(o.base_lr >= 0) || !std::isfinite(o.base_lr))
    bad_field("base_lr", "must be finite and >= 0, got " + std::to_string(o.base_lr));
  if (!(o.warmup_epochs >= 0) || !std::isfinite(o.warmup_epochs))
    bad_field("warmup_epochs", "must be finite and >= 0, got " + std::to_string(o.warmup_epochs));
  if (!(o.warmup_begin_factor >= 0) || !std::isfinite(o.warmup_begin_factor))
    bad_field("warmup_begin_factor",
              "must be finite and >= 0, got " + std::to_string(o.warmup_begin_factor));
  if (o.policy == lr_policy::multi_step) {
    if (!(o.factor > 0) || !std::isfinite(o.factor))
      bad_field("factor", "must be finite and > 0, got " + std::to_string(o.factor));
    for (std::size_t i = 0; i < o.step_epochs.size(); ++i) {
      double e = o.step_epochs[i];
      if (!(e >= 0) || !std::isfinite(e))
        bad_field("step_epochs", "entry " + std::to_string(i) + " must be finite and >= 0, got "
                                   + std::to_string(e));
      if (i > 0 && !(e > o.step_epochs[i - 1]))
        bad_field("step_epochs", "must be strictly increasing, but entry " + std::to_string(i)
                                   + " (" + std::to_string(e) + ") follows "
                                   + std::to_string(o.step_epochs[i - 1]));
    }
  }
  if (o.policy == lr_policy::cosine) {
    if (!(o.total_epochs > 0) || !std::isfinite(o.total_epochs))
      bad_field("total_epochs", "must be finite and > 0, got " + std::to_string(o.total_epochs));
    if (!(o.final_lr >= 0) || !std::isfinite(o.final_lr))
      bad_field("final_lr", "must be finite and >= 0, got " + std::to_string(o.final_lr));
  }
}

double scheduled(const lr_schedule_options& o, double epoch) {
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
  case lr_policy::cosine: {
    double t = std::min(std::max(epoch, 0.0), o.total_epochs);
    return o.final_lr + (o.base_lr - o.final_lr) * (1 + std::cos(pi * t / o.total_epochs)) / 2;
  }
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

lr_policy parse_lr_policy(const std::string& name) {
  if (name == "constant")
    return lr_policy::constant;
  if (name == "multi-step")
    return lr_policy::multi_step;
  if (name == "cosine")
    return lr_policy::cosine;
  throw std::invalid_argument("lr_policy: unknown policy \"" + name
                              + "\" (expected constant, multi-step or cosine)");
}

} // namespace troupe
