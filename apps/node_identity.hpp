// Where one `troupe node` process stands in its cluster: its role, the scheduler's address and
// the node counts, resolved from the command line and from the environment that cluster
// launchers set (the ps-lite/dmlc tracker, Open MPI or PMI, Slurm).
//
// Resolution is a pure function of the flags and an environment map, so every launcher's
// variables can be tested without setting the real environment; only current_environment()
// reads ::environ, and only apps/ calls it. Flags win, but a flag that contradicts what the
// launcher says is an error naming both, as is any malformed value: a cluster process that
// guesses its place wrongly hangs or joins the wrong job, far from the mistake. All functions
// are stateless and safe to call from any thread (current_environment() as safe as getenv).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <troupe/graph/placement.hpp>

namespace troupe {

/// What the user gave on the command line (empty or -1: not given), plus the cluster counts of
/// the config, if any (-1 or 0, the config's "one process": none). Flags take precedence over
/// the config; counts a launcher states (DMLC_NUM_*) over both, a flag having to agree.
struct node_flags {
  std::string role;      ///< "scheduler" | "server" | "worker"
  std::string scheduler; ///< "HOST:PORT", IPv6 as "[::1]:9000"; port 0 (any) for the scheduler only
  int server_nodes = -1, worker_nodes = -1;
  int config_server_nodes = -1, config_worker_nodes = -1; ///< cluster.server_nodes/worker_nodes
};

/// The resolved place of this process.
struct node_identity {
  node_kind role = node_kind::process;      ///< scheduler, server or worker once resolved
  std::string scheduler_host;               ///< without brackets for IPv6
  std::uint16_t scheduler_port = 0;         ///< 0 only for a scheduler asked to pick any free port
  int server_nodes = -1, worker_nodes = -1; ///< -1 when neither flags, launcher nor config said
  int rank = -1;      ///< the launcher's rank when it gave one (MPI/Slurm), else -1
  std::string source; ///< "flags", "dmlc", "mpi" or "slurm": the launcher consulted, if any
};

/// Environment variables by name.
using environment = std::map<std::string, std::string>;

/// This process's environment, read from ::environ.
environment current_environment();

/// Resolves this process's place from flags and environment. Without --role, the first launcher
/// family present decides: DMLC_ROLE, then an MPI/PMI rank (OMPI_COMM_WORLD_RANK, PMI_RANK,
/// PMIX_RANK), then SLURM_PROCID. Launcher ranks map as 0 = scheduler, 1..S = servers,
/// S+1..S+W = workers. Variables set to the empty string count as unset. Throws usage_error
/// with one line naming the flags and variables involved on any missing, malformed or
/// contradicting value.
node_identity resolve_node_identity(const node_flags& flags, const environment& env);

/// Expands a Slurm host list such as "node[01-03,07],gpu5,rack[1-2]-n[3,5]" in order: ranges
/// keep the zero-padded width of their first number, several bracket groups in one name expand
/// as a cartesian product (leftmost slowest). Throws usage_error on malformed lists.
std::vector<std::string> expand_host_list(const std::string& list);

} // namespace troupe
