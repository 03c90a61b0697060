// Ctrl-C during `troupe train`: the run stops with a line saying where it was, its metrics
// file complete up to the last whole record, and exit status 130 (128 + SIGINT, as shells do).
//
// SIGINT is blocked in every thread (the mask is set before the actor system starts its
// threads, which inherit it) and taken by one watcher thread with sigtimedwait, so no code runs
// in a signal handler. The metrics file needs no flushing of its own: every record is written
// whole with one write(2) as it is made (io/metrics_log.hpp), so what is on disk at the signal
// is valid JSON Lines. The watcher prints the line and ends the process with _Exit, without
// waiting for a training step in flight.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <troupe/actors/metrics_actor.hpp>

namespace troupe {

class interrupt_watch {
public:
  /// Blocks SIGINT in the calling thread (and so in threads it starts later) and starts the
  /// watcher, which reports `position` when the signal comes.
  /// `command` names the process in that line ("troupe train", "troupe node").
  /// `before_exit`, when given, runs on the watcher's thread before the line and the exit (a
  /// scheduler tells its members why it ends).
  explicit interrupt_watch(std::shared_ptr<run_position> position,
                           std::string command = "troupe train",
                           std::function<void()> before_exit = nullptr);
  /// The same for a process that is no training run itself (a cluster's server or worker):
  /// `where` says where it was ("epoch 3 at batch 12 of 40"); the line then says nothing of
  /// a metrics file, which such a process does not write.
  interrupt_watch(std::function<std::string()> where, std::string command);
  /// Once the watcher took the signal (the run ended because of it): waits for the watcher,
  /// which says where the run was and ends the process with status 130. Never returns.
  [[noreturn]] void end_process();
  /// Stops the watcher and unblocks SIGINT again.
  ~interrupt_watch();
  interrupt_watch(const interrupt_watch&) = delete;
  interrupt_watch& operator=(const interrupt_watch&) = delete;

private:
  void start(std::function<std::string()> line, std::function<void()> before_exit = nullptr);

  std::string command_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

} // namespace troupe
