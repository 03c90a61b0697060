// The schedule's rules once every section is read (job_config.hpp: resolve_schedule_defaults,
// warmup_overlap, check_schedule_steps): the defaults that depend on the run's length, a warm-up
// kept to its share of a config's longer run when a flag shortens it, and decays that must lie
// inside the run, after the warm-up. docs/dsl.md says which of these refuse and which say so.
#include <troupe/graph/config/job_config.hpp>

#include <algorithm>
#include <string>

#include <troupe/graph/config/key_ranges.hpp>

#include "graph/config/value_reader.hpp"

namespace troupe {

namespace {

std::string epochs_text(double epochs) {
  return shortest_number(epochs) + (epochs == 1 ? " epoch" : " epochs");
}

// Where a warm-up must end: before the first decay (multi_step's first step, step's first
// period) or, where the decay spans what follows the warm-up (cosine, poly) or there is none,
// before the run's end. `what` says it for a message.
struct warmup_bound {
  double epoch;
  std::string what;
};

warmup_bound warmup_bound_of(const job_config& c) {
  const auto& s = c.schedule;
  const auto epochs = static_cast<double>(c.run.epochs.value);
  const auto& p = s.policy.value;
  if (p == "multi_step" && !s.steps.value.empty() && s.steps.value.front() < epochs) {
    const double at = s.steps.value.front();
    const bool share = s.written_steps.given ? s.written_steps.value.front().share : true;
    return {at, "the first decay at epoch " + shortest_number(at)
                  + (share ? " (" + shortest_number(at / epochs * 100) + "% of "
                               + epochs_text(epochs) + ")"
                           : "")};
  }
  if (p == "step" && s.period.value < epochs)
    return {s.period.value, "the first decay at epoch " + shortest_number(s.period.value)
                              + " (period = " + shortest_number(s.period.value) + ")"};
  return {epochs, "the run's end at epoch " + shortest_number(epochs)};
}

std::string position_of(const job_config& c, const source_span& span) {
  return c.path + ":" + std::to_string(span.line) + ":" + std::to_string(span.column);
}

// A warm-up the config wrote for its own, longer run keeps its share of that run when a flag
// shortens it, if the written length would reach the first decay of the shorter run: the
// config's examples warm up for 1 of 10 epochs, and with --num-epochs 1 that is 0.1 epoch, not
// the whole epoch with its decays at 50% and 75% inside it (which the rate would never reach).
void shorten_warmup_with_run(job_config& c) {
  auto& s = c.schedule;
  const auto epochs = c.run.epochs.value;
  const auto bound = warmup_bound_of(c);
  if (!s.warmup.given || s.warmup.span.line == 0 || epochs >= s.config_epochs
      || s.warmup.value < bound.epoch)
    return;
  const double written = s.warmup.value;
  const double shortened =
    written * static_cast<double>(epochs) / static_cast<double>(s.config_epochs);
  if (!(shortened < bound.epoch))
    return; // still too long: check_warmup refuses it
  s.warmup.value = shortened;
  c.notes.push_back(position_of(c, s.warmup.span) + ": warm-up shortened from "
                    + epochs_text(written) + " to " + epochs_text(shortened)
                    + ", its share of the config's " + epochs_text(double(s.config_epochs)) + ": "
                    + epochs_text(written) + " would not end before " + bound.what
                    + ", and the lr would never reach its rate");
}

} // namespace

void resolve_schedule_defaults(job_config& c) {
  auto& s = c.schedule;
  const auto epochs = static_cast<double>(c.run.epochs.value);
  s.steps.value.clear();
  s.steps.given = s.written_steps.given;
  s.steps.span = s.written_steps.span;
  if (s.policy.value == "multi_step") {
    const std::vector<schedule_step> shares{{0.5, true}, {0.75, true}};
    for (const auto& step : s.written_steps.given ? s.written_steps.value : shares)
      s.steps.value.push_back(step.share ? step.value * epochs : step.value);
  }
  if (s.policy.value == "one_cycle")
    s.warmup.value = 0; // its rise is its warm-up (the key is refused there)
  else if (!s.warmup.given)
    s.warmup.value = std::min({1.0, 0.1 * epochs, warmup_bound_of(c).epoch / 2});
  if (s.config_epochs == 0)
    s.config_epochs = c.run.epochs.value;
  else
    shorten_warmup_with_run(c);
}

std::string warmup_overlap(const job_config& c) {
  const auto& s = c.schedule;
  const auto bound = warmup_bound_of(c);
  if (s.warmup.value == 0 || s.warmup.value < bound.epoch)
    return "";
  return "a warm-up of " + epochs_text(s.warmup.value) + " does not end before " + bound.what
         + ", so the lr would never reach its rate: give a shorter warm-up"
         + (s.policy.value == "multi_step" ? " or later steps" : "");
}

void check_schedule_steps(const job_config& c, const std::string& epochs_origin) {
  const auto& s = c.schedule;
  if (s.policy.value != "multi_step" || !s.written_steps.given)
    return;
  const auto epochs = c.run.epochs.value;
  const auto& written = s.written_steps.value;
  for (std::size_t i = 0; i < written.size() && i < s.steps.value.size(); ++i) {
    if (written[i].span.line == 0)
      continue;
    if (!written[i].share && s.steps.value[i] >= static_cast<double>(epochs))
      config_fail(c, written[i].span,
                  "step " + shortest_number(written[i].value) + " is not inside the run's "
                    + std::to_string(epochs) + " epochs"
                    + (epochs_origin.empty() ? "" : " (" + epochs_origin + ")")
                    + ": a step at or after the last epoch never applies; write steps as shares "
                      "of the run (steps = [50%, 75%]) to follow its length"
                    + (epochs_origin.empty() ? "" : ", or give --lr-step-epochs"));
    if (i > 0 && !(s.steps.value[i] > s.steps.value[i - 1]))
      config_fail(c, written[i].span,
                  "steps must increase, but this one falls at epoch "
                    + shortest_number(s.steps.value[i]) + ", not after epoch "
                    + shortest_number(s.steps.value[i - 1]));
  }
}

} // namespace troupe
