// Reading a timeline back in tests: its events (not the metadata), each with its track's name.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <troupe/io/timeline.hpp>

namespace troupe::test {

inline std::vector<std::pair<std::string, nlohmann::json>>
trace_events_of(const timeline_recorder& recorded) {
  const auto trace = nlohmann::json::parse(recorded.json());
  std::map<int, std::string> tracks;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      tracks[e["tid"].get<int>()] = e["args"]["name"];
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] != "M")
      out.emplace_back(tracks[e["tid"].get<int>()], e);
  return out;
}

} // namespace troupe::test
