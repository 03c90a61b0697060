#include "apps/ctl_status_text.hpp"

#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace troupe {

namespace {

using json = nlohmann::json;

std::string fixed(double x, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, x);
  return text;
}

std::string megabytes(std::uint64_t bytes) {
  return fixed(static_cast<double>(bytes) / 1e6, 1) + " MB";
}

std::string run_line(const json& d) {
  const auto& at = d.at("position");
  std::string line = "run: " + d.at("state").get<std::string>() + ", epoch "
                     + std::to_string(at.at("epoch").get<std::int64_t>()) + " of "
                     + std::to_string(d.at("epochs").get<std::int64_t>()) + ", step "
                     + std::to_string(at.at("step").get<std::int64_t>());
  if (at.at("batch").get<std::int64_t>() >= 0)
    line += " (batch " + std::to_string(at.at("batch").get<std::int64_t>() + 1) + " of "
            + std::to_string(at.at("batches").get<std::int64_t>()) + ")";
  if (!d.at("failure").is_null())
    line += ": " + d.at("failure").get<std::string>();
  const auto& now = d.at("current");
  line += "\nnow: " + fixed(now.at("samples_per_s").get<double>(), 1) + " samples/s, loss "
          + (now.at("loss").is_null() ? std::string("-") : fixed(now.at("loss").get<double>(), 4))
          + ", accuracy " + fixed(now.at("accuracy").get<double>(), 4) + "\n";
  return line;
}

std::string node_line(const json& n) {
  std::string line =
    "  " + n.at("name").get<std::string>() + " (" + n.at("role").get<std::string>()
    + (n.at("host").get<std::string>().empty() ? "" : " on " + n.at("host").get<std::string>())
    + "): " + n.at("state").get<std::string>();
  if (!n.at("adopted_by").is_null())
    line += ", its ranks run by " + n.at("adopted_by").get<std::string>();
  std::string ranks;
  for (const auto& r : n.at("ranks"))
    ranks += (ranks.empty() ? "" : ",") + std::to_string(r.get<int>());
  if (!ranks.empty())
    line +=
      "; ranks " + ranks + ", " + fixed(n.at("samples_per_s").get<double>(), 1) + " samples/s";
  line += "; traffic in " + megabytes(n.at("rx").get<std::uint64_t>()) + ", out "
          + megabytes(n.at("tx").get<std::uint64_t>()) + "\n";
  return line;
}

// The changes made while it trained, each with the step it counts from.
std::string changes_text(const json& d) {
  const auto& changes = d.at("changes");
  std::string text = std::string("changes:") + (changes.empty() ? " none" : "") + "\n";
  for (const auto& c : changes)
    text += "  " + c.at("change").get<std::string>() + " from step "
            + std::to_string(c.at("step").get<std::int64_t>()) + " (after epoch "
            + std::to_string(c.at("epoch").get<std::int64_t>()) + "'s training; "
            + c.at("by").get<std::string>() + ")\n";
  return text;
}

} // namespace

std::string status_text(const std::string& document) {
  json d;
  try {
    d = json::parse(document);
    std::string text = run_line(d);
    if (!d.at("nodes").empty())
      text += "nodes:\n";
    for (const auto& n : d.at("nodes"))
      text += node_line(n);
    std::string stragglers;
    for (const auto& e : d.at("history"))
      if (!e.at("straggler").is_null())
        stragglers += (stragglers.empty() ? "" : ", ") + std::string("epoch ")
                      + std::to_string(e.at("epoch").get<std::int64_t>()) + " "
                      + e.at("straggler").get<std::string>();
    text += "stragglers: " + (stragglers.empty() ? std::string("none") : stragglers) + "\n";
    const auto& faults = d.at("faults");
    text += "faults survived: " + std::to_string(d.at("nodes_lost").get<std::int64_t>())
            + " node(s) lost";
    for (const auto& f : faults)
      text += "\n  " + f.at("kind").get<std::string>() + ": " + f.at("message").get<std::string>();
    return text + "\n" + changes_text(d);
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("the scheduler's status is no status document: ")
                                + e.what());
  }
}

} // namespace troupe
