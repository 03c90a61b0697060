// log_budget.hpp: windows start at the first line after the last window ended, so a quiet node
// spends nothing and a burst is always let through its first `lines` lines.
#include "cluster/log_budget.hpp"

namespace troupe {

std::optional<std::string> log_budget::take(const std::string& line, clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_ || now - window_start_ >= window_) {
    started_ = true;
    window_start_ = now;
    used_ = 0;
  }
  if (used_ >= lines_) {
    ++left_out_;
    return std::nullopt;
  }
  ++used_;
  if (left_out_ == 0)
    return line;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(window_).count();
  std::string noted = line + " (" + std::to_string(left_out_) + " more like it not logged: at most "
                      + std::to_string(lines_) + " every " + std::to_string(seconds) + " s)";
  left_out_ = 0;
  return noted;
}

} // namespace troupe
