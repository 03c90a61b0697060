// --topology and --kv-store read into a topology_override (see topology_flags.hpp). The
// preset's argument is checked against the run's computes where the override is applied
// (graph/config/topology_config.cpp), as the statement's is; here only the text is read.
#include "apps/topology_flags.hpp"

#include <limits>
#include <utility>

#include "apps/integer_text.hpp"

namespace troupe {

namespace {

const char* topology_values = "bsp, async, ssp[:STALENESS], hierarchical[:MACHINES], "
                              "backup[:BACKUPS], local";
const char* kv_store_values = "local, device, dist_sync, dist_async, dist_device_sync";

// A value as read: the override, and whether it asks for one process.
struct reading {
  topology_override statement;
  bool one_process = false;
};

[[noreturn]] void refuse(const char* flag, const std::string& value, const char* known) {
  throw usage_error(std::string("--") + flag + ": unknown " + flag + " '" + value
                    + "' (known: " + known + ")");
}

reading read_topology(const std::string& value) {
  const auto colon = value.find(':');
  const std::string name = value.substr(0, colon);
  const std::pair<const char*, topology_kind> presets[] = {
    {"bsp", topology_kind::bsp},       {"async", topology_kind::async},
    {"ssp", topology_kind::ssp},       {"hierarchical", topology_kind::hierarchical},
    {"backup", topology_kind::backup}, {"local", topology_kind::bsp}};
  for (const auto& [word, kind] : presets) {
    if (name != word)
      continue;
    reading r;
    r.statement.preset = kind;
    r.statement.said = "--topology " + value;
    r.one_process = name == "local";
    if (colon == std::string::npos)
      return r;
    const bool takes_argument = kind == topology_kind::ssp || kind == topology_kind::backup
                                || kind == topology_kind::hierarchical;
    const auto argument = parse_integer(value.substr(colon + 1));
    // The argument's range is the statement's, checked where the override is applied.
    if (!takes_argument || !argument || *argument < 0
        || *argument > std::numeric_limits<int>::max())
      break;
    r.statement.argument = static_cast<int>(*argument);
    return r;
  }
  refuse("topology", value, topology_values);
}

reading read_kv_store(const std::string& value) {
  reading r;
  r.statement.said = "--kv-store " + value;
  if (value == "local" || value == "device")
    r.one_process = true;
  else if (value == "dist_async")
    r.statement.preset = topology_kind::async;
  else if (value != "dist_sync" && value != "dist_device_sync")
    refuse("kv-store", value, kv_store_values);
  return r;
}

} // namespace

void topology_flags::declare(flag_set& f) {
  f.add("topology", topology,
        "the topology preset, replacing a config's topology: bsp | async | ssp[:K] (staleness "
        "K, 2) | hierarchical[:M] (M machines, 2) | backup[:K] (K backup workers, 1) | local "
        "(bsp in one process); \"\": the config's, else bsp");
  f.add("kv-store", kv_store,
        "MXNet's kvstore word for a topology: local and device are bsp in one process, "
        "dist_sync and dist_device_sync are bsp, dist_async is async; \"\": --topology's");
  f.set_placeholder("topology", "PRESET");
  f.set_placeholder("kv-store", "TYPE");
}

std::optional<topology_override> topology_flags::override_of(const flag_set& f) const {
  std::optional<reading> by_topology, by_kv_store;
  if (f.given("topology") && !topology.empty())
    by_topology = read_topology(topology);
  if (f.given("kv-store") && !kv_store.empty())
    by_kv_store = read_kv_store(kv_store);
  if (by_topology && by_kv_store) {
    const auto& a = by_topology->statement;
    const auto& b = by_kv_store->statement;
    const bool same_argument = a.argument == b.argument || a.argument < 0 || b.argument < 0;
    if (a.preset != b.preset || !same_argument)
      throw usage_error("--topology " + topology + " and --kv-store " + kv_store
                        + " name different topologies (" + to_string(a.preset) + " and "
                        + to_string(b.preset) + "): give one");
  }
  if (by_topology)
    return by_topology->statement;
  if (by_kv_store)
    return by_kv_store->statement;
  return std::nullopt;
}

void topology_flags::check_processes(const flag_set& f, int server_nodes, int worker_nodes,
                                     bool cluster_process) const {
  std::string said;
  if (f.given("topology") && topology == "local")
    said = "--topology local";
  else if (f.given("kv-store") && (kv_store == "local" || kv_store == "device"))
    said = "--kv-store " + kv_store;
  if (said.empty() || (!cluster_process && server_nodes == 0 && worker_nodes == 0))
    return;
  throw usage_error(said + " trains in one process, and this is a cluster run ("
                    + std::to_string(server_nodes) + " server and " + std::to_string(worker_nodes)
                    + " worker processes): use --topology bsp (--kv-store dist_sync)");
}

} // namespace troupe
