// `troupe ctl --scheduler HOST:PORT VERB [ARG...]`: asks a running cluster's scheduler to run a
// verb (troupe/cluster/ctl_client.hpp), admitted with the job's secret as a node is. Verbs:
// `status` (`--json`: the status server's /status document), `drain NODE`, `set KEY=VALUE`,
// `checkpoint` and `stop`. Exit status 0 when the scheduler answered, 1 when it refused the verb or
// could not be reached, 2 for a usage error.
#include "apps/commands.hpp"

#include <chrono>
#include <iostream>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/ctl_client.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/status/status_server.hpp>

#include "apps/ctl_status_text.hpp"
#include "apps/flags.hpp"
#include "apps/secret_flag.hpp"

namespace troupe {

namespace {

struct ctl_command_line {
  std::string scheduler, secret_file;
  double timeout = 10;
  bool json = false;
  std::vector<std::string> words; // the verb and its arguments
};

const char* const ctl_summary =
  "Asks a running cluster's scheduler (troupe node --role scheduler) to run VERB, admitted with "
  "the job's secret as a node is. VERB: status (where the run is, its nodes and ranks, "
  "samples/s, stragglers, faults; --json: the status server's /status document), drain NODE (the "
  "worker NODE, e.g. worker_1, leaves the run as on SIGTERM: its computes move to another "
  "worker, it exits 0, the run goes on; refused, saying why, where they cannot move), set "
  "KEY=VALUE "
  "(optimizer.lr, optimizer.momentum, optimizer.wd, checked against the config's key table, or "
  "topology.staleness, -1 for none: async <-> SSP, changes from the first step after the epoch in "
  "training, in every server's shards; the metrics JSONL records it), balance (after the epoch "
  "in training the ranks are weighed as balance = auto weighs them, and a faster worker process "
  "is given more where that shortens an epoch by 5 % or more), checkpoint "
  "(the epoch in training is saved after its validation, although no save is due; the run goes "
  "on), stop (the "
  "epoch in training is the run's last: validated, saved as the last epoch where the run saves "
  "checkpoints, then every process exits 0).";

// Splits `args` into flags (with their values) and words (the verb and its arguments): flags may
// come before or after the verb.
std::vector<std::string> flags_of(const std::vector<std::string>& args,
                                  std::vector<std::string>& words) {
  std::vector<std::string> flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a.rfind("-", 0) != 0) {
      words.push_back(a);
      continue;
    }
    flags.push_back(a);
    const bool takes_value = a == "--scheduler" || a == "--secret-file" || a == "--timeout";
    if (takes_value && i + 1 < args.size())
      flags.push_back(args[++i]);
  }
  return flags;
}

std::vector<std::string> usage_words(const std::vector<std::string>& words) {
  if (words.empty())
    throw usage_error(
      "expected a VERB: status, drain NODE, set KEY=VALUE, balance, checkpoint or stop, e.g. "
      "troupe ctl "
      "--scheduler "
      "127.0.0.1:9000 status");
  const auto& verb = words.front();
  if (verb != "status" && verb != "drain" && verb != "set" && verb != "stop" && verb != "checkpoint"
      && verb != "balance")
    throw usage_error("unknown verb '" + verb
                      + "' (verbs: status, drain NODE, set KEY=VALUE, balance, checkpoint, stop)");
  if (verb == "set" && (words.size() != 2 || words[1].find('=') == std::string::npos))
    throw usage_error("set takes one KEY=VALUE, e.g. set optimizer.lr=0.05");
  if (verb != "drain" && verb != "set" && words.size() != 1)
    throw usage_error(verb + " takes no arguments, got '" + words[1] + "'");
  if (verb == "drain" && words.size() != 2)
    throw usage_error("drain takes one NODE (a worker, e.g. worker_1), got "
                      + std::to_string(words.size() - 1));
  return {words.begin() + 1, words.end()};
}

ctl_request request_of(const ctl_command_line& c) {
  if (c.scheduler.empty())
    throw usage_error("--scheduler HOST:PORT is required (where the scheduler listens)");
  listen_address at;
  try {
    at = parse_listen_address(c.scheduler);
  } catch (const std::invalid_argument& e) {
    throw usage_error("--scheduler " + c.scheduler + ": " + e.what());
  }
  if (at.port == 0)
    throw usage_error("--scheduler " + c.scheduler + ": the port is 0 (the scheduler's own port)");
  check_real_range("timeout", c.timeout, 0.1, 3600.0);
  ctl_request r{read_secret(c.secret_file, current_environment())};
  r.host = at.host;
  r.port = at.port;
  r.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(c.timeout * 1000));
  return r;
}

} // namespace

int ctl_command(const std::vector<std::string>& args) {
  ctl_command_line c;
  flag_set f("ctl", ctl_summary);
  f.set_operands("VERB [ARG...]");
  f.add("scheduler", c.scheduler, "the scheduler's address, HOST:PORT (IPv6 as [::1]:9000)");
  f.set_placeholder("scheduler", "HOST:PORT");
  f.add("secret-file", c.secret_file,
        "file holding the cluster secret (mode 600; '-': read one line from standard input); else "
        "TROUPE_SECRET");
  f.add("timeout", c.timeout,
        "seconds the connection, the admission and the answer may take together (0.1-3600)");
  f.add_switch("json", c.json, "status: print the /status JSON document instead of text");
  if (!f.parse(flags_of(args, c.words))) {
    std::cout << f.help();
    return 0;
  }
  auto request = request_of(c);
  request.args = usage_words(c.words);
  request.verb = c.words.front();
  if (c.json && request.verb != "status")
    throw usage_error("--json goes with status only");
  local_node_options local;
  local_node_config config{local};
  caf::actor_system system{config};
  auto answer = ask_scheduler(system, request);
  if (!answer) {
    std::cerr << ("troupe ctl: error: " + error_text(answer.error()) + "\n") << std::flush;
    return 1;
  }
  if (request.verb == "status")
    std::cout << (c.json ? answer->json + "\n" : status_text(answer->json)) << std::flush;
  else
    std::cout << answer->text << std::endl;
  return 0;
}

} // namespace troupe
