// What every socket stream shares (TCP and Unix: tcp_connection.hpp, unix_connection.hpp): the
// descriptor, blocking reads and writes that resume after EINTR and after partial transfers,
// shutdown(2) to wake them for good, and the byte counters. The frame socket's threads call
// these from their own threads, so nothing here ever waits on CAF.
//
// Thread-safety: as connection.hpp says; the descriptor is closed by the destructor alone,
// once no thread uses it.
// Private to the cluster layer.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <sys/uio.h>

#include "cluster/transport/connection.hpp"

namespace troupe {

class stream_connection : public connection {
public:
  /// Takes ownership of connected socket `fd`, known in messages as `peer`.
  stream_connection(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  /// Closes the descriptor.
  ~stream_connection() override;
  stream_connection(const stream_connection&) = delete;
  stream_connection& operator=(const stream_connection&) = delete;

  bool write(const std::vector<frame_piece>& pieces) override;
  read_status read_exactly(char* into, std::size_t size) override;
  void discard_until_end() override;
  void shut_down() override;

  const std::string& peer() const override { return peer_; }
  int descriptor() const override { return fd_; }
  std::uint64_t bytes_sent() const override { return sent_.load(std::memory_order_relaxed); }
  std::uint64_t bytes_received() const override {
    return received_.load(std::memory_order_relaxed);
  }

private:
  const int fd_;
  const std::string peer_;
  std::vector<iovec> iovecs_; // the writer's, reused from write to write
  std::atomic<std::uint64_t> sent_{0}, received_{0};
};

/// A connection over connected socket `fd`, of the kind its address family says (AF_UNIX: a
/// Unix connection, else TCP), its peer named from the socket.
std::unique_ptr<connection> connection_of(int fd);

/// The text of errno value `code`.
std::string errno_text(int code);

} // namespace troupe
