// Which queued frame a connection's writer writes next: the policy, apart from any socket, so
// that it can be tested on its own with frames and times a test chooses (send_order_test.cpp).
// The writer (frame_socket.hpp) holds the frames here, asks what may go, takes a batch and
// writes it; this class never blocks, never reads a clock and never touches a descriptor.
//
// Orders (write_order): fifo takes the frames as queued, every waiting frame in one batch.
// by_rank takes the lowest rank first, equal ranks as queued (frame_priority.hpp says which
// frame gets which rank), at most ranked_batch_bytes in a batch (one frame at least), so a
// frame queued meanwhile waits for little more than the frame being written.
//
// The fixed push order (set_sequence, by_rank only): frames queued as sequenced whose rank the
// sequence lists wait for their turn. After every frame that is not sequenced (control frames,
// other tensor frames) comes the sequence's next push; while it has not been queued, the others
// wait, so a step's pushes leave in the sequence's order whatever order they came in
// (frame_priority.hpp, fixed_push_order, says why). A push of a rank this cycle of the sequence
// has already taken (a second source of the same keys) goes at once. If the next push has not
// come within the patience while others wait, the writer gives up on it (give_up_waiting): the
// order goes on with the next of the sequence that is there, so a source that skips a push
// cannot stop the connection.
//
// Pacing budget: a paced connection lets the kernel hold little unsent (paced_unsent_bytes);
// what the kernel holds leaves in the order it was taken, so a frame that jumps this queue
// would otherwise wait behind megabytes of later frames there.
//
// Thread-safety: none; the writer and the senders share it under the writer's mutex.
// Private to the cluster layer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <troupe/cluster/frame_codec.hpp>

namespace troupe {

enum class write_order { fifo, by_rank };

/// by_rank: the most bytes of frames one batch holds, unless one frame is bigger: at 1 Gbit a
/// frame queued behind such a batch waits about 2 ms.
constexpr std::size_t ranked_batch_bytes = std::size_t{256} << 10;
/// What a connection paced at `bytes_per_second` lets the kernel hold unsent: a millisecond of
/// its rate, and at least a writer's batch (fewer bytes would wake the writer for every batch).
constexpr std::uint64_t paced_unsent_bytes(std::uint64_t bytes_per_second) {
  return bytes_per_second / 1000 > ranked_batch_bytes ? bytes_per_second / 1000
                                                      : ranked_batch_bytes;
}

class send_order {
public:
  using clock = std::chrono::steady_clock;

  explicit send_order(write_order order = write_order::fifo) : order_(order) {}

  /// The order frames are taken in; set before the first frame is queued.
  void set_order(write_order order) { order_ = order; }
  write_order order() const { return order_; }

  /// by_rank: sequenced pushes go in the order of `ranks` (one cycle, repeated), the writer
  /// waiting at most `patience` for one that has not come while others wait. Throws
  /// std::invalid_argument for a rank listed twice (and keeps the sequence it had). An empty
  /// list: by rank alone.
  void set_sequence(std::vector<std::uint64_t> ranks, std::chrono::milliseconds patience);

  /// Queues `frame` (queued at `now`) behind the frames queued before it (by_rank: before those
  /// of a higher rank; `sequenced`: a push the sequence orders, if it lists its rank).
  void queue(encoded_frame frame, std::uint64_t rank, bool sequenced, clock::time_point now);

  /// Whether a frame may be taken now.
  bool ready() const;
  /// While pushes wait for the sequence's next one and nothing may be taken: when the writer
  /// gives up waiting for it. Empty otherwise (nothing to wait for, or a frame may go).
  std::optional<clock::time_point> patience_ends() const;
  /// At `now`, past patience_ends(): gives up on the awaited push, going on with the first
  /// waiting push after it in the sequence (the ones given up on, when they come, go at once,
  /// as a repeat would). The rank given up on; empty when it is not time (or nothing waits).
  std::optional<std::uint64_t> give_up_waiting(clock::time_point now);
  /// How many times give_up_waiting gave up.
  std::size_t skips() const { return skips_; }

  /// Moves the frames to write next (at `now`) to the end of `batch`: fifo everything that may
  /// go, by_rank the lowest ranks up to ranked_batch_bytes; frames not in the sequence before
  /// the sequence's pushes. Nothing when !ready().
  void take_batch(std::vector<encoded_frame>& batch, clock::time_point now);

  /// Removes every frame queued (the caller releases them where it holds no lock).
  std::vector<encoded_frame> drop_all();

private:
  using ranked_frames = std::multimap<std::uint64_t, encoded_frame>;
  ranked_frames::iterator next_sequenced();
  ranked_frames::const_iterator next_sequenced() const;
  void take_sequenced(ranked_frames::iterator it, clock::time_point now);

  write_order order_;
  ranked_frames queue_; // by rank; equal ranks as queued (fifo: every rank 0)
  // The fixed push order: the cycle's ranks, each rank's place in it, the pushes waiting for
  // their turn, the place whose push is next, the places this cycle took, since when the next
  // push is awaited.
  std::vector<std::uint64_t> sequence_;
  std::map<std::uint64_t, std::size_t> place_in_sequence_;
  ranked_frames sequenced_;
  std::size_t next_place_ = 0;
  std::vector<bool> taken_in_cycle_;
  std::chrono::milliseconds patience_{0};
  clock::time_point awaited_since_;
  std::size_t skips_ = 0;
};

} // namespace troupe
