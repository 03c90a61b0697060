// The scheduler's traffic table: every node's cumulative bytes per peer and message kind go
// in after each epoch's training; what comes out is the epoch's share, per node, as the JSON
// object of the metrics line (`traffic`) and the log line (`Epoch[e] Traffic: ...`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

class epoch_traffic {
public:
  /// Node `node`'s totals since it started (entries for the same peer are summed).
  void add(const std::string& node, const std::vector<peer_traffic>& peers);
  /// What one node's barriers waited for each source node, totals since it started; where
  /// several nodes report the same source, the longest counts (barriers wait at the same time).
  void add_waits(const std::vector<node_wait>& waits);

  struct figures {
    std::string json; ///< {"worker_0": {"rx": B, "tx": B, "kinds": {...}, "peers": {...}}, ...}
    std::string line; ///< "Epoch[3] Traffic: server_0 rx 1.2 MiB tx 3.4 MiB; ..."
    /// The stragglers: {"worker_1": {"seconds": S, "steps": N}, ...}, the longest first, and
    /// "Epoch[3] Waited for: worker_1 2.31 s (last in 420 steps), ..."; both empty when the
    /// barriers waited for no one (one source each, or none).
    std::string waits_json, waits_line;
  };
  /// What the nodes added since the last take moved during that time.
  figures take(std::int64_t epoch);

private:
  struct both_ways {
    std::vector<std::uint64_t> in, out; // per kind
  };
  using by_peer = std::map<std::string, both_ways>;
  std::map<std::string, by_peer> last_, now_;
  std::map<std::string, node_wait> last_waits_, now_waits_;
};

/// "1.23 MiB", "4.56 GiB", "512 B".
std::string bytes_text(std::uint64_t bytes);

} // namespace troupe
