// See run_changes.hpp.
#include <troupe/cluster/run_changes.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/graph/config/key_table.hpp>

namespace troupe {

namespace {

struct settable {
  const char* path;
  shard_setting setting;
};

constexpr settable settables[] = {{"optimizer.lr", shard_setting::lr},
                                  {"optimizer.momentum", shard_setting::momentum},
                                  {"optimizer.wd", shard_setting::wd},
                                  {"topology.staleness", shard_setting::staleness}};

// By its path or by its name alone ("lr", "staleness").
const settable* settable_of(const std::string& key) {
  for (const auto& s : settables) {
    const std::string path = s.path;
    if (key == path || key == path.substr(path.find('.') + 1))
      return &s;
  }
  return nullptr;
}

const char* path_of(shard_setting setting) {
  for (const auto& s : settables)
    if (s.setting == setting)
      return s.path;
  return "unknown.setting";
}

// The topology statement's keys are no rows of the key table; the bound shares the
// topology's limit (topology_config.cpp) and adds -1, no bound.
const key_range staleness_range{-1, max_staleness, true, false, false, "-1: none, async"};

const key_range& range_of(const settable& s) {
  return s.setting == shard_setting::staleness ? staleness_range : range_of_key(s.path);
}

caf::error refused(const std::string& why) {
  return make_error(errc::bad_request, why);
}

// The whole of `text` as a finite number; false for anything else ("0.1x", "nan", "").
bool number_of(const std::string& text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())))
    return false;
  std::size_t used = 0;
  try {
    out = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size() && std::isfinite(out);
}

bool uses_momentum(optimizer_kind rule) {
  return rule == optimizer_kind::sgd || rule == optimizer_kind::rmsprop
         || rule == optimizer_kind::lars;
}

} // namespace

std::string settable_keys() {
  std::string out;
  for (const auto& s : settables)
    out += (out.empty() ? "" : ", ") + std::string(s.path);
  return out;
}

caf::expected<shard_change> parse_setting(const std::string& assignment, const training_job& job,
                                          std::int64_t step) {
  const auto rule = job.optimizer.kind;
  const auto eq = assignment.find('=');
  if (eq == std::string::npos)
    return refused("set takes KEY=VALUE (it was given '" + assignment + "')");
  const auto key = assignment.substr(0, eq);
  const auto value = assignment.substr(eq + 1);
  const auto* s = settable_of(key);
  if (!s)
    return refused("set " + key + ": no key a running job can change (it changes " + settable_keys()
                   + ")");
  double v = 0;
  if (!number_of(value, v))
    return refused("set " + std::string(s->path) + ": '" + value + "' is not a number");
  const auto& range = range_of(*s);
  if (!range.contains(v) || (range.integral && v != std::floor(v)))
    return refused("set " + std::string(s->path) + "=" + value
                   + ": out of range: " + std::string(s->path) + " must be " + range_text(range));
  if (s->setting == shard_setting::momentum && !uses_momentum(rule))
    return refused("set " + std::string(s->path) + ": the run's optimizer, " + optimizer_name(rule)
                   + ", has no momentum");
  if (s->setting == shard_setting::staleness && job.topology.level(aggregation_scope::all))
    return refused("set " + std::string(s->path) + ": the run's topology, " + job.topology.name
                   + ", ends in aggregate(all), the shard's one source, and a staleness bound "
                     "needs several (switching to another route set is not done yet)");
  return shard_change{s->setting, v, step};
}

std::string setting_text(const shard_change& change) {
  return "set " + std::string(path_of(change.setting)) + "=" + shortest_number(change.value);
}

caf::expected<std::vector<run_change>> read_recorded_changes(const std::string& path,
                                                             const training_job& job) {
  std::ifstream in(path);
  if (!in)
    return make_error(errc::bad_data, "--replay-changes " + path + ": cannot be read");
  std::vector<run_change> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto at = path + ":" + std::to_string(number) + ": ";
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object())
      return make_error(errc::bad_data, at + "not a JSON object");
    if (!record.contains("changes"))
      continue;
    const auto& changes = record["changes"];
    if (!changes.is_array())
      return make_error(errc::bad_data, at + "\"changes\" is not a list");
    for (const auto& c : changes) {
      if (!c.is_object() || !c.contains("change") || !c["change"].is_string() || !c.contains("step")
          || !c["step"].is_number_integer() || c["step"].get<std::int64_t>() < 0)
        return make_error(errc::bad_data,
                          at + "a change needs \"change\" (its words) and \"step\" (at least 0)");
      run_change r;
      r.text = c["change"].get<std::string>();
      r.step = c["step"].get<std::int64_t>();
      if (r.text == "checkpoint")
        r.kind = run_change_kind::checkpoint;
      else if (r.text == "stop")
        r.kind = run_change_kind::stop;
      else if (r.text.rfind("set ", 0) == 0) {
        auto set = parse_setting(r.text.substr(4), job, r.step);
        if (!set)
          return make_error(errc::bad_data, at + error_text(set.error()));
        r.set = *set;
      } else
        return make_error(errc::bad_data,
                          at + "'" + r.text + "' is no change (set KEY=VALUE, checkpoint, stop)");
      out.push_back(std::move(r));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const run_change& a, const run_change& b) { return a.step < b.step; });
  return out;
}

} // namespace troupe
