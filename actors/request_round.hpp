// One fan-out of requests and the count of their answers, as the checkpoint actors make them
// (a save asks every shard and compute, a manifest asks every node): the round ends with
// `done` after its last answer, or with its first failure, after which later answers and
// failures are dropped. Private to actors/.
#pragma once

#include <cstddef>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include <caf/error.hpp>

namespace troupe {

// A checkpoint actor's line ("checkpoint: saved PATH"): to `log`, else to standard error in one
// write (processes may share the stream).
inline void log_checkpoint_line(const std::function<void(const std::string&)>& log,
                                const std::string& line) {
  if (log)
    log(line);
  else
    std::cerr << (line + "\n") << std::flush;
}

struct request_round {
  std::size_t missing = 0;
  bool failed = false;
};

// Counts one answer of `r`; runs `done` after the last, unless the round failed.
template <class Done> void answered(const std::shared_ptr<request_round>& r, Done& done) {
  if (r->failed)
    return;
  if (--r->missing == 0)
    done();
}

// The round's first failure is its answer; later ones are dropped.
template <class Promise>
void round_failed(const std::shared_ptr<request_round>& r, Promise promise, caf::error err) {
  if (r->failed)
    return;
  r->failed = true;
  promise.deliver(std::move(err));
}

} // namespace troupe
