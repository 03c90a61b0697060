// Which TCP congestion control a node's channels between hosts use (`cluster.tcp_congestion`,
// `troupe node --tcp-congestion`). Same-host Unix sockets have none.
//
// Why Troupe chooses rather than taking the host's default: a parameter server's channels carry
// bulk data both ways at once, so each direction's ACKs queue behind the other direction's data
// at the sender's bottleneck. bbr (v1) drops every connection to a window of 4 packets for
// 200 ms about every 10 s (PROBE_RTT) to measure the round trip; with its ACKs queued behind
// pushes, an answer stream then carries almost nothing for 90-170 ms, and a synchronous step
// waits for it. Measured on emulated 1 Gbit hosts (docs/benchmarks.md, "Seventh look"): one
// step in about ten 80-290 ms longer under bbr, none under cubic, which has no such phase.
//
// Settings: "auto" (the default) uses cubic where this process may set it (root, or cubic in
// net.ipv4.tcp_allowed_congestion_control) and the host's default otherwise; "system" always
// the host's default; any other name that algorithm, refused at start where this process may
// not set it.
#pragma once

#include <string>

namespace troupe {

struct tcp_congestion_choice {
  std::string algorithm; ///< what every TCP channel sets; empty: the host's default, untouched
  std::string note;      ///< "auto" without cubic: why (for the node's log); else empty
};

/// Resolves a setting as above, by trying it on a socket of this process. Throws
/// std::invalid_argument naming the setting and what this host offers when an explicit name
/// cannot be set (unknown, or not allowed to this user), or when the name is malformed.
tcp_congestion_choice choose_tcp_congestion(const std::string& setting);

/// Sets `algorithm` on TCP socket `fd`; false (errno says why) when the kernel refuses.
bool set_tcp_congestion(int fd, const std::string& algorithm);

/// The algorithm socket `fd` runs, or empty when it cannot be read (not TCP).
std::string tcp_congestion_of(int fd);

} // namespace troupe
