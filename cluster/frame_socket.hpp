// A connection (connection.hpp: TCP, or a same-host Unix socket) that carries frames
// (frame_codec.hpp), with a reader and a writer thread of its own. A peer's channel (an actor)
// owns one: the reader hands it every payload, the writer writes the frames it queues. The
// threads keep the data path off CAF's single network thread (the multiplexer, which would read
// and write every connection of a process in turn) and let every connection of a node move
// bytes both ways at once, as the kernel allows.
//
// What the reader sends its owner (in order; nothing after `closed`):
//   (frame_in_atom, received_payload)  a payload of exactly the announced size, in a pooled
//                                      buffer (8-byte aligned) the decoder reads in place
//   (frame_error_atom, std::string)    the stream broke the framing (wrong magic, a length
//                                      over the limit): the reader reads nothing more into
//                                      frames and discards the rest until the peer closes
//   (socket_closed_atom, std::string)  the peer closed, or reading failed (the text says how)
// What the writer sends it:
//   (sequence_skip_atom, std::uint64_t rank, std::uint64_t skips)
//                                      the fixed push order stopped waiting for its push of
//                                      `rank` (patience past); `skips`: this socket's count so far
// The writer hands each batch's pieces to the connection at once, straight from the tensors (no
// copy of their bytes in user space; the kernel's own copy remains). A write error shuts the
// connection down, so the reader reports it.
//
// Which queued frame goes next is the send order's (send_order.hpp) to say: the order
// (write_order, given to start()), the fixed push sequence and its patience. The writer only
// asks it, waits where it says, and writes; a frame begun is always finished.
//
// Liveness: the reader reads a payload in pieces of at most read_piece_bytes and notes the
// time of every piece (last_bytes_at), so a peer whose one big frame takes longer than a
// connection timeout to arrive (a whole model answered at 1 Gbit: seconds) is seen to be
// alive while its bytes come, not only when the frame is complete.
// Thread-safety: send(), close() and last_bytes_at() from any thread.
//
// Private to the cluster layer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/expected.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/cluster/frame_codec.hpp>

#include "cluster/receive_pool.hpp"
#include "cluster/send_order.hpp"
#include "cluster/transport/connection.hpp"

namespace troupe {

using frame_in_atom = caf::atom_constant<caf::atom("framein")>;
using frame_error_atom = caf::atom_constant<caf::atom("frameerr")>;
using socket_closed_atom = caf::atom_constant<caf::atom("sockclose")>;
using sequence_skip_atom = caf::atom_constant<caf::atom("seqskip")>;

/// One payload as it arrived (the frame header stripped).
struct received_payload {
  std::shared_ptr<std::vector<char>> bytes;
};

/// What a connection's threads tell the actor that owns it (the messages listed at the top).
using socket_owner_actor =
  caf::typed_actor<caf::reacts_to<frame_in_atom, received_payload>,
                   caf::reacts_to<frame_error_atom, std::string>,
                   caf::reacts_to<socket_closed_atom, std::string>,
                   caf::reacts_to<sequence_skip_atom, std::uint64_t, std::uint64_t>>;

/// The most bytes one read of a payload waits for (about 8 ms at 1 Gbit; at loopback speeds a
/// system call per MiB costs ~1% of the copy).
constexpr std::size_t read_piece_bytes = std::size_t{1} << 20;

class frame_socket {
public:
  /// Takes a connected stream (TCP, or Unix: unix_connection.hpp).
  explicit frame_socket(std::unique_ptr<connection> stream);
  /// Closes the connection and waits for both threads.
  ~frame_socket();
  frame_socket(const frame_socket&) = delete;
  frame_socket& operator=(const frame_socket&) = delete;

  /// Connects to `host:port` within `timeout` (connect_stream, tcp_connection.hpp); the error
  /// names the address and the reason.
  static caf::expected<std::shared_ptr<frame_socket>> connect(const std::string& host,
                                                              std::uint16_t port,
                                                              std::chrono::milliseconds timeout,
                                                              bool same_host_shortcut = false);

  /// The peer's address, "host:port"; over a local socket, the address connected to (or, on
  /// the accepting side, the peer's pid), marked "(local socket)".
  const std::string& peer() const { return stream_->peer(); }
  /// Whether the connection is a local (Unix) socket rather than TCP.
  bool local() const { return stream_->local(); }
  /// The connection's descriptor, to wait on with poll(2) (a test waits for what the peer
  /// wrote to arrive); reading or writing it would break the framing.
  int descriptor() const { return stream_->descriptor(); }
  /// The connection's tuning (tcp_connection.hpp; refused for a local socket). Before start().
  bool set_congestion(const std::string& algorithm) { return stream_->set_congestion(algorithm); }
  bool set_pacing(std::uint64_t bytes_per_second) { return stream_->set_pacing(bytes_per_second); }
  std::uint64_t pacing() const { return stream_->pacing(); }
  std::uint64_t unsent_limit() const { return stream_->unsent_limit(); }
  /// Bytes the connection wrote and read so far, frame headers included.
  std::uint64_t bytes_sent() const { return stream_->bytes_sent(); }
  std::uint64_t bytes_received() const { return stream_->bytes_received(); }

  /// Starts both threads: payloads of at most `max_payload` bytes go to `owner`, read into
  /// buffers of `pool`; the writer writes in `order`. Call once, before send().
  void start(socket_owner_actor owner, std::size_t max_payload, std::shared_ptr<receive_pool> pool,
             write_order order = write_order::fifo);

  /// by_rank: sequenced pushes go in the order of `ranks` (send_order::set_sequence). Call
  /// before start(); throws std::invalid_argument for a rank listed twice.
  void set_sequence(std::vector<std::uint64_t> ranks, std::chrono::milliseconds patience);
  /// How many times the writer stopped waiting for the sequence's next push (patience).
  std::size_t sequence_skips() const;
  /// Queues `frame` (send_order::queue). After a write error or close(), frames are dropped.
  void send(encoded_frame frame, std::uint64_t rank = 0, bool sequenced = false);

  /// While a holding lives, the writer starts no new frame (it finishes the one it writes):
  /// frames sent meanwhile are ordered among each other as if queued at once. A channel holds
  /// its writer while it writes what waited for admission; tests, to see the order.
  class holding {
  public:
    explicit holding(frame_socket& socket);
    ~holding();
    holding(const holding&) = delete;
    holding& operator=(const holding&) = delete;

  private:
    frame_socket& socket_;
  };

  /// Shuts the connection down both ways (blocked reads and writes return), drops what is not
  /// written yet. The threads end on their own; the destructor joins them.
  void close();

  /// When the reader last got bytes from the peer (a header or a piece of a payload); the
  /// time start() was called before any came.
  std::chrono::steady_clock::time_point last_bytes_at() const {
    return std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(last_bytes_.load()));
  }

private:
  void read_loop(socket_owner_actor owner, std::size_t max_payload,
                 std::shared_ptr<receive_pool> pool);
  void write_loop(socket_owner_actor owner);
  // Waits until the send order gives frames (into `batch`): false once closed.
  bool next_batch(const socket_owner_actor& owner, std::vector<encoded_frame>& batch);
  void note_bytes(); // the reader got bytes now (last_bytes_at)

  const std::unique_ptr<connection> stream_;
  mutable std::mutex mutex_;
  std::condition_variable wake_writer_;
  send_order order_; // under mutex_
  int holds_ = 0;
  bool closed_ = false;
  std::thread reader_, writer_;
  std::atomic<std::chrono::steady_clock::rep> last_bytes_{0};
};

/// A listener (connection_listener, connection.hpp) accepting on a thread of its own once started,
/// each connection handed over as a frame socket.
class listening_socket {
public:
  /// Binds `host:port` (tcp_listener::bind: port 0 for any free port; with `same_host_twin`,
  /// its Unix socket too); the error names the address.
  static caf::expected<std::unique_ptr<listening_socket>>
  bind(const std::string& host, std::uint16_t port, bool same_host_twin = false);
  explicit listening_socket(std::unique_ptr<connection_listener> listening)
      : listening_(std::move(listening)) {}
  /// Stops accepting (as stop()).
  ~listening_socket();
  listening_socket(const listening_socket&) = delete;
  listening_socket& operator=(const listening_socket&) = delete;

  std::uint16_t port() const { return listening_->port(); }
  /// Hands every accepted connection to `accepted`, on the accepting thread, until stop().
  /// Call once.
  void start(std::function<void(std::shared_ptr<frame_socket>)> accepted);
  /// Whether it also accepts on its local socket.
  bool has_local_twin() const { return listening_->has_local_twin(); }
  /// Stops accepting; when it returns, `accepted` runs no more. Thread-safe, idempotent.
  void stop();

private:
  const std::unique_ptr<connection_listener> listening_;
  std::mutex mutex_;
  std::thread acceptor_;
};

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::received_payload)
