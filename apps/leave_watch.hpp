// SIGTERM to a cluster worker: it drains. Rather than dying with its computes, it asks its
// scheduler to move them to other workers and, let go, ends with status 0, so a machine taken
// out of a pool (Slurm's or Kubernetes' SIGTERM before the kill) costs the run no fault. A
// SIGTERM that comes before the worker runs or after it ended, or a second one, ends the
// process at once with status 143 (128 + SIGTERM), as the signal's default would.
//
// As interrupt_watch does for SIGINT, SIGTERM is blocked in every thread (the mask is set before
// the actor system starts its threads) and taken by one watcher thread with sigtimedwait.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <troupe/cluster/cluster_node.hpp>

namespace troupe {

class leave_watch {
public:
  /// Blocks SIGTERM in the calling thread (and so in threads it starts later) and starts the
  /// watcher, which asks `leave` when the signal comes. `command` names the process in the
  /// line it prints when it ends the process itself.
  leave_watch(std::shared_ptr<worker_leave> leave, std::string command);
  /// Whether a SIGTERM asked the worker to leave (the run it ended is the drained one, or
  /// the one that could not wait for it).
  bool asked() const { return asked_; }
  /// Stops the watcher and unblocks SIGTERM again.
  ~leave_watch();
  leave_watch(const leave_watch&) = delete;
  leave_watch& operator=(const leave_watch&) = delete;

private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> asked_{false};
  std::thread watcher_;
};

} // namespace troupe
