// The one range of every value that both a config key and a command-line flag can set
// (`train { threads = N }` and `--threads N`, `train { eval_every = 0 }` and `--eval-every 0`).
// Each range is declared with its key in the key table (key_table.hpp); the config reader and
// the flag checks (apps/train_flags.cpp, apps/node_command.cpp) both look it up here, so a
// value one accepts the other accepts too; each words the refusal its own way (a key at its
// position, a flag by name).
//
// Thread-safety: read-only after the key table is built.
#pragma once

#include <cstdint>
#include <string>

namespace troupe {

struct key_range {
  double min = 0;
  double max = 0;
  bool integral = true;  ///< a whole number
  bool min_open = false; ///< min itself is outside (lr: above 0)
  bool max_open = false; ///< max itself is outside (momentum: below 1)
  const char* why = "";  ///< said after the range ("0: no validation")

  bool contains(double v) const {
    return (min_open ? v > min : v >= min) && (max_open ? v < max : v <= max);
  }
};

/// The rule between two keys: a peer is lost only after it missed more than two heartbeats
/// (cluster.peer_timeout and cluster.heartbeat, --peer-timeout and --heartbeat).
template <class T> bool peer_timeout_fits(T heartbeat, T peer_timeout) {
  return peer_timeout > heartbeat * 2;
}
inline constexpr const char* peer_timeout_rule =
  "must exceed twice heartbeat (a peer is lost after missing heartbeats)";

/// The largest stale-synchronous bound a topology's `staleness =` (and troupe ctl set's
/// topology.staleness) takes.
inline constexpr int max_staleness = 1000000;

/// The range of a config key ("train.threads"); std::out_of_range for a key without one.
const key_range& range_of_key(const std::string& key);
/// The range of the value a flag sets ("threads" for --threads, "val-batch-size" for the
/// validation data's batch); null when the flag has none here (its value is checked where it
/// is parsed).
const key_range* range_of_flag(const std::string& flag);

/// "between 1 and 64", "above 0 and at most 100", "at least 0 and below 1": the range in words,
/// numbers in their shortest form, `why` in parentheses after it when there is one.
std::string range_text(const key_range& range);

/// A number as people write it: whole numbers in full (1000000000, not 1e+09), others in the
/// shortest form that reads back as the same double (0.05, not 0.050000).
std::string shortest_number(double v);

/// The most compute threads a run may ask for on this machine: 4 per hardware thread, at least
/// 64 (more only oversubscribe the cores: 100 threads on 2 cores crawl).
int max_compute_threads();

} // namespace troupe
