// The SIGINT watcher (interrupt_watch.hpp).
#include "apps/interrupt_watch.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <pthread.h>

#include "apps/signal_sets.hpp"

namespace troupe {

interrupt_watch::interrupt_watch(std::shared_ptr<run_position> position, std::string command,
                                 std::function<void()> before_exit)
    : command_(std::move(command)) {
  start(
    [position] {
      return "interrupted in " + position->text()
             + "; the metrics file holds every epoch finished before it";
    },
    std::move(before_exit));
}

interrupt_watch::interrupt_watch(std::function<std::string()> where, std::string command)
    : command_(std::move(command)) {
  start([where = std::move(where)] { return "interrupted " + where(); });
}

void interrupt_watch::start(std::function<std::string()> line, std::function<void()> before_exit) {
  const sigset_t set = signal_set(SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  watcher_ = std::thread([this, set, line = std::move(line), before_exit = std::move(before_exit)] {
    block_every_signal();
    const timespec poll{0, 100'000'000}; // how soon the watcher notices stop_
    while (!stop_) {
      if (sigtimedwait(&set, nullptr, &poll) != SIGINT)
        continue;
      const auto said = line(); // where the run was, before anything ends it
      if (before_exit)
        before_exit();
      std::cout.flush();
      std::cerr << ("\n" + command_ + ": " + said + "\n") << std::flush; // one write
      std::_Exit(128 + SIGINT);
    }
  });
}

void interrupt_watch::end_process() {
  watcher_.join(); // it exits the process once it has said why
  std::_Exit(128 + SIGINT);
}

interrupt_watch::~interrupt_watch() {
  stop_ = true;
  watcher_.join();
  const sigset_t set = signal_set(SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

} // namespace troupe
