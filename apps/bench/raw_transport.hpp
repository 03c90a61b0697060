// The transport benchmark's baseline: the same push-and-answer pattern over plain blocking TCP
// sockets with the same framing (an 8-byte header, then the bytes), no actors, no encoding.
// A server answers each frame with a frame of the same size from a buffer it holds; a worker
// writes a step's frames on one thread per connection while another reads the answers, so both
// directions of every connection are busy at once, as they are for Troupe's channels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::bench {

/// Listens on 127.0.0.1 (any free port, returned through `port`) and serves every connection
/// on threads of its own until the process ends. Throws std::runtime_error naming the call.
void raw_serve(std::uint16_t& port, int connections);

struct raw_step_plan {
  std::vector<std::uint16_t> ports; ///< one connection per server
  std::vector<int> frames;          ///< frames per step to each server
  std::int64_t frame_bytes = 4 << 20;
};

/// Connects to every port and runs `warmup` untimed then `steps` timed steps; returns the
/// seconds of the timed ones. A step sends every frame and waits for every answer.
double raw_worker(const raw_step_plan& plan, int warmup, int steps);

} // namespace troupe::bench
