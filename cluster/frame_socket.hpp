// A connection (TCP, or a same-host Unix socket: local_socket.hpp) that carries frames
// (frame_codec.hpp), with a reader and a writer thread of its own. A peer link (an actor) owns one:
// the reader hands it every payload, the writer writes the frames it queues. The threads keep the
// data path off CAF's single network thread (the multiplexer, which would read and write every
// connection of a process in turn) and let every connection of a node move bytes both ways at once,
// as the kernel allows.
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
//                                      `rank` (patience past); `skips`: this link's count so far
// The writer writes each frame's pieces with writev, straight from the tensors (no copy of
// their bytes in user space). A write error shuts the socket down, so the reader reports it.
//
// Which queued frame goes next (write_order, given to start()): fifo writes them as queued,
// every waiting frame in one system call; by_rank writes the lowest rank first, equal ranks as
// queued (frame_priority.hpp says which frame gets which rank), and takes at most
// ranked_batch_bytes into one system call (one frame at least), so a frame queued meanwhile
// waits for little more than the frame being written. A frame begun is always finished.
//
// A fixed push order (set_sequence, by_rank only): frames sent as sequenced whose rank the
// sequence lists wait for their turn: after every frame that is not (control frames, other
// tensor frames) the writer writes the sequence's next push, and waits for it when it is not
// queued yet, so a step's pushes leave in the sequence's order whatever order they came in
// (frame_priority.hpp, fixed_push_order, says why). A push of a rank this cycle of the
// sequence has already written (a second source of the same keys) goes at once. If the next
// push has not come within the patience while others wait, the writer goes on with the next
// of the sequence that is there (a source that skips a push must not stop the link).
//
// Pacing (set_pacing): the kernel spreads the connection's packets at most at a given rate
// (SO_MAX_PACING_RATE), so that connections sharing a host's link get equal shares. A paced
// connection also holds little unsent (TCP_NOTSENT_LOWAT, paced_unsent_bytes): what the kernel
// holds leaves in the order it was taken, so a frame that jumps the writer's queue (the first
// layers' push at backward's end, their answer) would otherwise wait behind megabytes of later
// layers' bytes there (ResNet-50, one worker at 10 Gbit: the next forward waited 8.4 ms a step
// for its first layers, 6.1 with little unsent; docs/benchmarks.md, "Eighteenth look").
//
// Copies per tensor: none in user space either way (the kernel's own copy remains).
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
#include <map>
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

enum class write_order { fifo, by_rank };

/// by_rank: the most bytes of frames one system call writes, unless one frame is bigger: at
/// 1 Gbit a frame queued behind such a batch waits about 2 ms.
constexpr std::size_t ranked_batch_bytes = std::size_t{256} << 10;
/// What a connection paced at `bytes_per_second` lets the kernel hold unsent: a millisecond of
/// its rate, and at least a writer's batch (fewer bytes would wake the writer for every batch).
constexpr std::uint64_t paced_unsent_bytes(std::uint64_t bytes_per_second) {
  return bytes_per_second / 1000 > ranked_batch_bytes ? bytes_per_second / 1000
                                                      : ranked_batch_bytes;
}

/// The most bytes one read of a payload waits for (about 8 ms at 1 Gbit; at loopback speeds a
/// system call per MiB costs ~1% of the copy).
constexpr std::size_t read_piece_bytes = std::size_t{1} << 20;

class frame_socket {
public:
  /// Takes a connected socket: TCP (sets TCP_NODELAY on it) or a Unix stream socket
  /// (local_socket.hpp; widens its buffers).
  explicit frame_socket(int fd);
  /// Closes the socket and waits for both threads.
  ~frame_socket();
  frame_socket(const frame_socket&) = delete;
  frame_socket& operator=(const frame_socket&) = delete;

  /// Connects to `host:port` within `timeout`; the error names the address and the reason.
  /// With `same_host_shortcut`, an address of this host is reached through the local socket its
  /// listener offers (local_socket.hpp) when there is one, else over TCP.
  static caf::expected<std::shared_ptr<frame_socket>> connect(const std::string& host,
                                                              std::uint16_t port,
                                                              std::chrono::milliseconds timeout,
                                                              bool same_host_shortcut = false);

  /// The peer's address, "host:port"; over a local socket, the address connected to (or, on
  /// the accepting side, the peer's pid), marked "(local socket)".
  const std::string& peer() const { return peer_; }
  /// Whether the connection is a local (Unix) socket rather than TCP.
  bool local() const { return local_; }
  /// The connection's descriptor, to wait on with poll(2) (a test waits for what the peer
  /// wrote to arrive); reading or writing it would break the framing.
  int descriptor() const { return fd_; }
  /// TCP: runs congestion control `algorithm` (tcp_congestion.hpp); false (errno says why)
  /// when the kernel refuses, or for a local socket.
  bool set_congestion(const std::string& algorithm);

  /// Starts both threads: payloads of at most `max_payload` bytes go to `owner`, read into
  /// buffers of `pool`; the writer writes in `order`. Call once, before send().
  void start(socket_owner_actor owner, std::size_t max_payload, std::shared_ptr<receive_pool> pool,
             write_order order = write_order::fifo);

  /// by_rank: sequenced pushes go in the order of `ranks` (one cycle, repeated), waiting at
  /// most `patience` for one that has not come while others wait. Call before start(); throws
  /// std::invalid_argument for a rank listed twice. An empty list: by rank alone.
  void set_sequence(std::vector<std::uint64_t> ranks, std::chrono::milliseconds patience);
  /// TCP: paces the connection at most at `bytes_per_second` (0: no limit); false (errno
  /// says why) when the kernel refuses, or for a local socket.
  /// Paced, the kernel holds at most paced_unsent_bytes(bytes_per_second) unsent; unpaced
  /// (0), as much as its buffer takes.
  bool set_pacing(std::uint64_t bytes_per_second);
  /// The pacing limit the kernel holds for the connection (for tests); 0 for a local socket.
  std::uint64_t pacing() const;
  /// The most bytes the kernel holds unsent (for tests); 0 where it sets no limit of its own
  /// (an unpaced connection, a local socket).
  std::uint64_t unsent_limit() const;
  /// How many times the writer stopped waiting for the sequence's next push (patience).
  std::size_t sequence_skips() const;
  /// Queues `frame` behind the frames queued before it (by_rank: before those of a higher
  /// rank; `sequenced`: a push that the sequence orders, if it lists its rank). After a write
  /// error or close(), frames are dropped.
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
  void note_bytes(); // the reader got bytes now (last_bytes_at)

  const int fd_;
  std::string peer_;
  bool local_ = false;
  std::mutex mutex_;
  std::condition_variable wake_writer_;
  std::multimap<std::uint64_t, encoded_frame> queue_; // by rank; equal ranks as queued
  // The fixed push order: the cycle's ranks, each rank's place in it, the pushes waiting for
  // their turn, the place whose push is next, the ranks this cycle wrote, since when the
  // next push is awaited.
  std::vector<std::uint64_t> sequence_;
  std::map<std::uint64_t, std::size_t> place_in_sequence_;
  std::multimap<std::uint64_t, encoded_frame> sequenced_;
  std::size_t next_place_ = 0;
  std::vector<bool> written_in_cycle_;
  std::chrono::milliseconds patience_{0};
  std::chrono::steady_clock::time_point awaited_since_;
  std::atomic<std::size_t> skips_{0};
  std::multimap<std::uint64_t, encoded_frame>::iterator next_sequenced(); // end(): none may go
  void take_sequenced(std::multimap<std::uint64_t, encoded_frame>::iterator it);
  write_order order_ = write_order::fifo;
  int holds_ = 0;
  bool closed_ = false;
  std::thread reader_, writer_;
  std::atomic<std::chrono::steady_clock::rep> last_bytes_{0};
};

/// A listening TCP socket, bound at once (so a port in use is the caller's error right away),
/// accepting on a thread of its own once started; with its same-host twin (local_socket.hpp),
/// it accepts on both.
class listening_socket {
public:
  /// Binds `host:port` (port 0: any free port) and listens; the error names the address. With
  /// `same_host_twin`, also offers the local socket of the bound address (skipped, TCP only,
  /// where that name is taken).
  static caf::expected<std::unique_ptr<listening_socket>>
  bind(const std::string& host, std::uint16_t port, bool same_host_twin = false);
  /// Stops accepting (as stop()) and closes the socket.
  ~listening_socket();
  listening_socket(const listening_socket&) = delete;
  listening_socket& operator=(const listening_socket&) = delete;

  std::uint16_t port() const { return port_; }
  /// Hands every accepted connection to `accepted`, on the accepting thread, until stop().
  /// Call once.
  void start(std::function<void(std::shared_ptr<frame_socket>)> accepted);
  /// Whether it also accepts on its local socket.
  bool has_local_twin() const { return local_fd_ >= 0; }
  /// Stops accepting; when it returns, `accepted` runs no more. Thread-safe, idempotent.
  void stop();

private:
  listening_socket(int fd, int local_fd, int stop_fd, std::uint16_t port)
      : fd_(fd), local_fd_(local_fd), stop_fd_(stop_fd), port_(port) {}
  int accept_one();
  const int fd_;
  const int local_fd_; ///< -1: TCP only
  const int stop_fd_;  ///< an eventfd: stop() wakes the acceptor through it
  const std::uint16_t port_;
  std::mutex mutex_;
  bool stopped_ = false;
  std::thread acceptor_;
};

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::received_payload)
