// What the scheduler and the member nodes (cluster_node.hpp) share: channel options from node
// options, one-line logging, and the wording of a lost peer.
#pragma once

#include <string>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>

#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/node_control.hpp>

namespace troupe {

using join_deadline_atom = caf::atom_constant<caf::atom("joindead")>;
using scheduler_channel_atom = caf::atom_constant<caf::atom("schedchan")>;
using grace_over_atom = caf::atom_constant<caf::atom("graceover")>;

/// Options for a channel of this node: its role, name, secret, timeouts, logging, and the
/// node's traffic registry.
channel_options channel_options_of(const node_options& options, node_kind role,
                                   const std::string& name,
                                   std::shared_ptr<traffic_registry> traffic);
/// A member's: its role, and the position its computes are at.
channel_options channel_options_of(const member_options& options, const std::string& name,
                                   std::shared_ptr<traffic_registry> traffic);

/// options.log, or a line on standard error.
void log_node_line(const node_options& options, const std::string& line);

/// The address peers reach the node at.
std::string advertised_host(const member_options& options);

/// The host of "HOST:PORT" (as a socket's peer is written; an IPv6 host unbracketed).
std::string host_of_address(const std::string& address);

/// Whether peers on other hosts cannot reach `host`: a loopback address (127.0.0.0/8, ::1,
/// localhost), or a wildcard one (0.0.0.0, ::, empty), which names no host at all.
bool is_loopback_host(const std::string& host);
bool is_wildcard_host(const std::string& host);

/// The wall-clock time now as HH:MM:SS.mmm (UTC), for loss lines.
std::string clock_time_now();

/// Why a channel or actor ended, in words: a troupe error's text, else CAF's rendering.
std::string reason_text(caf::actor_system& system, const caf::error& reason);

} // namespace troupe
