// Receive buffers of a peer channel, reused. A payload is read into a buffer of exactly its size
// (the connection reads straight into it) and tensors decoded from it keep it alive; when the
// last of them is gone the buffer comes back here instead of to the allocator, so steady-state
// frames of recurring sizes (the same keys every step) neither allocate nor fault fresh pages
// in. Whoever drops the last tensor returns the buffer, on any thread: the pool has a mutex.
//
// Private to the cluster layer.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <troupe/cluster/frame_codec.hpp>

namespace troupe {

class receive_pool : public std::enable_shared_from_this<receive_pool> {
public:
  /// Keeps at most `max_bytes` of idle buffers; beyond that a returned buffer is freed.
  explicit receive_pool(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  /// A buffer of `size` bytes (contents unspecified), returned to this pool when the last
  /// handle to it goes. Of several idle ones, the one given back last (still in cache).
  std::shared_ptr<std::vector<char>> acquire(std::size_t size);

  /// Idle bytes held, for tests.
  std::size_t idle_bytes() const;

private:
  void give_back(std::vector<char>* buffer);

  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, std::unique_ptr<std::vector<char>>> idle_; // by size
  std::size_t idle_bytes_ = 0;
};

/// Tensors for decode_payload to unpack compressed values into, each over a buffer of `pool`
/// (back to it when the tensor's last handle goes).
unpacked_buffers unpacked_from(std::shared_ptr<receive_pool> pool);

} // namespace troupe
