// The status server a command starts for its run (`--status-listen`, train.status_listen):
// made before the run, so an address in use ends the command before anything trains, and
// stopped when the command ends. `troupe train` serves its one process; `troupe node --role
// scheduler` serves the cluster, its nodes' lives read from its own event records. A scheduler
// keeps its run's status even without a server: `troupe ctl status` asks it for the same
// document.
//
// Thread-safety: one thread (the command's).
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "apps/train_flags.hpp"
#include <troupe/actors/run_status.hpp>
#include <troupe/io/node_events.hpp>
#include <troupe/status/status_server.hpp>

namespace troupe {

class status_serving {
public:
  /// Nothing when cli.output.status_listen is empty. Otherwise sets cli.output.status, binds
  /// the address and prints "Status: http://HOST:PORT/ (live page; /status, /metrics)" to
  /// `out`. Throws usage_error naming --status-listen when the address cannot be bound.
  /// `keep_status`: sets cli.output.status even without an address (a scheduler's, for ctl).
  status_serving(train_command_line& cli, std::ostream& out, bool keep_status = false);

  /// The scheduler's records, told to the status too (its nodes' joins, losses, adoptions):
  /// makes `events` (recording nowhere) when the node keeps none. No-op without a status.
  void watch(std::shared_ptr<node_events>& events, int pid);

  /// The run's end, for a page still open: finished, failed (with why) or stopped.
  void end(const std::string& state, const std::string& failure = "");

  /// The /status document of the run as it is now (status_json.hpp); empty without a status.
  std::function<std::string()> document() const;

private:
  std::shared_ptr<run_status> status_;
  std::unique_ptr<status_server> server_;
};

} // namespace troupe
