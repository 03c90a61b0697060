#include "epoch_traffic.hpp"

#include <cstdio>
#include <numeric>

#include <nlohmann/json.hpp>

namespace troupe {

namespace {

void accumulate_into(std::vector<std::uint64_t>& sum, const std::vector<std::uint64_t>& more) {
  if (sum.size() < more.size())
    sum.resize(more.size());
  for (std::size_t k = 0; k < more.size(); ++k)
    sum[k] += more[k];
}

std::vector<std::uint64_t> minus(const std::vector<std::uint64_t>& now, const std::vector<std::uint64_t>& before) {
  std::vector<std::uint64_t> d(now.size());
  for (std::size_t k = 0; k < now.size(); ++k)
    d[k] = now[k] - (k < before.size() && before[k] <= now[k] ? before[k] : 0);
  return d;
}

std::uint64_t total(const std::vector<std::uint64_t>& v) { return std::accumulate(v.begin(), v.end(), std::uint64_t{0}); }

nlohmann::ordered_json rx_tx(std::uint64_t rx, std::uint64_t tx) { return {{"rx", rx}, {"tx", tx}}; }

} // namespace

std::string bytes_text(std::uint64_t bytes) {
  char text[32];
  if (bytes >= (std::uint64_t{1} << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  else if (bytes >= (std::uint64_t{1} << 20))
    std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= 1024)
    std::snprintf(text, sizeof text, "%.2f KiB", static_cast<double>(bytes) / 1024);
  else
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  return text;
}

void epoch_traffic::add(const std::string& node, const std::vector<peer_traffic>& peers) {
  auto& table = now_[node];
  table.clear();
  for (const auto& p : peers) {
    auto& sum = table[p.peer];
    accumulate_into(sum.in, p.bytes_in);
    accumulate_into(sum.out, p.bytes_out);
  }
}

epoch_traffic::figures epoch_traffic::take(std::int64_t epoch) {
  figures f;
  auto json = nlohmann::ordered_json::object();
  f.line = "Epoch[" + std::to_string(epoch) + "] Traffic:";
  bool first_node = true;
  for (const auto& [node, peers] : now_) {
    std::vector<std::uint64_t> kinds_in, kinds_out;
    auto peer_json = nlohmann::ordered_json::object();
    for (const auto& [peer, now] : peers) {
      const auto& before = last_[node][peer];
      const auto in = minus(now.in, before.in), out = minus(now.out, before.out);
      accumulate_into(kinds_in, in);
      accumulate_into(kinds_out, out);
      peer_json[peer] = rx_tx(total(in), total(out));
    }
    auto kind_json = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < std::max(kinds_in.size(), kinds_out.size()); ++k) {
      const auto rx = k < kinds_in.size() ? kinds_in[k] : 0, tx = k < kinds_out.size() ? kinds_out[k] : 0;
      if (rx || tx)
        kind_json[kind_name(k)] = rx_tx(rx, tx);
    }
    const auto rx = total(kinds_in), tx = total(kinds_out);
    json[node] = {{"rx", rx}, {"tx", tx}, {"kinds", std::move(kind_json)}, {"peers", std::move(peer_json)}};
    f.line += (first_node ? " " : "; ") + node + " rx " + bytes_text(rx) + " tx " + bytes_text(tx);
    first_node = false;
    last_[node] = peers;
  }
  f.json = json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  now_.clear();
  return f;
}

} // namespace troupe
