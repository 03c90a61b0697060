// `troupe bench transport`: pushes and answers of a model's keys between worker and server
// processes on 127.0.0.1, through Troupe's peer channels and, side by side in the same run,
// through plain TCP sockets moving the same bytes in the same pattern (raw_transport.hpp).
// Each layout (workers x servers) and key pattern (keys x bytes) runs `--rounds` times,
// alternating the two systems so that the machine's slow spells hit both; every round starts
// fresh processes. Prints steps/s and GB/s (both directions, all workers) per round, the
// medians, Troupe's share of the raw figure per case, and as its last line
// `transport/raw: R`, the worst of those shares. With `--results FILE` it also appends each
// case's share as a record of the results file that docs/benchmarks.md is made from
// (scripts/results_page.py), with the command, the date, the commit given and the CPU.
//
// The same executable plays every part: `--role server|worker` (internal) runs one side and
// talks to the orchestrating process over its standard input and output.
#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "apps/bench/raw_transport.hpp"
#include "apps/bench/transport_roles.hpp"
#include "apps/commands.hpp"
#include "apps/flags.hpp"

extern char** environ;

namespace troupe {

namespace {

struct child {
  pid_t pid = -1;
  FILE* out = nullptr; // its standard output
  int in = -1;         // its standard input: closing it ends a server
};

// Starts this executable with `args`; its stdin and stdout become pipes to us.
child start(const std::vector<std::string>& args) {
  int to_child[2], from_child[2];
  // Close-on-exec: a later child must not inherit this one's pipe ends, or closing ours would
  // never reach it as end of input.
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
    throw std::runtime_error("transport bench: pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, to_child[1]);
  posix_spawn_file_actions_addclose(&actions, from_child[0]);
  std::vector<std::string> all{"/proc/self/exe", "bench", "transport"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  child c;
  if (posix_spawn(&c.pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("transport bench: cannot start a child process");
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  c.in = to_child[1];
  c.out = ::fdopen(from_child[0], "r");
  return c;
}

// The child's next line "<word> <value>"; throws if it ended instead.
double read_value(child& c, const std::string& word) {
  char line[256];
  while (std::fgets(line, sizeof line, c.out)) {
    std::istringstream in(line);
    std::string got;
    double value = 0;
    if (in >> got >> value && got == word)
      return value;
  }
  throw std::runtime_error("transport bench: a " + word + " line never came from process "
                           + std::to_string(c.pid));
}

void finish(child& c) {
  if (c.in >= 0)
    ::close(c.in);
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  if (c.out)
    std::fclose(c.out);
}

struct bench_case {
  int workers = 1;
  bench::transport_layout layout;
};

std::string case_name(const bench_case& b) {
  std::ostringstream out;
  out << b.workers << "w x " << b.layout.servers << "s, " << b.layout.keys << " x "
      << b.layout.key_bytes << " B";
  return out.str();
}

// One round of one system: fresh server and worker processes; the slowest worker's seconds.
double run_round(const bench_case& b, const std::string& system, int warmup, int steps) {
  const auto& l = b.layout;
  std::vector<std::string> shape{"--system",        system,
                                 "--servers",       std::to_string(l.servers),
                                 "--keys",          std::to_string(l.keys),
                                 "--key-bytes",     std::to_string(l.key_bytes),
                                 "--workers",       std::to_string(b.workers),
                                 "--local-sockets", l.local_sockets ? "on" : "off"};
  std::vector<child> servers, workers;
  std::string ports;
  for (int s = 0; s < l.servers; ++s) {
    auto args = shape;
    args.insert(args.end(), {"--role", "server", "--server", std::to_string(s)});
    servers.push_back(start(args));
    ports += (s ? "," : "") + std::to_string(static_cast<int>(read_value(servers.back(), "port")));
  }
  for (int w = 0; w < b.workers; ++w) {
    auto args = shape;
    args.insert(args.end(), {"--role", "worker", "--ports", ports, "--warmup",
                             std::to_string(warmup), "--steps", std::to_string(steps)});
    workers.push_back(start(args));
  }
  double slowest = 0;
  for (auto& w : workers) {
    slowest = std::max(slowest, read_value(w, "seconds"));
    finish(w);
  }
  for (auto& s : servers)
    finish(s);
  return slowest;
}

// "2x2" -> "2,2", for parse_number_list.
std::string replace_x(std::string text) {
  std::replace(text.begin(), text.end(), 'x', ',');
  return text;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int run_role(const std::string& role, const std::string& system, const bench::transport_layout& l,
             int server, const std::string& ports_text, int warmup, int steps) {
  // A child dies with the orchestrator: no process outlives the benchmark.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (role == "server") {
    std::uint16_t port = 0;
    if (system == "raw")
      bench::raw_serve(port, /*connections=*/1024);
    else
      bench::troupe_serve(l, server, port);
    std::cout << "port " << port << std::endl;
    std::string ignored;
    while (std::getline(std::cin, ignored)) {
    }
    std::_Exit(0); // the serving threads are mid-read; nothing is left to flush
  }
  std::vector<std::uint16_t> ports;
  for (double p : parse_number_list("ports", ports_text))
    ports.push_back(static_cast<std::uint16_t>(p));
  double seconds = 0;
  if (system == "raw") {
    bench::raw_step_plan plan;
    plan.ports = ports;
    for (int s = 0; s < l.servers; ++s)
      plan.frames.push_back(l.keys_of(s));
    plan.frame_bytes = l.key_bytes;
    seconds = bench::raw_worker(plan, warmup, steps);
  } else {
    seconds = bench::troupe_worker(l, ports, warmup, steps);
  }
  std::cout << "seconds " << std::setprecision(9) << seconds << std::endl;
  return 0;
}

// This machine's CPU as /proc/cpuinfo names it, with the hardware threads there are.
std::string machine_text() {
  std::ifstream in("/proc/cpuinfo");
  std::string model = "not recorded";
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &utc);
  return text;
}

// The command as a user types it again, without the results file and the commit it names.
std::string command_text(const std::vector<std::string>& args) {
  std::string out = "troupe bench transport";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--results" || args[i] == "--commit") {
      ++i;
      continue;
    }
    if (args[i].rfind("--results=", 0) != 0 && args[i].rfind("--commit=", 0) != 0)
      out += " " + args[i];
  }
  return out;
}

// Appends one case's record to the results file (scripts/results_page.py reads it: a later
// record of the same id replaces an earlier one on the page, the file keeps both).
void append_result(const std::string& path, const bench_case& c, double ours, double raw,
                   const std::string& command, const std::string& commit) {
  const bool local = c.layout.local_sockets;
  const auto id = "transport/raw/" + std::string(local ? "on/" : "off/") + std::to_string(c.workers)
                  + "x" + std::to_string(c.layout.servers) + "/" + std::to_string(c.layout.keys)
                  + "x" + std::to_string(c.layout.key_bytes);
  const double bytes = 2.0 * c.workers * c.layout.keys * static_cast<double>(c.layout.key_bytes);
  std::ostringstream detail;
  detail << std::fixed << std::setprecision(2) << ours << " steps/s (" << bytes * ours / 1e9
         << " GB/s), plain TCP " << raw << " steps/s";
  nlohmann::ordered_json record = {{"id", id},
                                   {"group", "transport"},
                                   {"figure", case_name(c) + ", over "
                                                + (local ? "local sockets" : "loopback TCP")
                                                + ": Troupe's steps/s over plain loopback TCP's"},
                                   {"value", std::round(ours / raw * 1e4) / 1e4},
                                   {"unit", "x raw TCP"},
                                   {"detail", detail.str()},
                                   {"troupe_steps_s", ours},
                                   {"raw_steps_s", raw},
                                   {"command", command},
                                   {"date", utc_date()},
                                   {"commit", commit},
                                   {"machine", machine_text()},
                                   {"source", "troupe bench transport --results"}};
  std::ofstream out(path, std::ios::app);
  out << record.dump() << '\n';
  if (!out)
    throw std::runtime_error("bench transport: cannot append to " + path);
}

} // namespace

int transport_bench_command(const std::vector<std::string>& args) {
  std::string role, system = "troupe", ports, layouts = "1x1,2x2",
                    patterns = "15x4194304,60x1048576", local_sockets = "on", results,
                    commit = "not recorded";
  int servers = 1, keys = 15, server = 0, workers = 1, steps = 10, warmup = 3, rounds = 3;
  std::int64_t key_bytes = 4 << 20;
  flag_set f("bench transport",
             "Push + answer of every key of a model between worker and server processes on "
             "127.0.0.1: Troupe's peer channels beside plain TCP moving the same bytes.");
  f.add("layouts", layouts, "WORKERSxSERVERS cases, comma-separated");
  f.add("patterns", patterns, "KEYSxBYTES cases, comma-separated (bytes a multiple of 8)");
  f.add("steps", steps, "timed steps per round");
  f.add("warmup", warmup, "untimed steps first (fresh connections fault their pages in)");
  f.add("rounds", rounds, "rounds per case and system, alternating the systems");
  f.add("local-sockets", local_sockets,
        "on: Troupe's workers reach the servers through Unix sockets (as troupe "
        "node does on one host); off: TCP, as the raw system");
  f.add("results", results,
        "append each case's Troupe/raw share to this results file (docs/results.jsonl)");
  f.add("commit", commit, "the commit the results records name");
  f.add("role", role, "internal: server | worker");
  f.add("system", system, "internal: troupe | raw");
  f.add("servers", servers, "internal");
  f.add("workers", workers, "internal");
  f.add("keys", keys, "internal");
  f.add("key-bytes", key_bytes, "internal");
  f.add("server", server, "internal");
  f.add("ports", ports, "internal");
  if (!f.parse(args)) {
    std::cout << f.help();
    return 0;
  }
  const bool local = on_off("local-sockets", local_sockets);
  if (!role.empty())
    return run_role(role, system, bench::transport_layout{servers, keys, key_bytes, local}, server,
                    ports, warmup, steps);

  std::vector<bench_case> cases;
  for (const auto& layout : split_names(layouts))
    for (const auto& pattern : split_names(patterns)) {
      auto lw = parse_number_list("layouts", replace_x(layout));
      auto pk = parse_number_list("patterns", replace_x(pattern));
      if (lw.size() != 2 || pk.size() != 2 || lw[0] < 1 || lw[1] < 1 || pk[0] < lw[1]
          || static_cast<std::int64_t>(pk[1]) % 8 != 0 || pk[1] < 8)
        throw usage_error("bench transport: bad case " + layout + " / " + pattern
                          + " (WORKERSxSERVERS, KEYSxBYTES with at least one key per server and "
                            "bytes a multiple of 8)");
      cases.push_back({static_cast<int>(lw[0]),
                       {static_cast<int>(lw[1]), static_cast<int>(pk[0]),
                        static_cast<std::int64_t>(pk[1]), local}});
    }
  std::map<std::string, std::vector<double>> rates; // case|system -> steps/s
  std::cout << "case                          system  round  steps/s   GB/s\n";
  for (int r = 0; r < rounds; ++r)
    for (const auto& c : cases)
      for (const std::string system_name : {r % 2 ? "troupe" : "raw", r % 2 ? "raw" : "troupe"}) {
        const double seconds = run_round(c, system_name, warmup, steps);
        const double rate = steps / seconds;
        const double bytes =
          2.0 * c.workers * c.layout.keys * static_cast<double>(c.layout.key_bytes);
        rates[case_name(c) + "|" + system_name].push_back(rate);
        std::cout << std::left << std::setw(30) << case_name(c) << std::setw(8) << system_name
                  << std::setw(7) << r << std::fixed << std::setprecision(2) << std::setw(10)
                  << rate << bytes * rate / 1e9 << std::endl;
      }
  std::cout
    << "\nmedians (" << rounds << " rounds, " << steps
    << " steps each; GB/s counts both directions of every worker)\n"
    << "case                          raw steps/s  troupe steps/s  troupe GB/s  troupe/raw\n";
  double worst = 1e9;
  for (const auto& c : cases) {
    const double raw = median(rates[case_name(c) + "|raw"]);
    const double ours = median(rates[case_name(c) + "|troupe"]);
    const double bytes = 2.0 * c.workers * c.layout.keys * static_cast<double>(c.layout.key_bytes);
    worst = std::min(worst, ours / raw);
    std::cout << std::left << std::setw(30) << case_name(c) << std::setw(13) << raw << std::setw(16)
              << ours << std::setw(13) << bytes * ours / 1e9 << ours / raw << '\n';
    if (!results.empty())
      append_result(results, c, ours, raw, command_text(args), commit);
  }
  std::cout << "transport/raw: " << std::setprecision(3) << worst << std::endl;
  return 0;
}

} // namespace troupe
