// The traffic of every channel of one node, readable from any thread: each peer channel adds its
// counters when it starts and counts every frame it writes or reads there (bytes, headers
// included, per message kind), so a node can say at any moment how much it moved to and from
// each peer without asking its channels. Channels that have ended keep their entry: a node's totals
// never go down.
//
// Thread-safety: all members are thread-safe; counters are relaxed atomics (each channel is the
// only writer of its own).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>

#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

class traffic_registry {
public:
  /// One channel's frames and bytes per kind (a channel keeps its own when there is no registry).
  struct counters {
    std::array<std::atomic<std::uint64_t>, wire_kinds> bytes_in{}, bytes_out{}, frames_in{},
      frames_out{};
    void count_in(std::size_t kind, std::uint64_t bytes) {
      bytes_in[kind].fetch_add(bytes, std::memory_order_relaxed);
      frames_in[kind].fetch_add(1, std::memory_order_relaxed);
    }
    void count_out(std::size_t kind, std::uint64_t bytes) {
      bytes_out[kind].fetch_add(bytes, std::memory_order_relaxed);
      frames_out[kind].fetch_add(1, std::memory_order_relaxed);
    }
  };

  /// A new entry for the channel `channel`, named `peer` until rename.
  std::shared_ptr<counters> add(caf::actor_addr channel, std::string peer);
  /// The peer's own name, once its hello told it.
  void rename(const caf::actor_addr& channel, std::string peer);
  /// The name of channel `channel`'s peer: the one its hello gave, or its address before that;
  /// empty for a channel not registered here.
  std::string peer_of(const caf::actor_addr& channel) const;
  /// Every entry's bytes per kind (kind_name order) and the channel it belongs to.
  struct entry {
    caf::actor_addr channel;
    peer_traffic traffic;
  };
  std::vector<entry> snapshot() const;

private:
  struct slot {
    caf::actor_addr channel;
    std::string peer;
    std::shared_ptr<counters> values;
  };
  mutable std::mutex mutex_;
  std::vector<slot> slots_;
};

} // namespace troupe
