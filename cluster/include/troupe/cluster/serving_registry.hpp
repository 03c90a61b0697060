// The interfaces that cross processes, and the one registry in which a node's channels find
// the actor a peer's frame is for. A channel decodes a frame, its interface's skeleton
// (cluster/remote/) names the (interface, index) it addresses, and the registry gives the
// actor of this node that serves it: a shard or the aggregator in front of it by shard index,
// a compute actor by worker, the scheduler's metrics actor, the node's control inbox, its
// part of a checkpoint, a server's shards as the scheduler changes them.
//
// Each interface has one handle type (served<I>::handle), so set and find are checked by the
// compiler: nothing is cast. Filled in when the node knows its part of the plan (a server
// joins before it is assigned shards) and shared by a listener and every channel it accepts.
//
// Thread-safety: every member is safe to call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <variant>

#include <caf/allowed_unsafe_message_type.hpp>

#include <troupe/actors/checkpoint_part_actor.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/node_control.hpp>

namespace troupe {

/// The protocols that cross processes (each a proxy/skeleton pair in cluster/remote/).
enum class remote_interface : std::uint8_t {
  push_target,       ///< push_target_actor, by the plan's shard index
  compute_driver,    ///< compute_actor (train, validate, end epoch), by worker
  metrics_sink,      ///< metrics_sink_actor: a worker's batch reports; index 0
  scheduler_control, ///< what members tell their scheduler (scheduler_inbox); index 0
  member_control,    ///< what a scheduler or peer tells a member (member_inbox); index 0
  checkpoint_part,   ///< a member's part of a cluster checkpoint (save, restore); index 0
  shard_backup,      ///< a backup shard another server's primary replicates to, by shard index
  run_control,       ///< troupe ctl's commands to the scheduler (run_control_actor); index 0
  shard_change,      ///< the scheduler's shard changes to a server (shard_change_actor); index 0
};
constexpr std::size_t remote_interfaces = 9;
/// "push target", "compute driver", "metrics sink", "scheduler control", "member control",
/// "checkpoint part", "shard backup", "run control", "shard change".
const char* to_string(remote_interface interface);

template <remote_interface I> struct served;
template <> struct served<remote_interface::push_target> { using handle = push_target_actor; };
template <> struct served<remote_interface::compute_driver> { using handle = compute_actor; };
template <> struct served<remote_interface::metrics_sink> { using handle = metrics_sink_actor; };
template <> struct served<remote_interface::scheduler_control> { using handle = scheduler_inbox; };
template <> struct served<remote_interface::member_control> { using handle = member_inbox; };
template <> struct served<remote_interface::checkpoint_part> {
  using handle = checkpoint_part_actor;
};
template <> struct served<remote_interface::shard_backup> { using handle = shard_backup_actor; };
template <> struct served<remote_interface::run_control> { using handle = run_control_actor; };
template <> struct served<remote_interface::shard_change> { using handle = shard_change_actor; };

/// The actors a node serves to its peers, keyed by (interface, index).
class serving_registry {
public:
  template <remote_interface I> void set(std::uint32_t index, typename served<I>::handle target) {
    std::lock_guard<std::mutex> lock(mutex_);
    targets_[{I, index}] =
      entry{std::in_place_index<static_cast<std::size_t>(I)>, std::move(target)};
  }
  /// The actor serving (I, index), or a null handle when this node holds none.
  template <remote_interface I> typename served<I>::handle find(std::uint32_t index) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = targets_.find({I, index});
    if (it == targets_.end())
      return {};
    return std::get<static_cast<std::size_t>(I)>(it->second);
  }
  /// Stops serving (I, index) (a node that gave those actors up: a worker ceding computes).
  template <remote_interface I> void erase(std::uint32_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    targets_.erase({I, index});
  }
  /// The proxy through which this node's computes report their batches (a worker's metrics
  /// sink proxy): the compute driver's skeleton flushes it before it writes a compute's
  /// answer, so a phase's batch reports leave before its end. Null: none.
  void set_report_path(metrics_sink_actor reports) {
    std::lock_guard<std::mutex> lock(mutex_);
    reports_ = std::move(reports);
  }
  metrics_sink_actor report_path() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reports_;
  }
  /// Forgets every actor (a node that ends drops its handles: a registry shared with channels
  /// would otherwise keep terminated actors, and the channels they hold, alive).
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    targets_.clear();
    reports_ = metrics_sink_actor{};
  }

private:
  // In remote_interface order.
  using entry = std::variant<push_target_actor, compute_actor, metrics_sink_actor, scheduler_inbox,
                             member_inbox, checkpoint_part_actor, shard_backup_actor,
                             run_control_actor, shard_change_actor>;
  mutable std::mutex mutex_;
  std::map<std::pair<remote_interface, std::uint32_t>, entry> targets_;
  metrics_sink_actor reports_;
};

} // namespace troupe
