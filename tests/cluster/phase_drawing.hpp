// What a node machine's tests share: its table of moves read from the drawing in
// docs/architecture.md (the rows between `<!-- phases: NAME -->` and `<!-- end phases -->`), and
// the table's shape checks (every phase reached from the first, every phase but the last
// reaches the last, the last leads nowhere).
#pragma once

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "cluster/phase_machine.hpp"

namespace troupe::testing {

using drawn_edge = std::tuple<std::string, std::string, std::string>;

inline std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(' ');
  const auto b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

/// The rows of the drawing named `machine`: (from, to, event); empty when there is none.
inline std::set<drawn_edge> drawn_edges(const std::string& doc, const std::string& machine) {
  std::ifstream in(doc);
  std::set<drawn_edge> out;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "<!-- phases: " + machine + " -->") {
      inside = true;
      continue;
    }
    if (line == "<!-- end phases -->")
      inside = false;
    if (!inside || line.rfind("| ", 0) != 0 || line.rfind("| from", 0) == 0)
      continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    std::string cell;
    while (std::getline(row, cell, '|'))
      cells.push_back(trimmed(cell));
    if (cells.size() >= 3)
      out.emplace(cells[0], cells[1], cells[2]);
  }
  return out;
}

inline std::set<drawn_edge> table_edges(const std::vector<phase_edge>& edges) {
  std::set<drawn_edge> out;
  for (const auto& e : edges)
    out.emplace(e.from, e.to, e.event);
  return out;
}

/// The phases reachable from `from` along `edges` (itself included).
inline std::set<std::string> reachable(const std::vector<phase_edge>& edges,
                                       const std::string& from) {
  std::set<std::string> seen{from};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& e : edges)
      if (seen.count(e.from) && seen.insert(e.to).second)
        grew = true;
  }
  return seen;
}

/// Checks the shape of a machine's table of moves: `phases` phases (the first its start, the
/// last its end), every move joins two of them, every phase is reached from the first and
/// reaches the last, and the last leads nowhere.
template <class Machine>
void check_table_shape(const std::vector<phase_edge>& edges, std::size_t phases) {
  const auto names = Machine::phase_names();
  REQUIRE(names.size() == phases);
  const std::set<std::string> all(names.begin(), names.end());
  for (const auto& e : edges) {
    CHECK(all.count(e.from) == 1);
    CHECK(all.count(e.to) == 1);
  }
  CHECK(reachable(edges, names.front()) == all);
  for (const auto& p : all)
    CHECK(reachable(edges, p).count(names.back()) == 1);
  CHECK(reachable(edges, names.back()) == std::set<std::string>{names.back()});
}

} // namespace troupe::testing
