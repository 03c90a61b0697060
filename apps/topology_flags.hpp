// `--topology` and `--kv-store`: the topology presets (docs/dsl.md) named on the command line,
// the second in MXNet's kvstore words. Either becomes a typed override of the config's
// `topology` statement (config_overrides::topology), so a flag replaces a config's topology as
// any flag replaces its key, and `troupe check` prints the routes it expands to.
//
//   --topology bsp | async | ssp[:K] | hierarchical[:M] | backup[:K] | local
//   --kv-store local | device     bsp in one process (MXNet's one-machine stores)
//              dist_sync          bsp
//              dist_device_sync   bsp (the device part is --devices)
//              dist_async         async
//
// `local` is bsp whose run must be one process: a cluster run given it is refused.
#pragma once

#include <optional>
#include <string>

#include "apps/flags.hpp"
#include <troupe/graph/config/job_config.hpp>

namespace troupe {

struct topology_flags {
  std::string topology, kv_store;

  void declare(flag_set& f);
  /// The statement the given flags stand for; none when neither was given. usage_error naming
  /// the flag and the known values for a value it does not know, and naming both flags when
  /// they say different topologies.
  std::optional<topology_override> override_of(const flag_set& f) const;
  /// usage_error when a given flag asks for one process (local, device) and the run has
  /// `server_nodes` / `worker_nodes` processes (or is a `troupe node`: `cluster_process`).
  void check_processes(const flag_set& f, int server_nodes, int worker_nodes,
                       bool cluster_process) const;
};

} // namespace troupe
