// Proxies: actors of this process that stand for an actor on another node. Each is a real
// typed_actor of the interface it stands for, so the compiler rejects a proxy that lacks one
// of its messages, and the actors beside it (a compute pushing to a shard, the coordinator
// driving computes, computes reporting batches) cannot tell that the peer is remote. A proxy
// turns each message into its interface's wire message (cluster/remote/interface_codec.hpp)
// and hands it to the channel that reaches the peer (channel_actor.hpp), with the deadline of
// the request; the peer's channel runs the interface's skeleton, which asks the same actor.
//
//   spawn_push_target_proxy:    push_target_actor  (push, pull)                 -> shard `shard`
//   spawn_compute_proxy:        compute_actor      (train, validate, end epoch) -> compute `worker`
//   spawn_metrics_sink_proxy:   metrics_sink_actor (batch reports, flush)       -> the scheduler's
//                                                                                  metrics actor
//   spawn_scheduler_control_proxy: scheduler_control_actor (join, ready, traffic, goodbye)
//                                                                               -> the scheduler
//   spawn_member_control_proxy: member_control_actor (assignment, traffic query, goodbye)
//                                                                               -> a member node
//   spawn_checkpoint_part_proxy: checkpoint_part_actor (save, restore)         -> a member's part
//                                                                                  of a checkpoint
//   spawn_shard_backup_proxy:   shard_backup_actor (replicate)                  -> a backup shard
//   spawn_run_control_proxy:    run_control_actor (command)                     -> the scheduler,
//                                                                                  for troupe ctl
// A node keeps one node-control proxy per channel and sends every node-level message through
// it: one sender, so the peer reads them in the order they were said (an assignment before
// the goodbye that follows it). A goodbye is the channel's own end (channel_actor.hpp).
// Each watches its channel: once the channel has ended, every waiting request and every later
// one fails at once with the channel's reason.
//
// Deadlines: a request carries the deadline its originator set (gradient_push::due, the pull's
// and the phase's deadline argument); the proxy hands it to the channel, which fails the
// request at that deadline (the proxy has no clock of its own), and the peer's skeleton asks
// its target with the time the frame said was left.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include <caf/actor_system.hpp>

#include <troupe/actors/checkpoint_part_actor.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/channel_actor.hpp>
#include <troupe/cluster/node_control.hpp>

namespace troupe {

/// Shard `shard` of the peer behind `channel` (or the aggregator in front of it there).
push_target_actor spawn_push_target_proxy(caf::actor_system& system, channel_actor channel,
                                          std::uint32_t shard);

/// The compute of rank `rank` on the peer behind `channel`.
compute_actor spawn_compute_proxy(caf::actor_system& system, channel_actor channel,
                                  std::uint32_t rank);

/// The metrics actor of the peer behind `channel` (a worker's computes report to their
/// scheduler through it). `position` (may be null) follows the batches reported, so a worker
/// can say where it was when interrupted. Phase reports have no frame: the coordinator lives
/// beside the real metrics actor; one that arrives here is logged and dropped.
metrics_sink_actor spawn_metrics_sink_proxy(caf::actor_system& system, channel_actor channel,
                                            std::shared_ptr<run_position> position);

/// The scheduler behind `channel`, as its server or worker speaks to it. The proxy ends with
/// its channel (what is said after that has nobody to hear it).
scheduler_control_actor spawn_scheduler_control_proxy(caf::actor_system& system,
                                                      channel_actor channel);

/// The part of a cluster checkpoint that the server or worker behind `channel` saves and
/// restores (checkpoint_part_actor.hpp).
checkpoint_part_actor spawn_checkpoint_part_proxy(caf::actor_system& system, channel_actor channel);

/// The backup of shard `shard` held by the server behind `channel` (shard_backups = 1): what the
/// primary shard replicates each applied push to (param_shard_actor.hpp).
shard_backup_actor spawn_shard_backup_proxy(caf::actor_system& system, channel_actor channel,
                                            std::uint32_t shard);

/// The scheduler behind `channel`, as troupe ctl asks it to run a verb.
run_control_actor spawn_run_control_proxy(caf::actor_system& system, channel_actor channel);

/// The shards of the server behind `channel`, as the scheduler changes their optimizer between
/// epochs (troupe ctl set). The proxy ends with its channel.
shard_change_actor spawn_shard_change_proxy(caf::actor_system& system, channel_actor channel);

/// The server or worker behind `channel`, as the scheduler (or a peer member) speaks to it.
member_control_actor spawn_member_control_proxy(caf::actor_system& system, channel_actor channel);

} // namespace troupe
