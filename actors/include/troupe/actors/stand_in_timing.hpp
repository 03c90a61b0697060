// How a compute stand-in (compute_stand_in, compute_actor.hpp) spreads a step over its push
// groups: a group's share of the step is its layers' share of the model's forward work
// (model::forward_work_by_slot), as on a GPU, where a layer takes time by its arithmetic or its
// memory traffic, not one equal tick per group. A key that is a slice of a parameter carries its
// slice's part of the slot's work. Forward and backward use the same shares: a layer's backward
// does about twice its forward's work, so it is the same fraction of its phase.
//
// Groups are indexed as compute_wiring lists them, in the order backward completes them; the
// forward runs them in reverse (segment k is group groups - 1 - k).
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstddef>
#include <vector>

#include <caf/timespan.hpp>

#include <troupe/graph/config/key_assignment.hpp>

namespace troupe {

class stand_in_timing {
public:
  stand_in_timing() = default;
  /// `slot_work` per parameter slot; `route_keys` the keys of each route (shard_route::keys);
  /// `groups` the step's pushes (push_group::shard indexes route_keys). Work that sums to zero
  /// gives every group an equal share. Throws std::invalid_argument naming the group for a
  /// route or key that does not exist, a key of a slot without work entry, or work that is
  /// negative or not finite.
  stand_in_timing(const std::vector<double>& slot_work,
                  const std::vector<std::vector<key_slice>>& route_keys,
                  const std::vector<push_group>& groups);

  std::size_t groups() const { return shares_.size(); }
  /// Group g's fraction of the step's work; the fractions sum to 1.
  double share(std::size_t g) const { return shares_.at(g); }
  /// When forward segment k ends, from the forward's start, for a forward of `forward`: the last
  /// segment ends exactly at `forward`.
  caf::timespan forward_end(caf::timespan forward, std::size_t k) const;
  /// When group g is final, from backward's start, for a backward of `backward`: the last group
  /// exactly at `backward`.
  caf::timespan backward_due(caf::timespan backward, std::size_t g) const;

private:
  std::vector<double> shares_;
  std::vector<double> backward_done_; ///< sum of shares of groups 0..g
  std::vector<double> forward_done_;  ///< sum of shares of segments 0..k
};

} // namespace troupe
