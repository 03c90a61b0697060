// See unix_connection.hpp.
#include "cluster/transport/unix_connection.hpp"

#include "cluster/transport/socket_address.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <utility>

namespace troupe {

namespace {

// An abstract address: a leading NUL, then the name (no file to create or remove).
socklen_t abstract_address(const std::string& name, sockaddr_un& out) {
  out = sockaddr_un{};
  out.sun_family = AF_UNIX;
  const auto length = std::min(name.size(), sizeof out.sun_path - 1);
  std::memcpy(out.sun_path + 1, name.data(), length);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
}

bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24) == 127;
  if (address->sa_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return false;
}

int connect_to(const std::string& name) {
  sockaddr_un address;
  const auto length = abstract_address(name, address);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  // A listening Unix socket accepts at once or refuses at once (ECONNREFUSED: no such name;
  // EAGAIN: its backlog is full): nothing here waits on the network.
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

} // namespace

unix_connection::unix_connection(int fd, std::string peer)
    : stream_connection(fd, peer.empty() ? local_peer_of(fd) : std::move(peer)) {
  widen_local_buffers(fd);
}

std::string local_socket_name(const sockaddr* address) {
  return "troupe/" + numeric_host(address) + "/" + std::to_string(port_of(address));
}

int listen_local(const sockaddr* bound) {
  if (bound->sa_family != AF_INET && bound->sa_family != AF_INET6)
    return -1;
  sockaddr_un address;
  const auto length = abstract_address(local_socket_name(bound), address);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0
      || ::listen(fd, SOMAXCONN) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool is_local_address(const sockaddr* address) {
  if (address->sa_family != AF_INET && address->sa_family != AF_INET6)
    return false;
  if (is_loopback(address))
    return true;
  // Binding succeeds only for an address of this host (port 0: nothing is taken).
  const int fd = ::socket(address->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  sockaddr_storage probe{};
  const socklen_t length =
    address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  std::memcpy(&probe, address, length);
  if (address->sa_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(&probe)->sin6_port = 0;
  else
    reinterpret_cast<sockaddr_in*>(&probe)->sin_port = 0;
  const bool local = ::bind(fd, reinterpret_cast<const sockaddr*>(&probe), length) == 0;
  ::close(fd);
  return local;
}

int connect_local(const sockaddr* target) {
  if (!is_local_address(target))
    return -1;
  if (const int fd = connect_to(local_socket_name(target)); fd >= 0)
    return fd;
  // A listener bound to every address of the host (0.0.0.0 or ::) takes this one too.
  const auto port = std::to_string(port_of(target));
  if (const int fd = connect_to("troupe/0.0.0.0/" + port); fd >= 0)
    return fd;
  return connect_to("troupe/::/" + port);
}

void widen_local_buffers(int fd) {
  // The kernel caps the request at net.core.wmem_max / rmem_max; any size it grants works.
  const int bytes = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

std::string local_peer_of(int fd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0)
    return "a process of this host (local socket)";
  return "pid " + std::to_string(credentials.pid) + " of this host (local socket)";
}

} // namespace troupe
