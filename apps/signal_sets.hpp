// What the signal watchers share (interrupt_watch: SIGINT; leave_watch: a worker's SIGTERM):
// each blocks its signal in the thread that starts it (so in every thread started later) and
// takes it on a thread of its own with sigtimedwait, and that thread blocks every signal, so
// another watcher's signal reaches that watcher's thread and no other.
#pragma once

#include <csignal>
#include <pthread.h>

namespace troupe {

/// The set of `signal` alone.
inline sigset_t signal_set(int signal) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  return set;
}

/// Blocks every signal in the calling thread (a watcher's own).
inline void block_every_signal() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

} // namespace troupe
