// See stand_in_timing.hpp.
#include <troupe/actors/stand_in_timing.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace troupe {

namespace {

caf::timespan fraction_of(caf::timespan whole, const std::vector<double>& done, std::size_t i) {
  if (i + 1 >= done.size())
    return whole; // exactly: rounding must not move the step's end
  const auto part = std::llround(static_cast<double>(whole.count()) * std::min(1.0, done[i]));
  return caf::timespan{static_cast<caf::timespan::rep>(part)};
}

} // namespace

stand_in_timing::stand_in_timing(const std::vector<double>& slot_work,
                                 const std::vector<std::vector<key_slice>>& route_keys,
                                 const std::vector<push_group>& groups) {
  for (std::size_t s = 0; s < slot_work.size(); ++s)
    if (!std::isfinite(slot_work[s]) || slot_work[s] < 0)
      throw std::invalid_argument("stand-in timing: the work of slot " + std::to_string(s) + " is "
                                  + std::to_string(slot_work[s]) + " (must be finite and >= 0)");
  // What group_work expects, checked here so that the message names the group.
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (auto k : groups[g].keys) {
      auto where = [g] {
        return "stand-in timing: group " + std::to_string(g) + " ";
      }; // only for a refusal
      const auto route = groups[g].shard;
      if (route >= route_keys.size())
        throw std::invalid_argument(where() + "names route " + std::to_string(route) + " of "
                                    + std::to_string(route_keys.size()));
      if (k >= route_keys[route].size())
        throw std::invalid_argument(where() + "names key " + std::to_string(k) + " of route "
                                    + std::to_string(route) + ", which has "
                                    + std::to_string(route_keys[route].size()));
      if (route_keys[route][k].slot >= slot_work.size())
        throw std::invalid_argument(where() + "holds a key of slot "
                                    + std::to_string(route_keys[route][k].slot) + " of "
                                    + std::to_string(slot_work.size()));
    }
  // A slot's work is spread over its keys by their lengths.
  shares_ = group_work(slot_work, route_keys, groups);
  double total = 0.0;
  for (auto s : shares_)
    total += s;
  for (auto& s : shares_)
    s = total > 0 ? s / total : 1.0 / static_cast<double>(shares_.size());
  const auto n = shares_.size();
  backward_done_.resize(n);
  forward_done_.resize(n);
  double sum = 0.0;
  for (std::size_t g = 0; g < n; ++g)
    backward_done_[g] = (sum += shares_[g]);
  sum = 0.0;
  for (std::size_t k = 0; k < n; ++k)
    forward_done_[k] = (sum += shares_[n - 1 - k]);
}

caf::timespan stand_in_timing::forward_end(caf::timespan forward, std::size_t k) const {
  return fraction_of(forward, forward_done_, k);
}

caf::timespan stand_in_timing::backward_due(caf::timespan backward, std::size_t g) const {
  return fraction_of(backward, backward_done_, g);
}

} // namespace troupe
