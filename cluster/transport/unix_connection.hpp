// Same-host connections without TCP. A listener that offers it also listens on a Unix stream
// socket in the abstract namespace, named after the TCP address it is bound to; a connecting
// node whose target address belongs to its own host takes that socket instead of TCP. Same
// frames, same admission, same heartbeats: only the byte transport changes. Why: on loopback,
// TCP spends most of a transfer's CPU in the protocol (segmenting, acknowledging, softirq
// delivery), not in the copy; a Unix socket with wide buffers moves a 437 KB frame each way for
// less than a third of that CPU (docs/notes/benchmarks-notebook.md measured it), and on a shared
// machine that CPU is taken from the computes.
//
// Abstract names live in the network namespace, as TCP ports do: a node in another namespace
// (an emulated host) cannot see them and connects over TCP, as a node on another host does.
//
// unix_connection is such a socket as a connection (connection.hpp): a stream connection with
// wide buffers, its peer known by its process; it has no congestion control and no pacing.
//
// Private to the cluster layer.
#pragma once

#include <string>

#include <sys/socket.h>

#include "cluster/transport/stream_connection.hpp"

namespace troupe {

class unix_connection : public stream_connection {
public:
  /// Takes connected Unix stream socket `fd` and widens its buffers; `peer` names it in
  /// messages (empty: the peer's process, local_peer_of).
  explicit unix_connection(int fd, std::string peer = {});
  bool local() const override { return true; }
};

/// The abstract socket name a listener bound to `address` (AF_INET/AF_INET6, port included)
/// offers: "troupe/<numeric address>/<port>", without the leading NUL.
std::string local_socket_name(const sockaddr* address);

/// Listens on the local socket of `bound` (the TCP listener's own address): the descriptor, or
/// -1 when the name is taken or Unix sockets are unavailable (the listener then offers TCP only).
int listen_local(const sockaddr* bound);

/// Whether `address` is one of this host's addresses (in this network namespace): loopback, or
/// an address a socket can be bound to here.
bool is_local_address(const sockaddr* address);

/// Connects to the local socket that a listener on `target` offers (its own name, else that of
/// a wildcard listener on the same port) when `target` is this host's: the connected
/// descriptor (for a unix_connection), or -1 (not this host's address, or no such listener:
/// the caller uses TCP).
int connect_local(const sockaddr* target);

/// Widens a Unix socket's buffers so that a frame of a few MiB goes in one write and one wakeup
/// of the reader (the defaults hold about 200 KB).
void widen_local_buffers(int fd);

/// "pid N of this host (local socket)" for a connected Unix socket, from the peer's credentials.
std::string local_peer_of(int fd);

} // namespace troupe
