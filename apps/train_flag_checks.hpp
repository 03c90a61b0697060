// What `troupe train`'s flags are checked against once the config they land on is resolved:
// the schedule (a flag that has no effect under it, a boundary outside the run), the plan (what
// the session would refuse), and the compression of a topology's answers. Each refusal is a
// usage_error naming the flag.
#pragma once

#include <string>
#include <vector>

#include "apps/flags.hpp"
#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/job.hpp>

namespace troupe {

/// --lr-step-epochs: epochs (5,7.5) or shares of the run (50%,75%), as the config's `steps`.
std::vector<schedule_step> parse_steps_flag(const std::string& text);

/// What only the resolved config can tell (a config may set the policy or the epochs): flags
/// that have no effect under the schedule, and multi-step boundaries outside the run. Steps the
/// config wrote are checked by the config's rules at their position, naming --num-epochs when
/// that flag shortened the run under them.
void check_schedule_flags(const job_config& c, const flag_set& f);

/// The optimizer's keys against the optimizer the config and flags name: a flag of a key it
/// does not take (--beta1 for sgd) is a usage error, and so is a key the config gave another
/// optimizer before --optimizer named this one (FILE:LINE:COL at the key).
void check_optimizer_flags(const job_config& c, const flag_set& f);

/// The plan the session will build, built now so that what it refuses (a network that takes no
/// --num-layers 7, workers that do not divide over the worker processes) is a usage error
/// before anything starts, as `troupe check` says. A shard needs a key to own: more shards than
/// the plan has keys is refused, not shrunk (plan_keys drops empty shards).
void check_plan(const job_config& config, const training_job& job, bool shards_given);

/// --compression on a topology whose machine exit answers its sources at different steps
/// (async, ssp, backup) can compress only the pushes: refused naming the flag.
void check_compression_flag(const topology_config& t, const compression_spec& spec);

} // namespace troupe
