// See node_fences.hpp.
#include <troupe/cluster/node_fences.hpp>

namespace troupe {

bool node_fences::fence(std::uint64_t term, const std::string& why) {
  if (term == 0)
    return false;
  std::lock_guard<std::mutex> lock(mutex_);
  return fenced_.emplace(term, why).second;
}

std::optional<std::string> node_fences::fenced(std::uint64_t term) const {
  if (term == 0)
    return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = fenced_.find(term);
  if (it == fenced_.end())
    return std::nullopt;
  return it->second;
}

void node_fences::note_fenced_here(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fenced_here_)
    fenced_here_ = why;
}

std::optional<std::string> node_fences::fenced_here() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fenced_here_;
}

} // namespace troupe
