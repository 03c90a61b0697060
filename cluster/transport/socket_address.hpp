// The parts of an IPv4/IPv6 socket address as text and number, for messages ("10.0.0.2:7000")
// and for the names of Unix sockets (unix_connection.hpp). Private to the cluster layer.
#pragma once

#include <cstdint>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace troupe {

/// The address's host in numeric form ("127.0.0.1", "::1"); "?" for another family.
inline std::string numeric_host(const sockaddr* address) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, host,
                sizeof host);
  else if (address->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, host,
                sizeof host);
  return host;
}

/// The address's port; 0 for another family.
inline std::uint16_t port_of(const sockaddr* address) {
  if (address->sa_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in*>(address)->sin_port);
  if (address->sa_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(address)->sin6_port);
  return 0;
}

/// "host:port".
inline std::string address_of(const sockaddr* address) {
  return numeric_host(address) + ":" + std::to_string(port_of(address));
}

} // namespace troupe
