// A budget for log lines that a peer can cause at will: a listener refuses every peer that
// cannot prove the cluster secret, and one such peer retrying in a loop (or many) would
// otherwise fill the node's log with the same refusal. The budget lets `lines` lines through
// per `window`; lines beyond it are counted, and the next line let through says how many were
// left out.
//
// Thread-safety: take() may be called from any thread (a listener's channels share one).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace troupe {

class log_budget {
public:
  using clock = std::chrono::steady_clock;

  log_budget(int lines, clock::duration window) : lines_(lines), window_(window) {}

  /// `line` as it is to be written (with a note of the lines left out since the last one let
  /// through), or nothing when the budget of the window that holds `now` is spent.
  std::optional<std::string> take(const std::string& line, clock::time_point now = clock::now());

private:
  std::mutex mutex_;
  const int lines_;
  const clock::duration window_;
  clock::time_point window_start_{};
  bool started_ = false;
  int used_ = 0;
  std::uint64_t left_out_ = 0;
};

} // namespace troupe
