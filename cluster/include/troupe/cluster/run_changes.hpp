// The changes an operator makes to a run in training (troupe ctl set, checkpoint, stop), as
// words and as the records the metrics JSONL keeps of them. Each takes effect between two
// epochs, at the first step of the next; a record names that step, so a run replayed with
// `--replay-changes m.jsonl` makes the same changes at the same steps (a deterministic run
// then ends with the recorded run's weights, bit for bit).
//
// A setting is checked against the config language's key table (graph/config/key_table.hpp):
// the same key, the same range, the same words as a config that sets it.
//
// Thread-safety: plain values and functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/graph/job.hpp>

namespace troupe {

/// What an operator can change at a step boundary.
enum class run_change_kind : std::uint8_t { set, checkpoint, stop };

/// One change, as recorded: its words ("set optimizer.lr=0.05", "checkpoint", "stop") and the
/// step it took effect at.
struct run_change {
  run_change_kind kind = run_change_kind::set;
  shard_change set; ///< kind set: the setting, its value, and `step`
  std::string text;
  std::int64_t step = 0;
};

/// The keys `troupe ctl set` takes, by their config path: "optimizer.lr, optimizer.momentum,
/// optimizer.wd, topology.staleness".
std::string settable_keys();

/// Reads "KEY=VALUE" (KEY a config path, "optimizer.lr", or its name alone, "lr") for a run of
/// `job`: the change from `step` on, or errc::bad_request saying why not (an unknown or
/// unsettable key, a value that is no number, one out of the key's range naming the range, a
/// momentum for an optimizer without one, a staleness bound where the shard has one source:
/// aggregate(all)). topology.staleness -1 lifts the bound (async), N sets it (SSP). The text of
/// a change it reads is "set optimizer.lr=0.05".
caf::expected<shard_change> parse_setting(const std::string& assignment, const training_job& job,
                                          std::int64_t step);

/// "set optimizer.lr=0.05": the words a change of `change` is recorded with.
std::string setting_text(const shard_change& change);

/// The changes a metrics JSONL file recorded (each line's "changes"), in step order, read for a
/// run of `job`. errc::bad_data naming the file and line for a file that cannot be
/// read, a line that is not JSON, a change that is not one of the words above or has no step.
caf::expected<std::vector<run_change>> read_recorded_changes(const std::string& path,
                                                             const training_job& job);

} // namespace troupe
