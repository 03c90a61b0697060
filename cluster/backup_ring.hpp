// The ring shards with a backup (shard_backups = 1) are kept around, as the scheduler
// (scheduler_promotion.cpp) and the servers (member_backups.cpp) both see it: the server
// nodes of the plan in plan order, each holding the backups of the one before it. Private to
// cluster/.
//
// Thread-safety: plain functions of the plan.
#pragma once

#include <string>

#include <troupe/graph/placement.hpp>

namespace troupe {

/// The server node after server node `node` in the ring: the one holding `node`'s backups.
/// -1 when the plan has fewer than 2 server nodes or `node` is none of them.
int next_server(const placement_plan& plan, int node);

/// The server node before `node`: the one whose backups `node` holds. -1 as for next_server.
int previous_server(const placement_plan& plan, int node);

/// "shard_0, shard_1" (or "no shard"): the shards plan node `node` holds, for log lines.
std::string shard_names(const placement_plan& plan, int node);

} // namespace troupe
