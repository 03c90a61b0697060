// Every wait of a cluster node, derived in one place from the limits a user sets (the join
// timeout and the peer timeout): a reader sees each bound beside what it follows from, and a
// new wait is added here, not written inline where it is used.
//
// Thread-safety: a plain value.
#pragma once

#include <algorithm>
#include <chrono>

namespace troupe {

struct cluster_clocks {
  std::chrono::milliseconds join_timeout{120000}; ///< --join-timeout
  std::chrono::milliseconds peer_timeout{5000};   ///< --peer-timeout (a channel's silence bound)

  /// How long a node that says goodbye waits for its peers to close their ends (so the frame
  /// is read before its process exits) before it answers anyway. The channel that carried the
  /// goodbye closes by then too: a live peer closes within a heartbeat or two, and the channel
  /// gives up on a silent one after the peer timeout, so one grace serves both.
  std::chrono::milliseconds goodbye_grace() const { return peer_timeout; }
  /// How long a node waits for its own listener to report its port: a local bind, bounded by
  /// the join timeout like everything before the run starts.
  std::chrono::milliseconds port_wait() const { return join_timeout; }
  /// How long a member that joined waits for its assignment: the scheduler assigns once every
  /// node joined within its own join timeout, which started at most one join timeout earlier
  /// (a member may start first), then says goodbye to all if one never came.
  std::chrono::milliseconds assignment_wait() const { return join_timeout * 2 + goodbye_grace(); }
};

} // namespace troupe
