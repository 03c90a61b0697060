#include <troupe/cluster/traffic_registry.hpp>

namespace troupe {

std::shared_ptr<traffic_registry::counters> traffic_registry::add(caf::actor_addr channel,
                                                                  std::string peer) {
  auto values = std::make_shared<counters>();
  std::lock_guard<std::mutex> lock(mutex_);
  slots_.push_back({std::move(channel), std::move(peer), values});
  return values;
}

void traffic_registry::rename(const caf::actor_addr& channel, std::string peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& s : slots_)
    if (s.channel == channel)
      s.peer = peer;
}

std::string traffic_registry::peer_of(const caf::actor_addr& channel) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : slots_)
    if (s.channel == channel)
      return s.peer;
  return {};
}

std::vector<traffic_registry::entry> traffic_registry::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<entry> out;
  for (const auto& s : slots_) {
    entry e{s.channel, {s.peer, {}, {}}};
    for (std::size_t k = 0; k < wire_kinds; ++k) {
      e.traffic.bytes_in.push_back(s.values->bytes_in[k].load(std::memory_order_relaxed));
      e.traffic.bytes_out.push_back(s.values->bytes_out[k].load(std::memory_order_relaxed));
    }
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace troupe
