// Resolution of a `troupe node`'s role, scheduler address and node counts (node_identity.hpp).
//
// Each launcher family has one function that reads only its own variables and checks the flags
// against them; resolve_node_identity validates the flags, picks the family and applies the one
// check that needs the final role (port 0). Numbers are read by parse_integer (integer_text.hpp),
// not strtol, which accepts signs, spaces and trailing text that a mistyped variable would slip
// through.
#include "apps/node_identity.hpp"

#include <algorithm>
#include <optional>
#include <unistd.h>

#include "apps/flags.hpp"
#include "apps/integer_text.hpp"
#include <troupe/cluster/launcher_rank.hpp>

namespace troupe {

namespace {

constexpr int max_nodes = 1024;            // as the config's cluster.server_nodes/worker_nodes
constexpr int max_launcher_size = 1 << 20; // bounds ranks and sizes well inside int
constexpr std::size_t max_hosts = 1 << 20; // a host list expanding further is a typo
constexpr std::uint16_t slurm_default_port = 9091;

const char* const no_role =
  "troupe node needs --role scheduler|server|worker (or DMLC_ROLE, an MPI or Slurm rank)";

// An environment value, or nullptr when unset or empty (`VAR= cmd` is how shells unset).
const std::string* lookup(const environment& env, const std::string& name) {
  auto i = env.find(name);
  return i == env.end() || i->second.empty() ? nullptr : &i->second;
}

// `text` as a whole number in [min, max] (min >= 0: no sign), nothing else; `what` names it in
// the error.
std::int64_t parse_whole(const std::string& what, const std::string& text, std::int64_t min,
                         std::int64_t max) {
  const auto v = text.empty() || text[0] == '-' ? std::nullopt : parse_integer(text);
  if (!v || *v < min || *v > max)
    throw usage_error(what + " is not a whole number between " + std::to_string(min) + " and "
                      + std::to_string(max));
  return *v;
}

int env_number(const environment& env, const std::string& name, int min, int max) {
  const std::string& text = *lookup(env, name);
  return static_cast<int>(parse_whole(name + "=" + text, text, min, max));
}

std::string plural(int n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// A cluster role's name (what --role and DMLC_ROLE take): the plan's node kinds but `process`.
std::optional<node_kind> cluster_role(const std::string& text) {
  auto kind = node_kind_named(text);
  return kind && *kind != node_kind::process ? kind : std::nullopt;
}

bool is_role(const std::string& role) {
  return cluster_role(role).has_value();
}

struct address {
  std::string host;
  std::uint16_t port = 0;
  bool operator!=(const address& o) const { return host != o.host || port != o.port; }
};

// "HOST:PORT" or "[IPV6]:PORT", port in [min_port, 65535]; `what` names the value in errors.
address parse_address(const std::string& what, const std::string& text, int min_port) {
  auto bad = [&](const std::string& why) { return usage_error(what + ": " + why); };
  address a;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || text.compare(close + 1, 1, ":") != 0)
      throw bad("expected [IPV6]:PORT");
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos)
      throw bad("expected HOST:PORT");
    a.host = text.substr(0, colon);
    if (a.host.find(':') != std::string::npos)
      throw bad("an IPv6 host goes in brackets, as [::1]:9000");
    port = text.substr(colon + 1);
  }
  if (a.host.empty())
    throw bad("the host is empty");
  a.port = static_cast<std::uint16_t>(
    parse_whole(what + ": the port '" + port + "'", port, min_port, 65535));
  return a;
}

// Validates what the flags say on their own; returns the parsed --scheduler, if given.
std::optional<address> check_flags(const node_flags& f) {
  if (!f.role.empty() && !is_role(f.role))
    throw usage_error("--role must be scheduler, server or worker, got '" + f.role + "'");
  if (f.server_nodes != -1)
    check_range("server-nodes", f.server_nodes, 1, max_nodes);
  if (f.worker_nodes != -1)
    check_range("worker-nodes", f.worker_nodes, 1, max_nodes);
  if (f.scheduler.empty())
    return std::nullopt;
  return parse_address("--scheduler " + f.scheduler, f.scheduler, 0);
}

// A count from the flag, else from the config (whose 0 means one process: no count for a node).
int flag_or_config(int flag, int config) {
  return flag != -1 ? flag : config > 0 ? config : -1;
}

// Where a count came from, for errors: "--server-nodes 2" or "cluster.server_nodes = 2".
std::string count_origin(const std::string& kind, int flag, int config) {
  return flag != -1 ? "--" + kind + "-nodes " + std::to_string(flag)
                    : "cluster." + kind + "_nodes = " + std::to_string(config);
}

// A count the launcher may state in `var`: a flag must agree with it; without it, the config's.
int launcher_count(const environment& env, const char* var, const std::string& kind, int flag,
                   int config) {
  if (!lookup(env, var))
    return flag_or_config(flag, config);
  int v = env_number(env, var, 1, max_nodes);
  if (flag != -1 && flag != v)
    throw usage_error("--" + kind + "-nodes " + std::to_string(flag) + " contradicts " + var + "="
                      + *lookup(env, var));
  return v;
}

// The scheduler's address from --scheduler or TROUPE_SCHEDULER, which must agree when both.
address flag_or_troupe_scheduler(const node_flags& f, const std::optional<address>& flag,
                                 const environment& env, const std::string& needer,
                                 const std::string& why = "") {
  std::optional<address> from_env;
  if (const auto* text = lookup(env, "TROUPE_SCHEDULER"))
    from_env = parse_address("TROUPE_SCHEDULER=" + *text, *text, 1);
  if (flag && from_env && *flag != *from_env)
    throw usage_error("--scheduler " + f.scheduler
                      + " contradicts TROUPE_SCHEDULER=" + *lookup(env, "TROUPE_SCHEDULER"));
  if (!flag && !from_env)
    throw usage_error(needer + " needs --scheduler HOST:PORT or TROUPE_SCHEDULER" + why);
  return flag ? *flag : *from_env;
}

// ps-lite's tracker states everything but a rank: DMLC_TASK_ID numbers the nodes of one role
// only, so it is no cluster rank and is ignored.
node_identity from_dmlc(const node_flags& f, const std::optional<address>& flag,
                        const environment& env) {
  node_identity id;
  id.source = "dmlc";
  const std::string role = *lookup(env, "DMLC_ROLE");
  if (!is_role(role))
    throw usage_error("DMLC_ROLE must be scheduler, server or worker, got '" + role + "'");
  id.role = *cluster_role(role);
  if (!f.role.empty() && f.role != role)
    throw usage_error("--role " + f.role + " contradicts DMLC_ROLE=" + role);
  const auto* uri = lookup(env, "DMLC_PS_ROOT_URI");
  const auto* port = lookup(env, "DMLC_PS_ROOT_PORT");
  if (!flag && (!uri || !port))
    throw usage_error("DMLC_ROLE=" + role
                      + " needs DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT "
                        "(the scheduler's address), or --scheduler HOST:PORT");
  address a = flag ? *flag : address{};
  if (uri)
    a.host = *uri;
  if (port)
    a.port = static_cast<std::uint16_t>(env_number(env, "DMLC_PS_ROOT_PORT", 1, 65535));
  if (flag && a != *flag)
    throw usage_error("--scheduler " + f.scheduler + " contradicts"
                      + (uri ? " DMLC_PS_ROOT_URI=" + *uri : "")
                      + (port ? " DMLC_PS_ROOT_PORT=" + *port : ""));
  id.scheduler_host = a.host;
  id.scheduler_port = a.port;
  id.server_nodes =
    launcher_count(env, "DMLC_NUM_SERVER", "server", f.server_nodes, f.config_server_nodes);
  id.worker_nodes =
    launcher_count(env, "DMLC_NUM_WORKER", "worker", f.worker_nodes, f.config_worker_nodes);
  return id;
}

// A launcher's rank and, when it gives one, its size (size_var empty, size -1: none given).
struct launcher_rank {
  std::string rank_var;
  int rank = 0;
  std::string size_var;
  int size = -1;
  std::string rank_text() const { return rank_var + "=" + std::to_string(rank); }
  std::string size_text() const { return size_var + "=" + std::to_string(size); }
};

launcher_rank read_rank(const environment& env, const char* rank_var, const char* size_var,
                        bool size_required) {
  launcher_rank r;
  r.rank_var = rank_var;
  if (size_var && lookup(env, size_var)) {
    r.size_var = size_var;
    r.size = env_number(env, size_var, 1, max_launcher_size);
  } else if (size_required) {
    throw usage_error(std::string(rank_var) + " is set but " + size_var + " is not");
  }
  r.rank = env_number(env, rank_var, 0, max_launcher_size - 1);
  if (r.size != -1 && r.rank >= r.size)
    throw usage_error(r.rank_text() + " is not below " + r.size_text());
  return r;
}

// The first MPI/PMI rank variable present, with its size.
std::optional<launcher_rank> mpi_rank(const environment& env) {
  if (lookup(env, "OMPI_COMM_WORLD_RANK"))
    return read_rank(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", true);
  if (lookup(env, "PMI_RANK"))
    return read_rank(env, "PMI_RANK", "PMI_SIZE", true);
  if (lookup(env, "PMIX_RANK"))
    return read_rank(env, "PMIX_RANK", nullptr, false);
  return std::nullopt;
}

// S and W for a launcher of r.size processes: flags over config; with a size, one missing count
// is what the size leaves and 1 + S + W must equal it. Unknowable counts stay -1.
void launcher_counts(const node_flags& f, const launcher_rank& r, node_identity& id) {
  id.server_nodes = flag_or_config(f.server_nodes, f.config_server_nodes);
  id.worker_nodes = flag_or_config(f.worker_nodes, f.config_worker_nodes);
  int& s = id.server_nodes;
  int& w = id.worker_nodes;
  std::string s_origin = count_origin("server", f.server_nodes, f.config_server_nodes);
  std::string w_origin = count_origin("worker", f.worker_nodes, f.config_worker_nodes);
  if (r.size == -1 || (s == -1 && w == -1))
    return;
  if (s == -1) {
    s = r.size - 1 - w;
    if (s < 1)
      throw usage_error(r.size_text() + " leaves no server beside the scheduler and "
                        + plural(w, "worker") + " (" + w_origin + ")");
  } else if (w == -1) {
    w = r.size - 1 - s;
    if (w < 1)
      throw usage_error(r.size_text() + " leaves no worker beside the scheduler and "
                        + plural(s, "server") + " (" + s_origin + ")");
  } else if (1 + s + w != r.size) {
    throw usage_error(r.size_text() + " but 1 scheduler + " + plural(s, "server") + " (" + s_origin
                      + ") + " + plural(w, "worker") + " (" + w_origin
                      + ") = " + std::to_string(1 + s + w));
  }
}

// Rank 0 is the scheduler, ranks 1..S the servers, S+1..S+W the workers. Without the counts a
// --role is taken as given (flags win; there is nothing to check it against).
node_identity from_launcher(const char* source, const launcher_rank& r, const node_flags& f) {
  node_identity id;
  id.source = source;
  id.rank = r.rank;
  launcher_counts(f, r, id);
  int s = id.server_nodes, w = id.worker_nodes;
  if (s == -1 || w == -1) {
    if (f.role.empty())
      throw usage_error(r.rank_text()
                        + " needs --server-nodes and --worker-nodes (or the config's"
                          " cluster counts) to tell its role"
                        + (r.size == -1 ? " (" + r.rank_var + " comes without a size)"
                                        : "; with " + r.size_text() + " one of them is enough"));
    id.role = *cluster_role(f.role);
    return id;
  }
  std::string cluster = "1 scheduler + " + plural(s, "server") + " + " + plural(w, "worker");
  if (r.rank > s + w)
    throw usage_error(r.rank_text() + " is beyond " + cluster);
  id.role = place_of_launcher_rank(r.rank, s, w).role;
  if (!f.role.empty() && f.role != to_string(id.role))
    throw usage_error("--role " + f.role + " contradicts " + r.rank_text() + ", a "
                      + to_string(id.role) + " among " + cluster);
  return id;
}

// The first host of the job's node list, where Slurm's default block distribution puts task 0.
std::string first_slurm_host(const environment& env) {
  const char* var = lookup(env, "SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST" : "SLURM_NODELIST";
  const auto* list = lookup(env, var);
  if (!list)
    throw usage_error("SLURM_PROCID is set but neither SLURM_JOB_NODELIST nor SLURM_NODELIST "
                      "names the scheduler's host; give --scheduler HOST:PORT");
  try {
    return expand_host_list(*list).front();
  } catch (const usage_error& e) {
    throw usage_error(std::string(var) + ": " + e.what());
  }
}

// Slurm: ranks as MPI; the scheduler on the first listed host unless --scheduler names one, on
// the port of --scheduler, else TROUPE_SCHEDULER_PORT, else 9091.
node_identity from_slurm(const node_flags& f, const std::optional<address>& flag,
                         const environment& env) {
  node_identity id =
    from_launcher("slurm", read_rank(env, "SLURM_PROCID", "SLURM_NTASKS", false), f);
  std::optional<std::uint16_t> env_port;
  if (lookup(env, "TROUPE_SCHEDULER_PORT"))
    env_port = static_cast<std::uint16_t>(env_number(env, "TROUPE_SCHEDULER_PORT", 1, 65535));
  if (flag && env_port && flag->port != *env_port)
    throw usage_error("--scheduler " + f.scheduler + " contradicts TROUPE_SCHEDULER_PORT="
                      + *lookup(env, "TROUPE_SCHEDULER_PORT"));
  id.scheduler_port = flag ? flag->port : env_port ? *env_port : slurm_default_port;
  id.scheduler_host = flag ? flag->host : first_slurm_host(env);
  return id;
}

node_identity from_flags(const node_flags& f, const std::optional<address>& flag,
                         const environment& env) {
  if (f.role.empty())
    throw usage_error(no_role);
  node_identity id;
  id.source = "flags";
  id.role = *cluster_role(f.role);
  address a = flag_or_troupe_scheduler(f, flag, env, "--role " + f.role);
  id.scheduler_host = a.host;
  id.scheduler_port = a.port;
  id.server_nodes = flag_or_config(f.server_nodes, f.config_server_nodes);
  id.worker_nodes = flag_or_config(f.worker_nodes, f.config_worker_nodes);
  return id;
}

usage_error bad_host_list(const std::string& list, const std::string& why) {
  return usage_error("host list '" + list + "': " + why);
}

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
         || c == '.' || c == '_';
}

// A bracket group's body such as "01-03,07" as its numbers in order; a range keeps the width
// of its first number, so "01-03" gives 01 02 03 and "8-10" gives 8 9 10.
std::vector<std::string> expand_group(const std::string& list, const std::string& body) {
  std::vector<std::string> numbers;
  std::size_t begin = 0;
  for (;;) {
    std::size_t end = std::min(body.find(',', begin), body.size());
    std::string item = body.substr(begin, end - begin);
    std::size_t dash = item.find('-');
    std::string lo = item.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    std::string what = "host list '" + list + "': '" + item + "'";
    auto a = parse_whole(what, lo, 0, 999'999'999), b = parse_whole(what, hi, 0, 999'999'999);
    if (a > b)
      throw bad_host_list(list, "range " + item + " runs backwards");
    if (numbers.size() + static_cast<std::size_t>(b - a + 1) > max_hosts)
      throw bad_host_list(list, "more than " + std::to_string(max_hosts) + " hosts");
    for (auto v = a; v <= b; ++v) {
      std::string n = std::to_string(v);
      numbers.push_back(std::string(lo.size() > n.size() ? lo.size() - n.size() : 0, '0') + n);
    }
    if (end == body.size())
      return numbers;
    begin = end + 1;
  }
}

// One host name with any number of bracket groups, appended to `hosts` as the cartesian
// product of its groups, leftmost slowest: "r[1-2]-n[3,5]" gives r1-n3 r1-n5 r2-n3 r2-n5.
void expand_name(const std::string& list, const std::string& name,
                 std::vector<std::string>& hosts) {
  if (name.empty())
    throw bad_host_list(list, "empty host name");
  std::vector<std::string> partial{""};
  for (std::size_t i = 0; i < name.size();) {
    if (name[i] != '[') {
      if (!is_host_char(name[i]))
        throw bad_host_list(list, std::string("unexpected '") + name[i] + "'");
      for (auto& p : partial)
        p += name[i];
      ++i;
      continue;
    }
    std::size_t close = name.find_first_of("[]", i + 1);
    if (close == std::string::npos || name[close] != ']')
      throw bad_host_list(list, "'[' without its ']'");
    std::string body = name.substr(i + 1, close - i - 1);
    if (body.empty())
      throw bad_host_list(list, "empty '[]'");
    std::vector<std::string> numbers = expand_group(list, body), next;
    if (hosts.size() + partial.size() * numbers.size() > max_hosts)
      throw bad_host_list(list, "more than " + std::to_string(max_hosts) + " hosts");
    for (const auto& p : partial)
      for (const auto& n : numbers)
        next.push_back(p + n);
    partial.swap(next);
    i = close + 1;
  }
  hosts.insert(hosts.end(), partial.begin(), partial.end());
}

} // namespace

environment current_environment() {
  environment env;
  for (char** entry = ::environ; entry && *entry; ++entry) {
    std::string text(*entry);
    auto eq = text.find('=');
    if (eq != std::string::npos)
      env.emplace(text.substr(0, eq), text.substr(eq + 1)); // the first wins, as in getenv
  }
  return env;
}

node_identity resolve_node_identity(const node_flags& flags, const environment& env) {
  std::optional<address> scheduler = check_flags(flags);
  node_identity id;
  if (lookup(env, "DMLC_ROLE")) {
    id = from_dmlc(flags, scheduler, env);
  } else if (auto rank = mpi_rank(env)) {
    id = from_launcher("mpi", *rank, flags);
    address a = flag_or_troupe_scheduler(flags, scheduler, env, rank->rank_text(),
                                         " (MPI does not say where rank 0 runs)");
    id.scheduler_host = a.host;
    id.scheduler_port = a.port;
  } else if (lookup(env, "SLURM_PROCID")) {
    id = from_slurm(flags, scheduler, env);
  } else {
    id = from_flags(flags, scheduler, env);
  }
  // Only --scheduler may say port 0: every environment value was parsed from port 1.
  if (id.scheduler_port == 0 && id.role != node_kind::scheduler)
    throw usage_error("--scheduler " + flags.scheduler
                      + ": port 0 (any free port) is for the "
                        "scheduler only; a "
                      + to_string(id.role) + " must name the scheduler's port");
  return id;
}

std::vector<std::string> expand_host_list(const std::string& list) {
  if (list.empty())
    throw bad_host_list(list, "no hosts");
  std::vector<std::string> hosts;
  std::size_t begin = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      expand_name(list, list.substr(begin, i - begin), hosts);
      begin = i + 1;
    } else if (list[i] == '[') {
      ++depth;
    } else if (list[i] == ']') {
      --depth;
    }
  }
  return hosts;
}

} // namespace troupe
