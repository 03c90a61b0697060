// What a member takes from its assignment and options before it spawns anything: its share of
// the host's link, how long a step's backward takes, how many computes the plan gives it, the
// CPUs each compute is bound to, its compute threads, and the order each paced channel to a server
// writes a step's pushes in. Pure functions of (plan, assignment, options), tested as such
// (tests/cluster/member/member_placement_test.cpp); member_assignment.cpp acts on what they say.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/frame_priority.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

/// The bytes per second of this node's share of its host's link (options.link_mbit): a
/// worker's channels to the servers share it, as do a server's channels to the workers; 0: no
/// limit.
std::uint64_t link_share(const member_options& options, const placement_plan& plan);

/// How long a step's backward takes, in seconds (options.backward; else two thirds of the
/// compute stand-in's step; else 0: unknown).
double backward_seconds(const member_options& options);

/// The computes the plan puts on node `node`.
std::size_t computes_on(const placement_plan& plan, std::uint32_t node);

/// Why no worker can adopt worker node `node` ("" if one can): it holds an actor other than
/// loaders, computes and its machine's aggregators (hierarchical, local_sync), named here.
std::string unadoptable_node(const placement_plan& plan, int node);

/// The compute ranks the plan puts on node `node`, ascending.
std::vector<int> ranks_on(const placement_plan& plan, int node);

/// Why the computes of `ranks` cannot run apart from the rest of worker node `node` ("" if they
/// can): a rank that is not one of the node's, or a node whose machine's aggregators sum its
/// ranks in process (hierarchical, local_sync). Empty `ranks` names the whole node: "".
std::string split_refusal(const placement_plan& plan, int node, const std::vector<int>& ranks);

/// "compute_2, compute_3".
std::string rank_names(const std::vector<int>& ranks);

/// The CPUs of a worker's computes where it holds place `slot` among the worker processes
/// sharing a host of `host_cpus` CPUs, each compute `threads` of them: slot s takes CPUs from
/// s x computes x threads on. Empty (nothing bound) without a slot (-1), or where the host has
/// too few CPUs: the share was oversubscribed already, and binding would pile threads up.
std::vector<std::vector<int>> slot_cpus(int slot, int threads, std::size_t computes,
                                        unsigned host_cpus);

/// "CPU 3" or "CPUs 0-3".
std::string cpus_text(int first, int last);

/// This node's compute threads: the scheduler's count when it was given one (> 0), else the
/// node's own, else its default. Two given counts must agree, since the weights a run ends with
/// depend on each compute's thread count: std::invalid_argument naming both otherwise.
int compute_threads(const member_options& options, std::uint32_t scheduler_threads);

/// The order one paced channel to a server writes a step's pushes in (frame_priority.hpp).
struct channel_push_order {
  std::vector<std::uint64_t> sequence; ///< ranks in write order; empty: as they come
  std::chrono::milliseconds patience{0};
  std::size_t late = 0;      ///< pushes written first: the last layers, during backward
  std::size_t held = 0;      ///< light last layers held for the end
  std::size_t sequenced = 0; ///< every push of the sequence
};

/// What a channel to server node `server` of `plan` writes in a fixed order: nothing unless the
/// channel is paced with priority and the plan has several workers (needs_fixed_push_order).
/// `backward_s` is backward_seconds(); the light last layers held for the end are what the
/// channel carries in half of backward's time (a forward is about half a backward's work), all of
/// them when backward is unknown.
channel_push_order push_order_of(const placement_plan& plan, const channel_options& channel,
                                 double backward_s, std::uint32_t server);

/// The bytes a paced channel carries in backward's time, and those it holds for the end.
std::int64_t backward_bytes(const channel_options& channel, double backward_s);
std::int64_t held_bytes(const channel_options& channel, double backward_s);

} // namespace troupe
