#include "epoch_traffic.hpp"

#include <algorithm>
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

std::vector<std::uint64_t> minus(const std::vector<std::uint64_t>& now,
                                 const std::vector<std::uint64_t>& before) {
  std::vector<std::uint64_t> d(now.size());
  for (std::size_t k = 0; k < now.size(); ++k)
    d[k] = now[k] - (k < before.size() && before[k] <= now[k] ? before[k] : 0);
  return d;
}

std::uint64_t total(const std::vector<std::uint64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::uint64_t{0});
}

nlohmann::ordered_json rx_tx(std::uint64_t rx, std::uint64_t tx) {
  return {{"rx", rx}, {"tx", tx}};
}

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

void epoch_traffic::add_waits(const std::vector<node_wait>& waits) {
  for (const auto& w : waits) {
    auto& now = now_waits_[w.node];
    now.node = w.node;
    now.seconds = std::max(now.seconds, w.seconds);
    now.steps = std::max(now.steps, w.steps);
  }
}

namespace {

// The epoch's share of the waits: totals now less totals at the last take (a node that
// reports less than before, restarted, counts from zero).
std::vector<node_wait> waits_since(const std::map<std::string, node_wait>& now,
                                   const std::map<std::string, node_wait>& last) {
  std::vector<node_wait> share;
  for (const auto& [node, w] : now) {
    node_wait d = w;
    if (auto before = last.find(node); before != last.end() && before->second.steps <= w.steps
                                       && before->second.seconds <= w.seconds) {
      d.seconds -= before->second.seconds;
      d.steps -= before->second.steps;
    }
    if (d.steps > 0)
      share.push_back(d);
  }
  std::stable_sort(share.begin(), share.end(),
                   [](const node_wait& a, const node_wait& b) { return a.seconds > b.seconds; });
  return share;
}

} // namespace

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
      const auto rx = k < kinds_in.size() ? kinds_in[k] : 0,
                 tx = k < kinds_out.size() ? kinds_out[k] : 0;
      if (rx || tx)
        kind_json[kind_name(k)] = rx_tx(rx, tx);
    }
    const auto rx = total(kinds_in), tx = total(kinds_out);
    json[node] = {
      {"rx", rx}, {"tx", tx}, {"kinds", std::move(kind_json)}, {"peers", std::move(peer_json)}};
    f.line += (first_node ? " " : "; ") + node + " rx " + bytes_text(rx) + " tx " + bytes_text(tx);
    first_node = false;
    last_[node] = peers;
  }
  f.json = json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  now_.clear();
  const auto share = waits_since(now_waits_, last_waits_);
  if (!share.empty()) {
    auto waits = nlohmann::ordered_json::object();
    f.waits_line = "Epoch[" + std::to_string(epoch) + "] Waited for:";
    for (std::size_t i = 0; i < share.size(); ++i) {
      const auto& w = share[i];
      waits[w.node] = {{"seconds", w.seconds}, {"steps", w.steps}};
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.3f", w.seconds);
      f.waits_line += std::string(i == 0 ? " " : ", ") + w.node + " " + seconds + " s (last in "
                      + std::to_string(w.steps) + " step" + (w.steps == 1 ? "" : "s") + ")";
    }
    f.waits_json = waits.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  for (const auto& [node, w] : now_waits_)
    last_waits_[node] = w;
  now_waits_.clear();
  return f;
}

} // namespace troupe
