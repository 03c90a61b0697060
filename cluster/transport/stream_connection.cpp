// See stream_connection.hpp. Plain POSIX calls on a blocking socket.
#include "cluster/transport/stream_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <sys/socket.h>
#include <unistd.h>

#include "cluster/transport/socket_address.hpp"
#include "cluster/transport/tcp_connection.hpp"
#include "cluster/transport/unix_connection.hpp"

namespace troupe {

std::string errno_text(int code) {
  return std::strerror(code);
}

stream_connection::~stream_connection() {
  ::close(fd_);
}

bool stream_connection::write(const std::vector<frame_piece>& pieces) {
  iovecs_.clear();
  for (const auto& piece : pieces)
    iovecs_.push_back(iovec{const_cast<char*>(piece.data), piece.size});
  std::size_t next = 0;
  while (next < iovecs_.size()) {
    msghdr message{};
    message.msg_iov = iovecs_.data() + next;
    message.msg_iovlen = std::min<std::size_t>(iovecs_.size() - next, IOV_MAX);
    const auto sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    sent_.fetch_add(static_cast<std::uint64_t>(sent), std::memory_order_relaxed);
    // Skips what was written: whole pieces, then the front of a partly written one.
    auto left = static_cast<std::size_t>(sent);
    while (next < iovecs_.size() && left >= iovecs_[next].iov_len)
      left -= iovecs_[next++].iov_len;
    if (left > 0) {
      iovecs_[next].iov_base = static_cast<char*>(iovecs_[next].iov_base) + left;
      iovecs_[next].iov_len -= left;
    }
  }
  return true;
}

read_status stream_connection::read_exactly(char* into, std::size_t size) {
  while (size > 0) {
    const auto got = ::recv(fd_, into, size, MSG_WAITALL);
    if (got > 0) {
      received_.fetch_add(static_cast<std::uint64_t>(got), std::memory_order_relaxed);
      into += got;
      size -= static_cast<std::size_t>(got);
    } else if (got == 0) {
      return read_status::ended;
    } else if (errno != EINTR) {
      return read_status::failed;
    }
  }
  return read_status::complete;
}

void stream_connection::discard_until_end() {
  char sink[4096];
  for (;;) {
    const auto got = ::recv(fd_, sink, sizeof sink, 0);
    if (got == 0 || (got < 0 && errno != EINTR))
      return;
    if (got > 0)
      received_.fetch_add(static_cast<std::uint64_t>(got), std::memory_order_relaxed);
  }
}

void stream_connection::shut_down() {
  ::shutdown(fd_, SHUT_RDWR);
}

std::unique_ptr<connection> connection_of(int fd) {
  sockaddr_storage mine{};
  socklen_t length = sizeof mine;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &length) == 0
      && mine.ss_family == AF_UNIX)
    return std::make_unique<unix_connection>(fd);
  sockaddr_storage peer{};
  length = sizeof peer;
  const auto name = ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0
                      ? address_of(reinterpret_cast<const sockaddr*>(&peer))
                      : std::string("an unknown peer");
  return std::make_unique<tcp_connection>(fd, name);
}

} // namespace troupe
