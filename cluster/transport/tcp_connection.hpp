// TCP streams between nodes: the connection (TCP_NODELAY, congestion control, pacing), how a
// node connects to a peer (taking the same-host Unix socket where the peer offers one:
// unix_connection.hpp), and the listener that accepts both.
//
// Pacing (set_pacing): the kernel spreads the connection's packets at most at a given rate
// (SO_MAX_PACING_RATE), so that connections sharing a host's link get equal shares. A paced
// connection also holds little unsent (TCP_NOTSENT_LOWAT, paced_unsent_bytes in send_order.hpp):
// what the kernel holds leaves in the order it was taken, so a frame that jumps the writer's
// queue (the first layers' push at backward's end, their answer) would otherwise wait behind
// megabytes of later layers' bytes there (ResNet-50, one worker at 10 Gbit: the next forward
// waited 8.4 ms a step for its first layers, 6.1 with little unsent; docs/benchmarks.md,
// "Eighteenth look").
//
// Thread-safety: as connection.hpp says; the tuning calls before the connection's threads run.
// Private to the cluster layer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <caf/expected.hpp>

#include "cluster/transport/connection.hpp"
#include "cluster/transport/stream_connection.hpp"

namespace troupe {

class tcp_connection : public stream_connection {
public:
  /// Takes connected TCP socket `fd` (sets TCP_NODELAY on it), known in messages as `peer`.
  tcp_connection(int fd, std::string peer);
  bool local() const override { return false; }

  /// Runs congestion control `algorithm` (tcp_congestion.hpp); false (errno says why) when
  /// the kernel refuses.
  bool set_congestion(const std::string& algorithm) override;
  /// Paces the connection at most at `bytes_per_second` (0: no limit); false (errno says why)
  /// when the kernel refuses. Paced, the kernel holds at most
  /// paced_unsent_bytes(bytes_per_second) unsent; unpaced (0), as much as its buffer takes.
  bool set_pacing(std::uint64_t bytes_per_second) override;
  /// The pacing limit the kernel holds (0: none).
  std::uint64_t pacing() const override;
  /// The most bytes the kernel holds unsent; 0 where it sets no limit of its own.
  std::uint64_t unsent_limit() const override;
};

/// Connects to `host:port` within `timeout`; the error names the address and the reason. With
/// `same_host_shortcut`, an address of this host is reached through the Unix socket its
/// listener offers (unix_connection.hpp) when there is one, else over TCP.
caf::expected<std::unique_ptr<connection>> connect_stream(const std::string& host,
                                                          std::uint16_t port,
                                                          std::chrono::milliseconds timeout,
                                                          bool same_host_shortcut = false);

/// A listening TCP socket, bound at once (so a port in use is the caller's error right away),
/// with its same-host twin where asked (a Unix socket named after the bound address).
class tcp_listener : public connection_listener {
public:
  /// Binds `host:port` (port 0: any free port) and listens; the error names the address. With
  /// `same_host_twin`, also offers the Unix socket of the bound address (skipped, TCP only,
  /// where that name is taken).
  static caf::expected<std::unique_ptr<tcp_listener>>
  bind(const std::string& host, std::uint16_t port, bool same_host_twin = false);
  /// Closes both sockets.
  ~tcp_listener() override;
  tcp_listener(const tcp_listener&) = delete;
  tcp_listener& operator=(const tcp_listener&) = delete;

  /// The next connection on either socket. When the process is out of descriptors or memory
  /// the peer waits in the backlog, and accept() tries again after a while, or returns null at
  /// once when stop() comes meanwhile.
  std::unique_ptr<connection> accept() override;
  void stop() override;
  std::uint16_t port() const override { return port_; }
  bool has_local_twin() const override { return local_fd_ >= 0; }

  /// How long accept() waits before it tries again when out of descriptors or memory.
  static constexpr std::chrono::milliseconds retry_after{100};

private:
  tcp_listener(int fd, int local_fd, int stop_fd, std::uint16_t port)
      : fd_(fd), local_fd_(local_fd), stop_fd_(stop_fd), port_(port) {}
  bool stopped_within(std::chrono::milliseconds wait) const; // waits on the stop signal
  const int fd_;
  const int local_fd_; ///< -1: TCP only
  const int stop_fd_;  ///< an eventfd: stop() wakes accept() through it
  const std::uint16_t port_;
  std::mutex mutex_;
  bool stopped_ = false;
};

} // namespace troupe
