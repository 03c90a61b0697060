// The SIGTERM watcher of a cluster worker (leave_watch.hpp).
#include "apps/leave_watch.hpp"

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <pthread.h>

#include "apps/signal_sets.hpp"

namespace troupe {

namespace {

[[noreturn]] void end_now(const std::string& command, const std::string& why) {
  std::cout.flush();
  std::cerr << ("\n" + command + ": " + why + "\n") << std::flush; // one write
  std::_Exit(128 + SIGTERM);
}

} // namespace

leave_watch::leave_watch(std::shared_ptr<worker_leave> leave, std::string command) {
  const sigset_t set = signal_set(SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  watcher_ = std::thread([this, set, leave = std::move(leave), command = std::move(command)] {
    block_every_signal();
    const timespec poll{0, 100'000'000}; // how soon the watcher notices stop_
    while (!stop_) {
      if (sigtimedwait(&set, nullptr, &poll) != SIGTERM)
        continue;
      if (asked_)
        end_now(command, "terminated (a second SIGTERM while it was leaving the run)");
      asked_ = true;
      if (!leave || !leave->ask("SIGTERM"))
        end_now(command, "terminated (SIGTERM before it ran or after it ended)");
    }
  });
}

leave_watch::~leave_watch() {
  stop_ = true;
  watcher_.join();
  const sigset_t set = signal_set(SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

} // namespace troupe
