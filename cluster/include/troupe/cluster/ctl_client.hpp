// troupe ctl's side of the run-control protocol (node_control.hpp, run_control_actor): one
// connection to a run's scheduler, admitted with the job's secret as a node is (hello as ctl),
// one verb asked, its answer or why not, and the connection closed. Bounded: nothing waits
// past `timeout`.
//
// Thread-safety: ask_scheduler blocks its caller; call it from any thread that is no actor's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <troupe/cluster/admission.hpp>
#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

struct ctl_request {
  explicit ctl_request(cluster_secret cluster) : secret(std::move(cluster)) {}

  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  cluster_secret secret;
  std::string verb;              ///< "status", "drain"
  std::vector<std::string> args; ///< the verb's ("worker_1")
  /// How long the connection, the admission and the answer may take together.
  std::chrono::milliseconds timeout{10000};
};

/// The scheduler's answer to `request`, or the error: errc::bad_request where the scheduler
/// refused the verb (its text says why) or refused ctl itself (a wrong secret), errc::peer_down
/// where nothing answers at the address, errc::timeout past the timeout.
caf::expected<command_result_message> ask_scheduler(caf::actor_system& system,
                                                    const ctl_request& request);

} // namespace troupe
