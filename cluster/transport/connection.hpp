// The byte transport under a frame socket (cluster/frame_socket.hpp): a connected stream that
// writes the pieces of frames and reads bytes back, and a listener (connection_listener) that
// accepts such streams. The frame socket's threads and its send order (send_order.hpp) sit above it
// and know nothing of what carries the bytes, so another transport (a TLS stream, a zero-copy send
// path) is one more implementation of these two interfaces, with nothing above them touched.
//
// Implementations: stream_connection.hpp (what every socket stream shares), tcp_connection.hpp
// (TCP, its listener and its tuning) and unix_connection.hpp (same-host Unix sockets).
//
// Thread-safety: one thread writes and one reads at a time; shut_down(), the counters and the
// names from any thread.
// Private to the cluster layer.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <troupe/cluster/frame_codec.hpp>

namespace troupe {

/// How a read of a given number of bytes ended: all of them came, the stream ended before
/// they did, or reading failed (errno says why).
enum class read_status { complete, ended, failed };

class connection {
public:
  virtual ~connection() = default;

  /// Writes every byte of `pieces` in order, however many system calls that takes; blocks
  /// until then. False (errno says why) when the connection broke or was shut down.
  virtual bool write(const std::vector<frame_piece>& pieces) = 0;
  /// Reads exactly `size` bytes into `into`, blocking until they came.
  virtual read_status read_exactly(char* into, std::size_t size) = 0;
  /// Reads and drops whatever comes until the stream ends (a stream that cannot be framed).
  virtual void discard_until_end() = 0;
  /// Shuts the stream down both ways: blocked reads and writes return. Idempotent.
  virtual void shut_down() = 0;

  /// The peer, for messages: "host:port", or how a Unix socket's peer is known.
  virtual const std::string& peer() const = 0;
  /// Whether the stream stays on this host (a Unix socket), not TCP.
  virtual bool local() const = 0;
  /// A descriptor to wait on with poll(2) for bytes to read (tests); reading or writing it
  /// would break the framing.
  virtual int descriptor() const = 0;
  /// Bytes written and read so far (frame headers included).
  virtual std::uint64_t bytes_sent() const = 0;
  virtual std::uint64_t bytes_received() const = 0;

  /// The tuning of a connection between hosts (tcp_connection.hpp says what each does); a
  /// transport without it refuses (false, errno EOPNOTSUPP) and reads 0.
  virtual bool set_congestion(const std::string& algorithm);
  virtual bool set_pacing(std::uint64_t bytes_per_second);
  virtual std::uint64_t pacing() const { return 0; }
  virtual std::uint64_t unsent_limit() const { return 0; }
};

inline bool connection::set_congestion(const std::string&) {
  errno = EOPNOTSUPP;
  return false;
}

inline bool connection::set_pacing(std::uint64_t) {
  errno = EOPNOTSUPP;
  return false;
}

class connection_listener {
public:
  virtual ~connection_listener() = default;
  /// The next connection a peer made, blocking until one comes; null once stopped (or when the
  /// listener cannot accept any more).
  virtual std::unique_ptr<connection> accept() = 0;
  /// Wakes accept() for good: it returns null from now on. Thread-safe, idempotent.
  virtual void stop() = 0;
  /// The port it listens on.
  virtual std::uint16_t port() const = 0;
  /// Whether it also accepts this host's peers over a Unix socket.
  virtual bool has_local_twin() const = 0;
};

} // namespace troupe
