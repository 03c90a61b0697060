#include "apps/train_flag_checks.hpp"

#include <cmath>
#include <cstdlib>

#include <troupe/graph/config/job_plan.hpp>
#include <troupe/graph/config/key_table.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

// --lr-step-epochs: epochs (5,7.5) or shares of the run (50%,75%), as the config's `steps`.
std::vector<schedule_step> parse_steps_flag(const std::string& text) {
  std::vector<schedule_step> steps;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    auto end = std::min(text.find(',', begin), text.size());
    auto item = text.substr(begin, end - begin);
    const bool share = !item.empty() && item.back() == '%';
    const auto number = share ? item.substr(0, item.size() - 1) : item;
    char* stop = nullptr;
    const double v = std::strtod(number.c_str(), &stop);
    if (number.empty() || *stop != '\0' || !std::isfinite(v))
      throw usage_error("--lr-step-epochs: '" + item + "' in '" + text
                        + "' is not an epoch (5, 7.5) or a share of the run (50%)");
    steps.push_back({share ? v / 100 : v, share, source_span{}});
    begin = end + 1;
  }
  return steps;
}

namespace {

// The multi-step boundaries against the run's epochs: the config's by its own rules, the
// flag's here.
void check_step_flags(const job_config& c, const flag_set& f) {
  const auto& s = c.schedule;
  const auto epochs = c.run.epochs.value;
  if (!(f.given("lr-step-epochs") && s.written_steps.given)) {
    check_schedule_steps(c, f.given("num-epochs") ? "--num-epochs " + std::to_string(epochs) : "");
    return;
  }
  for (std::size_t i = 0; i < s.written_steps.value.size(); ++i) {
    const auto& written = s.written_steps.value[i];
    const double at = s.steps.value[i];
    if (written.share && !(written.value > 0 && written.value < 1))
      throw usage_error("--lr-step-epochs: " + number_text(written.value * 100)
                        + "% is not a share of the run above 0% and below 100%");
    if (!written.share && !(at > 0 && at < static_cast<double>(epochs)))
      throw usage_error("--lr-step-epochs: " + number_text(at) + " is not inside the run's "
                        + std::to_string(epochs)
                        + " epochs (--num-epochs): a step there never applies");
    if (i > 0 && !(at > s.steps.value[i - 1]))
      throw usage_error("--lr-step-epochs must increase, but " + number_text(at) + " follows "
                        + number_text(s.steps.value[i - 1]));
  }
}

// A warm-up that does not end before the first decay (or the run's end) never reaches the
// rate: the flag that gave it, or the config's key naming the flag that moved what it meets.
void check_warmup_flags(const job_config& c, const flag_set& f) {
  const auto overlap = warmup_overlap(c);
  if (overlap.empty())
    return;
  const auto& w = c.schedule.warmup;
  if (w.span.line == 0)
    throw usage_error("--warmup-epochs " + number_text(w.value) + ": " + overlap);
  std::string moved;
  for (const char* flag : {"num-epochs", "lr-step-epochs"})
    if (f.given(flag))
      moved += std::string(moved.empty() ? " (" : ", ") + "--" + flag;
  config_fail(c, w.span, overlap + (moved.empty() ? "" : moved + ")"));
}

} // namespace

// What only the resolved config can tell (a config may set the policy or the epochs): flags
// that have no effect under the schedule, and multi-step boundaries outside the run. Steps the
// config wrote are checked by the config's rules at their position, naming --num-epochs when
// that flag shortened the run under them.
void check_schedule_flags(const job_config& c, const flag_set& f) {
  const auto& s = c.schedule;
  const auto& p = s.policy.value;
  if (p == "one_cycle" && f.given("warmup-epochs"))
    throw usage_error("--warmup-epochs does not apply to one_cycle, whose rise (pct_start) is its "
                      "warm-up");
  for (const char* flag : {"lr-factor", "lr-step-epochs"})
    if (f.given(flag) && p != "multi_step" && !(p == "step" && flag == std::string("lr-factor")))
      throw usage_error(std::string("--") + flag + " applies to the multi-step schedule"
                        + (flag == std::string("lr-factor") ? " and step" : "") + " only, not "
                        + p);
  if (p == "multi_step")
    check_step_flags(c, f);
  check_warmup_flags(c, f);
}

// A flag or a config key of an optimizer other than the run's: refused, naming which takes it.
void check_optimizer_flags(const job_config& c, const flag_set& f) {
  const auto& name = c.optimizer.name.value;
  job_config read = c; // a key's field is reached through a writable target
  key_target at{read, read.train_data};
  for (const auto& key : config_keys()) {
    if (std::string(key.section) != "optimizer" || key.taken_by(name))
      continue;
    if (*key.flag != '\0' && f.given(key.flag))
      throw usage_error(std::string("--") + key.flag + " applies to " + key.only + ", not " + name
                        + " (--optimizer, or the config's optimizer)");
    const auto* given = std::get_if<key_field<double>>(&key.field);
    const auto* given_bool = std::get_if<key_field<bool>>(&key.field);
    const source_span* span = nullptr;
    if (given != nullptr && (*given)(at).given)
      span = &(*given)(at).span;
    if (given_bool != nullptr && (*given_bool)(at).given)
      span = &(*given_bool)(at).span;
    if (span != nullptr && span->line != 0)
      config_fail(c, *span,
                  std::string(key.name) + " is not a key of " + name
                    + " (--optimizer names it); it applies to " + key.only);
  }
}

// The plan the session will build, built now so that what it refuses (a network that takes no
// --num-layers 7, workers that do not divide over the worker processes) is a usage error
// before anything starts, as `troupe check` says. A shard needs a key to own: more shards than
// the plan has keys is refused, not shrunk (plan_keys drops empty shards).
void check_plan(const job_config& config, const training_job& job, bool shards_given) {
  // A node of a cluster whose other count comes from its launcher (MPI, Slurm, dmlc: only
  // --server-nodes given) is planned by troupe node once the environment completed it.
  if ((job.nodes.servers == 0) != (job.nodes.workers == 0))
    return;
  const auto plan = plan_config(config, job, expected_data_facts(job));
  if (shards_given && plan.keys.shards.size() < static_cast<std::size_t>(job.shards))
    throw usage_error("--shards " + std::to_string(job.shards) + ": only "
                      + std::to_string(plan.keys.shards.size())
                      + " shards get a parameter key to own "
                      + "(fewer keys than shards; --slice-bytes cuts large parameters into more)");
}

// --compression on a topology whose machine exit answers its sources at different steps
// (async, ssp, backup) can compress only the pushes: refused naming the flag.
void check_compression_flag(const topology_config& t, const compression_spec& spec) {
  if (spec.answers == value_encoding::none)
    return;
  if (!answers_sources_alike(t.levels, machine_exit_hop(t.levels)))
    throw usage_error("--compression " + to_string(spec)
                      + " also compresses the answers, as deltas against what "
                        "every source holds, and topology "
                      + t.name.value
                      + " answers its sources at different "
                        "steps: use --compression push:"
                      + to_string(spec) + " to compress the pushes only");
}

} // namespace troupe
