// The two sides of `troupe bench transport` for Troupe's own transport: a server process
// holding a summing shard behind a listener, and a worker process pushing every key of a
// step through peer channels and remote-shard proxies, exactly the path a training step's
// pushes and weights take between nodes.
#pragma once

#include <cstdint>
#include <vector>

namespace troupe::bench {

/// How the benchmark's model is cut: `keys` keys of `key_bytes` each, spread over `servers`
/// shards in contiguous runs (the first keys % servers shards hold one more).
struct transport_layout {
  int servers = 1;
  int keys = 15;
  std::int64_t key_bytes = 4 << 20;
  /// Workers reach the servers through local sockets (cluster/transport/unix_connection.hpp), not
  /// TCP.
  bool local_sockets = true;

  /// Keys held by server s.
  int keys_of(int s) const { return keys / servers + (s < keys % servers ? 1 : 0); }
};

/// Serves shard `server` of `layout` on 127.0.0.1 (any free port, returned via `port`) until
/// the process ends: every push is added into its keys (w += g), and answered with their
/// weights.
void troupe_serve(const transport_layout& layout, int server, std::uint16_t& port);

/// Connects to the servers on `ports`, runs `warmup` untimed and `steps` timed steps (each
/// pushes every key and waits for every answer) and returns the seconds of the timed steps.
double troupe_worker(const transport_layout& layout, const std::vector<std::uint16_t>& ports,
                     int warmup, int steps);

} // namespace troupe::bench
