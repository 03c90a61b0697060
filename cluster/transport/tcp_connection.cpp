// See tcp_connection.hpp. Plain POSIX sockets; a listener's accept waits in poll(2) on both of
// its sockets and on an eventfd that stop() signals, so stopping never waits for a peer.
#include "cluster/transport/tcp_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/tcp_congestion.hpp>

#include "cluster/send_order.hpp"
#include "cluster/transport/socket_address.hpp"
#include "cluster/transport/unix_connection.hpp"

namespace troupe {

namespace {

// The addresses `host:port` resolves to (numeric port), or the resolver's complaint.
struct resolved {
  addrinfo* list = nullptr;
  std::string error;
  ~resolved() {
    if (list)
      ::freeaddrinfo(list);
  }
};

void resolve(resolved& out, const std::string& host, std::uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const auto code = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &out.list);
  if (code != 0)
    out.error = std::string("cannot resolve '") + host + "': " + ::gai_strerror(code);
}

// Connects `fd` to `address` within `timeout`: 0, or the errno of the failure.
int connect_within(int fd, const addrinfo& address, std::chrono::milliseconds timeout) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int result = ::connect(fd, address.ai_addr, address.ai_addrlen) == 0 ? 0 : errno;
  if (result == EINPROGRESS) {
    pollfd waiting{fd, POLLOUT, 0};
    const auto ready =
      ::poll(&waiting, 1, static_cast<int>(std::min<std::int64_t>(timeout.count(), INT_MAX)));
    if (ready == 0) {
      result = ETIMEDOUT;
    } else if (ready < 0) {
      result = errno;
    } else {
      socklen_t length = sizeof result;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &result, &length);
    }
  }
  ::fcntl(fd, F_SETFL, flags);
  return result;
}

// A socket bound to `a` and listening, non-blocking (the acceptor polls it, and a client gone
// between the poll and the accept must not block it; accepted sockets do not inherit the
// flag): the descriptor, or -1 (errno says why).
int listen_on(const addrinfo& a) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0)
    return -1;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, a.ai_addr, a.ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int why = errno;
    ::close(fd);
    errno = why;
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

} // namespace

tcp_connection::tcp_connection(int fd, std::string peer) : stream_connection(fd, std::move(peer)) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool tcp_connection::set_congestion(const std::string& algorithm) {
  return set_tcp_congestion(descriptor(), algorithm);
}

bool tcp_connection::set_pacing(std::uint64_t bytes_per_second) {
  unsigned long rate = bytes_per_second == 0 ? ~0UL : static_cast<unsigned long>(bytes_per_second);
  if (::setsockopt(descriptor(), SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate) != 0)
    return false;
  // 0: the host's default (net.ipv4.tcp_notsent_lowat, no limit unless set).
  const auto unsent = bytes_per_second == 0
                        ? 0
                        : std::min<std::uint64_t>(paced_unsent_bytes(bytes_per_second), INT_MAX);
  const int lowat = static_cast<int>(unsent);
  return ::setsockopt(descriptor(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat) == 0;
}

std::uint64_t tcp_connection::pacing() const {
  unsigned long rate = 0;
  socklen_t length = sizeof rate;
  if (::getsockopt(descriptor(), SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &length) != 0
      || rate == ~0UL)
    return 0;
  return rate;
}

std::uint64_t tcp_connection::unsent_limit() const {
  int lowat = 0;
  socklen_t length = sizeof lowat;
  if (::getsockopt(descriptor(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, &length) != 0)
    return 0;
  return static_cast<std::uint32_t>(lowat);
}

caf::expected<std::unique_ptr<connection>> connect_stream(const std::string& host,
                                                          std::uint16_t port,
                                                          std::chrono::milliseconds timeout,
                                                          bool same_host_shortcut) {
  const auto where = host + ":" + std::to_string(port);
  resolved addresses;
  resolve(addresses, host, port, false);
  if (!addresses.error.empty())
    return make_error(errc::peer_down, "cannot connect to " + where + ": " + addresses.error);
  std::string why = "no address";
  for (const auto* a = addresses.list; a != nullptr; a = a->ai_next) {
    if (same_host_shortcut)
      if (const int local = connect_local(a->ai_addr); local >= 0)
        return std::unique_ptr<connection>(
          new unix_connection(local, address_of(a->ai_addr) + " (local socket)"));
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = errno_text(errno);
      continue;
    }
    const int failed = connect_within(fd, *a, timeout);
    if (failed == 0)
      return connection_of(fd);
    why = failed == ETIMEDOUT ? "no answer within " + std::to_string(timeout.count()) + " ms"
                              : errno_text(failed);
    ::close(fd);
  }
  return make_error(errc::peer_down, "cannot connect to " + where + ": " + why);
}

caf::expected<std::unique_ptr<tcp_listener>>
tcp_listener::bind(const std::string& host, std::uint16_t port, bool same_host_twin) {
  const auto where = host + ":" + std::to_string(port);
  resolved addresses;
  resolve(addresses, host, port, true);
  if (!addresses.error.empty())
    return make_error(errc::bad_request, "cannot listen on " + where + ": " + addresses.error);
  std::string why = "no address";
  for (const auto* a = addresses.list; a != nullptr; a = a->ai_next) {
    const int fd = listen_on(*a);
    if (fd < 0) {
      why = errno_text(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
    const auto* b = reinterpret_cast<const sockaddr*>(&bound);
    const int local = same_host_twin ? listen_local(b) : -1;
    if (local >= 0)
      ::fcntl(local, F_SETFL, ::fcntl(local, F_GETFL) | O_NONBLOCK);
    const int stop = ::eventfd(0, EFD_CLOEXEC);
    if (stop < 0) {
      why = errno_text(errno);
      ::close(fd);
      if (local >= 0)
        ::close(local);
      break;
    }
    return std::unique_ptr<tcp_listener>(new tcp_listener(fd, local, stop, port_of(b)));
  }
  return make_error(errc::bad_request, "cannot listen on " + where + ": " + why);
}

tcp_listener::~tcp_listener() {
  ::close(fd_);
  if (local_fd_ >= 0)
    ::close(local_fd_);
  ::close(stop_fd_);
}

void tcp_listener::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_)
    return;
  stopped_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(stop_fd_, &one, sizeof one); // wakes accept()
}

bool tcp_listener::stopped_within(std::chrono::milliseconds wait) const {
  pollfd stop{stop_fd_, POLLIN, 0};
  return ::poll(&stop, 1, static_cast<int>(wait.count())) != 0; // an error: as if stopped
}

std::unique_ptr<connection> tcp_listener::accept() {
  for (;;) {
    pollfd ready[3] = {{stop_fd_, POLLIN, 0}, {fd_, POLLIN, 0}, {local_fd_, POLLIN, 0}};
    if (::poll(ready, local_fd_ >= 0 ? 3 : 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return nullptr;
    }
    if (ready[0].revents != 0)
      return nullptr; // stopped
    const int from = ready[1].revents != 0 ? fd_ : local_fd_;
    const int fd = ::accept4(from, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0)
      return connection_of(fd);
    switch (errno) {
    case EINTR:
    case EAGAIN:
    case ECONNABORTED:
    case EPROTO:
      continue; // a client that gave up before it was accepted
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
      // Out of descriptors or memory for now: the connection waits in the backlog, and the
      // listener for a while (the poll above would report it again at once), or for stop().
      if (stopped_within(retry_after))
        return nullptr;
      continue;
    default:
      return nullptr; // a socket that cannot accept any more
    }
  }
}

} // namespace troupe
