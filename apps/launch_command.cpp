// `troupe launch`: one cluster run from one command, in the manner of MXNet's launch.py. It
// starts the scheduler here, waits for the port it reports, then the servers and workers, here
// or over ssh on the hosts of a hosts file (round-robin, servers first), and supervises them
// all (apps/launch/child_processes.hpp). Every node is this same executable running `troupe
// node`; the cluster's shared secret reaches each one on its standard input, never in argv.
// Remote hosts are assumed to share this machine's file system: they run the same executable
// path in the same directory.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/launch/child_processes.hpp"
#include "apps/launch/hosts_file.hpp"
#include "apps/launch/restart_point.hpp"
#include "apps/run_output.hpp"
#include <troupe/io/atomic_file.hpp>
#include <troupe/io/timeline.hpp>

namespace troupe {

namespace {

namespace fs = std::filesystem;
using launch::child_spec;

struct launch_flags {
  int workers = 1;
  int servers = 1;
  std::string hostfile;
  std::string scheduler_address = "127.0.0.1";
  std::string secret_file;
  int join_timeout = 120;
  double grace = 15;
  int max_restarts = 0;
  int spares = 0; // idle workers that take over a lost worker's place (on_worker_loss = adopt)
  int scheduler_restarts = 3; // a scheduler killed by a signal is started again with --resume
  std::string events;         // a folder: each child's records and launch's own
  std::string timeline;       // the merged timeline; each child writes its part beside it
  std::vector<std::string> node_args; // passed unchanged to every node
};

const char* summary =
  R"(Starts a cluster run: a scheduler here, then servers and workers, here or over ssh on the
hosts of --hostfile (round-robin, servers first; the ssh program is $TROUPE_SSH or ssh). Each
is `troupe node` with the arguments after launch's own (from the first flag launch does not
know, or after --), e.g.
  troupe launch -n 2 -s 1 --config c.troupe --num-epochs 2
Their output is relayed line by line, prefixed [scheduler], [server 0], [worker 1]. Without a
thread count (--threads, train.threads, OMP_NUM_THREADS) the workers split each host's hardware
threads (--host-share). When one fails, the others get --grace seconds to notice, then SIGTERM,
then SIGKILL after 5 s. Ctrl-C is passed on: every node stops saying where it was (exit 130).
With --max-restarts N and --model-prefix, a failed job is started again, up to N times, from
the newest checkpoint saved under the prefix (or from the start when there is none).
A scheduler killed by a signal is started again with --resume at the same address, up to
--scheduler-restarts times: the servers and workers train on meanwhile and rejoin it.
With --spares K, K more workers start idle (troupe node --spare): under on_worker_loss = adopt the
first worker lost in training is replaced by a spare, which takes its computes and recomputes
the step in flight. A server or worker killed by a signal is left to the scheduler, which goes on without it (a
server's shard backups promoted, cluster.shard_backups; a worker adopted or dropped,
cluster.on_worker_loss) or ends the run. Exits 0 when every process did (a node the run went on
without aside), else with the first failing one's status.)";

// Launch's own arguments (short flags spelled long) and everything from the first argument
// it does not know, which every node gets.
std::vector<std::string> split_args(const std::vector<std::string>& args,
                                    std::vector<std::string>& node_args) {
  static const std::map<std::string, std::string> short_flags{
    {"-n", "--num-workers"}, {"-s", "--num-servers"}, {"-H", "--hostfile"}};
  static const std::vector<std::string> known{
    "num-workers", "num-servers",  "hostfile", "scheduler-address",  "secret-file", "join-timeout",
    "grace",       "max-restarts", "spares",   "scheduler-restarts", "events",      "timeline"};
  std::vector<std::string> own;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      node_args.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (args[i] == "--help" || args[i] == "-h") {
      own.push_back(args[i]);
      continue;
    }
    auto s = short_flags.find(args[i]);
    std::string flag = s != short_flags.end() ? s->second : args[i];
    std::string name = flag.rfind("--", 0) == 0 ? flag.substr(2, flag.find('=') - 2) : "";
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      node_args.assign(args.begin() + static_cast<long>(i), args.end());
      break;
    }
    own.push_back(flag);
    if (flag.find('=') == std::string::npos && i + 1 < args.size())
      own.push_back(args[++i]);
  }
  return own;
}

// Parses and checks the flags; false when --help was asked for (and printed).
bool parse_flags(const std::vector<std::string>& args, launch_flags& l) {
  flag_set f("launch", summary);
  f.add("num-workers", l.workers, "worker processes (-n)");
  f.add("num-servers", l.servers, "server processes (-s)");
  f.add("hostfile", l.hostfile,
        "hosts to run servers and workers on over ssh (-H); none: all here");
  f.add("scheduler-address", l.scheduler_address, "address the scheduler listens on");
  f.add("secret-file", l.secret_file, "file holding the cluster secret; none: a fresh one per run");
  f.add("join-timeout", l.join_timeout, "seconds for every node to join the scheduler");
  f.add("grace", l.grace, "seconds the others may run on after a process fails");
  f.add("max-restarts", l.max_restarts,
        "times a failed job is started again from its newest checkpoint (needs --model-prefix)");
  f.add("spares", l.spares,
        "idle worker processes (troupe node --spare) that take over the place of a worker lost in "
        "training "
        "(on_worker_loss = adopt)");
  f.add("scheduler-restarts", l.scheduler_restarts,
        "times a scheduler killed by a signal is started again with --resume, at the same address: "
        "the servers "
        "and workers train on meanwhile and rejoin it (--scheduler-timeout); 0: a killed scheduler "
        "ends the job");
  f.add("events", l.events,
        "write records to FOLDER (made if missing): each node's own (scheduler.jsonl, "
        "server_0.jsonl, worker_1.jsonl, spare_0.jsonl: troupe node --events) and launch's "
        "(launch.jsonl: spawned, exited, restart, ended); emptied first");
  f.set_placeholder("events", "FOLDER");
  f.add("timeline", l.timeline,
        "write the run's timeline to FILE, a Chrome trace (Perfetto, chrome://tracing): each node "
        "writes its part (troupe node --timeline FILE.scheduler.json, FILE.worker_0.json, ...), "
        "merged into FILE when the nodes have ended, one process per node, each on the scheduler's "
        "clock by the offset it measured when it joined");
  f.set_placeholder("timeline", "FILE");
  f.set_placeholder("hostfile", "FILE");
  f.set_placeholder("secret-file", "FILE");
  f.set_placeholder("scheduler-address", "HOST");
  f.set_placeholder("join-timeout", "SECONDS");
  f.set_placeholder("grace", "SECONDS");
  if (!f.parse(split_args(args, l.node_args))) {
    std::cout << f.help() << "  ARGS...\n        passed to every `troupe node`\n";
    return false;
  }
  check_range("num-workers", l.workers, 1, 1024);
  check_range("num-servers", l.servers, 1, 1024);
  check_range("join-timeout", l.join_timeout, 1, 86400);
  check_range("max-restarts", l.max_restarts, 0, 1000);
  check_range("spares", l.spares, 0, 1024);
  check_range("scheduler-restarts", l.scheduler_restarts, 0, 1000);
  if (l.max_restarts > 0 && !launch::model_prefix_of(l.node_args))
    throw usage_error(
      "--max-restarts needs --model-prefix PREFIX among the nodes' flags: the checkpoints a "
      "restart resumes from");
  if (!(l.grace >= 0 && l.grace <= 3600)) {
    std::ostringstream got;
    got << l.grace;
    throw usage_error("--grace must be between 0 and 3600 seconds, got " + got.str());
  }
  if (l.scheduler_address.empty() || l.scheduler_address.find(':') != std::string::npos)
    throw usage_error("--scheduler-address takes a host name or IPv4 address without a port, got '"
                      + l.scheduler_address + "'");
  if (!l.hostfile.empty() && !f.given("scheduler-address"))
    throw usage_error("--hostfile needs --scheduler-address: an address of this machine that the "
                      "hosts can reach");
  return true;
}

// 32 random bytes as 64 hex digits.
std::string fresh_secret() {
  std::ifstream random("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!random.read(reinterpret_cast<char*>(bytes), sizeof bytes))
    throw std::runtime_error("cannot read /dev/urandom for the cluster secret");
  std::string hex;
  for (unsigned char b : bytes) {
    hex += "0123456789abcdef"[b >> 4];
    hex += "0123456789abcdef"[b & 15];
  }
  return hex;
}

std::string read_secret(const std::string& path) {
  if (path.empty())
    return fresh_secret();
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open secret file " + path);
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back())))
    secret.pop_back();
  if (secret.empty() || secret.find('\n') != std::string::npos)
    throw std::runtime_error("secret file " + path + " must hold the secret on one line");
  return secret;
}

// A directory of this run's own (the scheduler's port file), removed with everything in it.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "troupe-launch-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a directory from " + pattern);
    path = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// The port the scheduler wrote (atomically, by rename), or 0 while there is none.
int read_port(const fs::path& file) {
  std::ifstream in(file);
  if (!in)
    return 0;
  int port = 0;
  if (!(in >> port) || port < 1 || port > 65535)
    throw std::runtime_error("the scheduler's port file " + file.string() + " holds no port");
  return port;
}

std::string node_program() {
  std::error_code error;
  auto path = fs::read_symlink("/proc/self/exe", error);
  if (error)
    throw std::runtime_error("cannot resolve /proc/self/exe: " + error.message());
  return path.string();
}

// The `troupe node` arguments every role shares.
std::vector<std::string> node_argv(const std::string& program, const std::string& role,
                                   const std::string& scheduler, const launch_flags& l) {
  return {
    program,          "node",
    "--role",         role,
    "--scheduler",    scheduler,
    "--secret-file",  "-",
    "--join-timeout", std::to_string(l.join_timeout),
    "--server-nodes", std::to_string(l.servers), // every node: the compute count defaults to them
    "--worker-nodes", std::to_string(l.workers)};
}

// The share of its host's hardware threads each node computes with when the run names no
// thread count (`troupe node --host-share`): the workers, which hold the computes, split
// their host's threads; servers beside workers and the scheduler take one; servers on a host
// of their own split it. Node n runs on hosts[n % hosts] (one host: here).
std::vector<int> host_shares(const launch_flags& l, std::size_t hosts) {
  hosts = std::max<std::size_t>(hosts, 1);
  std::vector<int> workers(hosts, 0), servers(hosts, 0), shares;
  for (int node = 0; node < l.servers + l.workers; ++node)
    ++(node < l.servers ? servers : workers)[static_cast<std::size_t>(node) % hosts];
  for (int node = 0; node < l.servers + l.workers; ++node) {
    const auto h = static_cast<std::size_t>(node) % hosts;
    shares.push_back(node >= l.servers ? workers[h] : workers[h] > 0 ? 0 : servers[h]);
  }
  return shares;
}

// Each worker's place among the workers on its host (node n on hosts[n % hosts]): 0, 1, ...
// in start order; servers get -1.
std::vector<int> host_slots(const launch_flags& l, std::size_t hosts) {
  hosts = std::max<std::size_t>(hosts, 1);
  std::vector<int> next(hosts, 0), slots;
  for (int node = 0; node < l.servers + l.workers; ++node)
    slots.push_back(node < l.servers ? -1 : next[static_cast<std::size_t>(node) % hosts]++);
  return slots;
}

// A node's records go to FOLDER/<its name>.jsonl (--events); on another host, the same path there.
void add_events_flag(std::vector<std::string>& argv, const launch_flags& l,
                     const std::string& label) {
  if (!l.events.empty())
    argv.insert(
      argv.end(),
      {"--events", (fs::path(l.events) / (launch::record_name(label) + ".jsonl")).string()});
}

// The names of the record files one launch writes: its own and each child's.
std::vector<std::string> record_files(const launch_flags& l) {
  std::vector<std::string> names{"launch", "scheduler"};
  for (int i = 0; i < l.servers; ++i)
    names.push_back("server_" + std::to_string(i));
  for (int i = 0; i < l.workers; ++i)
    names.push_back("worker_" + std::to_string(i));
  for (int i = 0; i < l.spares; ++i)
    names.push_back("spare_" + std::to_string(i));
  return names;
}

// A node's timeline part: FILE.<its name>.json (--timeline), merged into FILE at the end.
std::string timeline_part_path(const launch_flags& l, const std::string& label) {
  return l.timeline + "." + launch::record_name(label) + ".json";
}

void add_timeline_flag(std::vector<std::string>& argv, const launch_flags& l,
                       const std::string& label) {
  if (!l.timeline.empty())
    argv.insert(argv.end(), {"--timeline", timeline_part_path(l, label)});
}

// Merges the parts the nodes wrote (a node killed before its end wrote none: it is left out,
// saying so) into --timeline's FILE and removes them; 0, or 1 when FILE cannot be written.
int merge_timeline_parts(const launch_flags& l) {
  if (l.timeline.empty())
    return 0;
  std::vector<timeline_part> parts;
  for (const auto& name : record_files(l)) {
    if (name == "launch")
      continue; // the launcher records no timeline of its own
    const auto path = timeline_part_path(l, name);
    if (fs::exists(path))
      parts.push_back({path, 0}); // each shifted by the offset to the scheduler it measured
    else
      std::cerr << "launch: --timeline: " << name << " wrote no part (" << path << ")\n";
  }
  try {
    const auto merged = merge_timelines(parts);
    write_file_atomically(l.timeline, std::vector<std::uint8_t>(merged.begin(), merged.end()));
  } catch (const std::exception& e) {
    std::cerr << "launch: error: --timeline " << l.timeline << ": " << e.what() << std::endl;
    return 1;
  }
  for (const auto& part : parts) {
    std::error_code ignored;
    fs::remove(part.path, ignored);
  }
  return 0;
}

// Makes the --events folder and empties this launch's record files in it (a folder used before
// holds another run's), so that each holds this launch's records only; a path that cannot be
// written ends the launch (exit 2) before anything starts. Returns launch's own records.
std::shared_ptr<node_events> open_event_folder(launch_flags& l) {
  if (l.events.empty())
    return nullptr;
  std::error_code error;
  fs::create_directories(l.events, error);
  if (error || !fs::is_directory(l.events))
    throw usage_error("--events " + l.events + ": cannot make the folder: "
                      + (error ? error.message() : std::string("it is not a folder")));
  l.events = fs::absolute(l.events).lexically_normal().string();
  for (const auto& name : record_files(l)) {
    const auto path = (fs::path(l.events) / (name + ".jsonl")).string();
    std::ofstream file(path, std::ios::trunc);
    if (!file)
      throw usage_error("--events " + l.events + ": cannot write " + path + ": "
                        + std::strerror(errno));
  }
  try {
    return node_events::append_to((fs::path(l.events) / "launch.jsonl").string(), "launch", 0);
  } catch (const std::exception& e) {
    throw usage_error("--events " + l.events + ": " + e.what());
  }
}

child_spec scheduler_spec(const std::string& program, const fs::path& port_file,
                          const launch_flags& l, const std::string& secret) {
  child_spec s{
    "scheduler", node_argv(program, "scheduler", l.scheduler_address + ":0", l), {}, secret + "\n"};
  s.argv.insert(s.argv.end(), {"--port-file", port_file.string(), "--host-share", "0"});
  add_events_flag(s.argv, l, s.name);
  add_timeline_flag(s.argv, l, s.name);
  s.argv.insert(s.argv.end(), l.node_args.begin(), l.node_args.end());
  return s;
}

// Starts the servers, then the workers: over ssh when there are hosts, else here.
void start_nodes(launch::child_processes& children, const std::string& program, int port,
                 const std::vector<launch::host>& hosts, const launch_flags& l,
                 const std::string& secret) {
  const char* ssh = std::getenv("TROUPE_SSH");
  std::string scheduler = l.scheduler_address + ":" + std::to_string(port);
  std::string dir = fs::current_path().string();
  const auto shares = host_shares(l, hosts.size());
  const auto slots = host_slots(l, hosts.size());
  for (int node = 0; node < l.servers + l.workers; ++node) {
    bool server = node < l.servers;
    std::string role = server ? "server" : "worker";
    int index = server ? node : node - l.servers;
    auto argv = node_argv(program, role, scheduler, l);
    argv.insert(argv.end(),
                {"--rank", std::to_string(index), // so that [worker 1] is worker_1
                 "--host-share", std::to_string(shares[static_cast<std::size_t>(node)])});
    if (!server)
      argv.insert(argv.end(),
                  {"--host-slot", std::to_string(slots[static_cast<std::size_t>(node)])});
    add_events_flag(argv, l, role + " " + std::to_string(index));
    add_timeline_flag(argv, l, role + " " + std::to_string(index));
    if (!hosts.empty()) {
      const auto& h = hosts[static_cast<std::size_t>(node) % hosts.size()];
      argv.insert(argv.end(), {"--listen", h.name});
      argv.insert(argv.end(), l.node_args.begin(), l.node_args.end());
      argv = launch::ssh_command(ssh != nullptr && *ssh ? ssh : "ssh", h, dir, argv);
    } else {
      argv.insert(argv.end(), l.node_args.begin(), l.node_args.end());
    }
    // A server or worker killed by a signal is the scheduler's to replace (shard backups,
    // on_worker_loss) or to end the run over.
    children.start({role + " " + std::to_string(index), argv, {}, secret + "\n", true});
  }
  // Spares: workers without a rank or a slot of their own, on the hosts after the workers'.
  for (int k = 0; k < l.spares; ++k) {
    auto argv = node_argv(program, "worker", scheduler, l);
    argv.insert(argv.end(), {"--spare", "--host-share", std::to_string(shares.back())});
    add_events_flag(argv, l, "spare " + std::to_string(k));
    add_timeline_flag(argv, l, "spare " + std::to_string(k));
    if (!hosts.empty()) {
      const auto& h = hosts[static_cast<std::size_t>(l.servers + l.workers + k) % hosts.size()];
      argv.insert(argv.end(), {"--listen", h.name});
      argv.insert(argv.end(), l.node_args.begin(), l.node_args.end());
      argv = launch::ssh_command(ssh != nullptr && *ssh ? ssh : "ssh", h, dir, argv);
    } else {
      argv.insert(argv.end(), l.node_args.begin(), l.node_args.end());
    }
    children.start({"spare " + std::to_string(k), argv, {}, secret + "\n", true});
  }
}

int run(const launch_flags& l, const std::shared_ptr<node_events>& events) {
  std::string secret = read_secret(l.secret_file);
  // A bad hosts file fails before anything starts.
  std::vector<launch::host> hosts;
  if (!l.hostfile.empty())
    hosts = launch::read_hosts_file(l.hostfile);
  std::string program = node_program();
  temp_dir dir;
  launch::supervisor_options options;
  options.grace = std::chrono::milliseconds(static_cast<long>(l.grace * 1000));
  options.events = events;
  launch::child_processes children(options); // destroyed before dir: nothing writes there after
  fs::path port_file = dir.path / "scheduler.port";
  children.start(scheduler_spec(program, port_file, l, secret));
  int port = 0;
  auto up = children.wait_until([&] { return (port = read_port(port_file)) != 0; },
                                std::chrono::seconds(l.join_timeout));
  if (up != launch::wait_result::ready) {
    if (up == launch::wait_result::timed_out)
      std::cerr << "launch: the scheduler reported no port within " << l.join_timeout << " s\n";
    else if (up == launch::wait_result::child_exited)
      std::cerr << "launch: the scheduler exited before it reported its port\n";
    children.terminate();
    int status = children.wait();
    return status != 0 ? status : 1;
  }
  // Killed, it comes back where the others look for it, and takes the run over from them.
  auto again = scheduler_spec(program, port_file, l, secret).argv;
  std::replace(again.begin(), again.end(), l.scheduler_address + ":0",
               l.scheduler_address + ":" + std::to_string(port));
  again.push_back("--resume");
  children.set_restart(children.pids().front(), std::move(again), l.scheduler_restarts);
  std::cerr << "launch: scheduler at " << l.scheduler_address << ':' << port << "; starting "
            << l.servers << " server(s) and " << l.workers << " worker(s)" << std::endl;
  start_nodes(children, program, port, hosts, l, secret);
  const int status = children.wait();
  const int merged = merge_timeline_parts(l);
  return status != 0 ? status : merged;
}

// Whether a job that ended with `status` is worth starting again: not when it finished, was
// interrupted (Ctrl-C: 130) or was refused its flags or config (2), which a restart repeats.
bool restartable(int status) {
  return status != 0 && status != 130 && status != 2;
}

} // namespace

int launch_command(const std::vector<std::string>& args) {
  launch_flags l;
  if (!parse_flags(args, l))
    return 0;
  const auto given = l.node_args;
  const auto events = open_event_folder(l);
  if (!l.timeline.empty()) { // refused before any node starts, as --events is
    try {
      open_timeline(l.timeline, "launch");
    } catch (const std::exception& e) {
      throw usage_error(e.what());
    }
    l.timeline = fs::absolute(l.timeline).lexically_normal().string();
  }
  record_event(events, "started",
               {{{"servers", l.servers}, {"workers", l.workers}, {"spares", l.spares}}, {}});
  for (int restart = 1;; ++restart) {
    const int status = run(l, events);
    if (!restartable(status) || restart > l.max_restarts) {
      record_event(events, "ended",
                   {{{"code", status}},
                    {{"outcome", status == 0     ? "finished"
                                 : status == 130 ? "interrupted"
                                                 : "failed"}}});
      return status;
    }
    const auto saved = launch::newest_checkpoint(*launch::model_prefix_of(given));
    l.node_args = saved ? launch::resuming_from(given, saved->epoch) : given;
    record_event(events, "restart",
                 {{{"code", status},
                   {"count", restart},
                   {"of", l.max_restarts},
                   {"epoch", saved ? static_cast<double>(saved->epoch) : -1.0}},
                  {{"name", "job"}}});
    std::cerr << "launch: the job failed (exit " << status << "); restart " << restart << " of "
              << l.max_restarts << ", "
              << (saved ? "from " + saved->file + " (epoch " + std::to_string(saved->epoch) + ")"
                        : std::string("from the start (no checkpoint saved yet)"))
              << std::endl;
  }
}

} // namespace troupe
