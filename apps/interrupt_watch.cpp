// The SIGINT watcher (interrupt_watch.hpp).
#include "apps/interrupt_watch.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <pthread.h>

namespace troupe {

namespace {

sigset_t interrupt_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  return set;
}

} // namespace

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
  const sigset_t set = interrupt_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  watcher_ = std::thread([this, set, line = std::move(line), before_exit = std::move(before_exit)] {
    // Every signal blocked here: another watcher's signal (a worker's SIGTERM) must reach its
    // own thread, which this one, started before that watcher blocked it, could otherwise take.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
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
  const sigset_t set = interrupt_set();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

} // namespace troupe
