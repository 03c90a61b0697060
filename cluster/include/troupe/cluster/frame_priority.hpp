// Which frame a channel writes next when several wait (priority). Backward
// makes gradients last layer first, and pushes leave as their groups complete; but the next
// forward needs the first layers' weights first. So a channel with priority on writes, of the
// frames waiting for its writer, control frames first (heartbeats, hellos, failures, joins:
// small, and a heartbeat stuck behind a step's tensors makes a live peer look lost), then
// tensor frames (pushes, the weights that answer them, pushes passed to backups) by the forward
// position of their first key: the lowest parameter slot, then the lowest slice offset. A frame
// already being written is never cut short: big parameters are sliced (cluster.slice_bytes), so a
// frame that jumps the queue waits at most one slice.
//
// A frame's rank is this node's business only: nothing of it travels, and both ends plan the
// same keys, so a worker's pushes and the server's answers follow the same order.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include <troupe/cluster/wire_messages.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

/// Every key's place in forward order: `position[shard][key]` (the shard's own key index) is
/// the key's index when all the plan's keys are sorted by (parameter slot, slice offset).
struct forward_order {
  std::vector<std::vector<std::uint64_t>> position;
};

/// The forward order of `plan`'s keys.
forward_order forward_order_of(const placement_plan& plan);

/// Ranks of frames: a writer with priority on writes the lowest first, equal ranks in the
/// order they were queued.
constexpr std::uint64_t control_rank = 0;
/// A tensor frame of keys `order` does not know (a channel without the plan's order).
constexpr std::uint64_t unranked = std::numeric_limits<std::uint64_t>::max();

/// control_rank for a frame that carries no tensor; for a push, a replicate or a weights
/// frame, 1 + the forward position of its first key in forward order (unranked when `order`
/// lacks its shard or a key).
std::uint64_t frame_rank(const wire_message& message, const forward_order& order);

// A fixed order for a step's pushes (a paced channel: cluster/frame_socket.hpp, set_sequence).
// With several workers a server answers a key only once every worker's push of it has come;
// if each worker's channel picks whichever push backward has finished when it is free, the
// workers' orders differ with their timing, and every answer waits for the later of them. So a
// paced channel writes its pushes in one order that depends on the plan only, the same on every
// worker: first the last layers whose bytes the channel carries while backward runs (backward
// makes them first), then the rest first layers first (the next forward needs them first).
// Except the very last layers when their forward costs next to nothing (a classifier's fully
// connected layer): backward makes them first, but they go last. The next forward can only end
// once the last answer has come and the layers after that answer's have run; with these last,
// the layers before them (the backward part's, tens of ms of forward) run while they travel.
// Only as many of their bytes as the channel carries in the forward's time are held, though: a
// VGG-16's fully connected layers are 0.8% of its forward work and 89% of its bytes, and held
// whole at 10 Gbit they left the link idle through backward, then took 400 ms after it
// (docs/benchmarks.md, "Sixteenth look"); the rest go with the others.

// With one worker node there is no other worker to keep in step: a server answers each push
// as it comes. A fixed order then only costs: its backward part runs the last layers' pushes
// down to the first, so the first layers' pushes, which backward makes last and the next
// forward needs first, wait behind whatever of that part is left when backward ends. Writing
// each push as it comes, lowest rank first, sends them as soon as they are made (ResNet-50,
// one worker at 10 Gbit and 100 ms: the next forward waited 10.4 ms a step for its first
// layers in fixed order, 7.4 ms by rank; docs/benchmarks.md, "Eighteenth look").

/// Whether a worker's paced channels write a fixed push order: only where the plan has more than
/// one worker node, so a server waits for the pushes of several.
bool needs_fixed_push_order(const placement_plan& plan);

/// The most of the model's forward work the pushes held for a step's end may carry together.
constexpr double light_forward_share = 0.01;

/// One push a channel carries per step: its rank (frame_rank), its values' bytes, and whether it
/// is one of the model's light last layers (light_ranks).
struct ranked_push {
  std::uint64_t rank = 0;
  std::int64_t bytes = 0;
  bool light = false;
};

/// The ranks of the plan's light last layers, over all its push groups: the highest ranks whose
/// keys together carry at most light_forward_share of the model's forward work (each key its
/// slice's part of its parameter's forward_work), ascending. Empty where the plan does not know
/// the work (given parameters).
std::vector<std::uint64_t> light_ranks(const placement_plan& plan, const forward_order& order);

/// The push groups of `plan` whose shards live on node `node` (what a worker's channel to that
/// server carries per step), ranked by `order`, in ascending rank, the light ones marked. Empty
/// for a node without shards.
std::vector<ranked_push> pushes_to_node(const placement_plan& plan, const forward_order& order,
                                        int node);

/// How many of `pushes` (in ascending rank) a fixed order holds for the end: the highest light
/// ones while their bytes together fit in `held_bytes`.
std::size_t held_pushes(const std::vector<ranked_push>& pushes, std::int64_t held_bytes);

/// The ranks of `pushes` in the order a paced channel writes them. Held for the end: the highest
/// light pushes while their bytes together fit in `held_bytes` (all light ones by default).
/// Of the others: from the highest rank down until their bytes reach `backward_bytes` (none
/// when 0), then the rest in ascending rank; then the held ones in ascending rank. Throws
/// std::invalid_argument for a rank listed twice or unranked, negative bytes, or a light push
/// below one that is not.
std::vector<std::uint64_t>
fixed_push_order(std::vector<ranked_push> pushes, std::int64_t backward_bytes,
                 std::int64_t held_bytes = std::numeric_limits<std::int64_t>::max());

} // namespace troupe
