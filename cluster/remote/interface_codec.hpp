// One codec table per interface that crosses processes: which wire kinds belong to it, as a
// request (answered by the peer), an answer (to one of its requests) or a one-way message, and
// its skeleton, the function that serves an incoming request or one-way inside the channel
// (no actor of its own: the data path gains no hop). The channel (cluster/channel.cpp) knows
// no interface; it consults these tables to accept what a proxy gives it and to hand what
// arrives to the right skeleton. The tables live beside their proxy and skeleton:
//   push_target_remote.cpp    push, pull -> weights                 (push_target_actor)
//   compute_driver_remote.cpp control(train, validate) -> report,   (compute_actor)
//                             control(end epoch) one-way
//   metrics_sink_remote.cpp   batch report one-way                  (metrics_sink_actor)
//   node_control_remote.cpp   join, ready, traffic one-way          (scheduler_inbox)
//                             assignment, traffic query, adopt,     (member_inbox)
//                             promote, release, cede, drain one-way
//   checkpoint_part_remote.cpp checkpoint(save) -> checkpoint done,  (checkpoint_part_actor)
//                             checkpoint(restore) -> checkpoint done
//   shard_backup_remote.cpp   replicate -> replicated               (shard_backup_actor)
//   run_control_remote.cpp    command -> command result             (run_control_actor)
// Hello, proof, heartbeat, shutdown and failure belong to the channel itself.
//
// Thread-safety: constant tables.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include <troupe/cluster/serving_registry.hpp>
#include <troupe/cluster/wire_messages.hpp>

#include "cluster/channel_internals.hpp"

namespace troupe {

/// The variant index of message type T (the kind a frame of it has).
template <class T, std::size_t I = 0> constexpr std::size_t kind_of() {
  if constexpr (std::is_same_v<std::variant_alternative_t<I, wire_message>, T>)
    return I;
  else
    return kind_of<T, I + 1>();
}

enum class kind_role : std::uint8_t { request, answer, one_way };

struct kind_entry {
  std::size_t kind;
  kind_role role;
};

struct interface_codec {
  remote_interface interface;
  std::vector<kind_entry> kinds;
  /// The skeleton: serves `message` (a request or one-way of this interface) from the peer.
  void (*serve)(channel_pointer self, wire_message& message);
  /// What a request of this interface waits for, for errors ("shard 3", "compute 1").
  std::string (*target_of)(const wire_message& request);
  bool takes(std::size_t kind, kind_role role) const;
};

const interface_codec& push_target_codec();
const interface_codec& compute_driver_codec();
const interface_codec& metrics_sink_codec();
const interface_codec& scheduler_control_codec();
const interface_codec& member_control_codec();
const interface_codec& checkpoint_part_codec();
const interface_codec& shard_backup_codec();
const interface_codec& run_control_codec();
const interface_codec& shard_change_codec();

/// The interface whose table lists `kind` as `role`, or null: none takes it.
const interface_codec* codec_taking(std::size_t kind, kind_role role);
/// The table of `interface`.
const interface_codec& codec_of(remote_interface interface);

} // namespace troupe
