// The timeline recorder and the merge of several processes' files (troupe/io/timeline.hpp).
// Events are kept as plain values per track and turned into JSON only at the end, through
// nlohmann-json, so recording never formats text and the file's strings are escaped right.
#include <troupe/io/timeline.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include <troupe/io/atomic_file.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

using json_value = nlohmann::ordered_json;

std::int64_t wall_micros_now() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

json_value metadata(const char* what, const std::string& name, int pid, std::size_t tid,
                    std::int64_t ts) {
  return json_value{{"name", what}, {"ph", "M"},  {"ts", ts},
                    {"pid", pid},   {"tid", tid}, {"args", json_value{{"name", name}}}};
}

// The offset a part records ("otherData", set_clock_offset); none when it records none.
std::optional<clock_offset> recorded_offset(const std::string& path, const json_value& part) {
  if (!part.contains("otherData") || !part["otherData"].contains("clock_offset_us"))
    return std::nullopt;
  const auto& other = part["otherData"];
  const auto& offset = other["clock_offset_us"];
  const auto uncertainty = other.value("clock_uncertainty_us", json_value(0));
  if (!offset.is_number_integer() || !uncertainty.is_number_integer()
      || uncertainty.get<std::int64_t>() < 0)
    throw io_error(path
                   + ": otherData.clock_offset_us and clock_uncertainty_us must be "
                     "integers (microseconds; the uncertainty >= 0)");
  return clock_offset{offset.get<std::int64_t>(), uncertainty.get<std::int64_t>()};
}

std::string clock_label(const json_value& part, const std::optional<clock_offset>& measured) {
  if (!measured)
    return "clock: its own (no offset measured)";
  const auto reference = part["otherData"].value("clock_reference", std::string("reference"));
  return "clock: the " + reference + "'s, shifted " + std::to_string(measured->offset)
         + " us (within " + std::to_string(measured->uncertainty) + " us)";
}

} // namespace

timeline_recorder::timeline_recorder(std::string process_name)
    : process_(std::move(process_name)), steady_origin_(clock::now()),
      unix_origin_(wall_micros_now()) {}

void timeline_recorder::set_process_name(std::string name) {
  std::lock_guard<std::mutex> guard(mutex_);
  process_ = std::move(name);
}

timeline_recorder::track_id timeline_recorder::track(const std::string& name) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (std::size_t i = 0; i < tracks_.size(); ++i)
    if (tracks_[i].name == name)
      return i;
  tracks_.emplace_back();
  tracks_.back().name = name;
  return tracks_.size() - 1;
}

std::int64_t timeline_recorder::unix_micros(clock::time_point t) const {
  return unix_origin_
         + std::chrono::duration_cast<std::chrono::microseconds>(t - steady_origin_).count();
}

void timeline_recorder::set_clock_offset(std::string reference, std::int64_t offset,
                                         std::int64_t uncertainty) {
  std::lock_guard<std::mutex> guard(mutex_);
  clock_reference_ = std::move(reference);
  clock_offset_ = offset;
  clock_uncertainty_ = uncertainty;
}

std::int64_t timeline_clock_micros(const timeline_recorder* recorder) {
  return recorder ? recorder->unix_micros(timeline_recorder::clock::now()) : wall_micros_now();
}

std::optional<clock_offset> clock_offset_of(std::int64_t sent, std::int64_t received,
                                            std::int64_t answered, std::int64_t arrived) {
  const auto in_flight = (arrived - sent) - (answered - received);
  if (arrived < sent || answered < received || in_flight < 0)
    return std::nullopt;
  // Summed before halving so that an odd sum loses half a microsecond, not one.
  return clock_offset{((received - sent) + (answered - arrived)) / 2, (in_flight + 1) / 2};
}

timeline_recorder::event timeline_recorder::make_event(char phase, std::string name,
                                                       std::int64_t ts,
                                                       std::initializer_list<timeline_arg> args,
                                                       std::string detail) {
  event e;
  e.phase = phase;
  e.name = std::move(name);
  e.ts = ts;
  for (const auto& arg : args)
    if (e.arg_count < std::size(e.args))
      e.args[e.arg_count++] = arg;
  e.detail = std::move(detail);
  return e;
}

void timeline_recorder::append(track_id track, event e) {
  track_events* t = nullptr;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (track >= tracks_.size())
      throw std::out_of_range("timeline: no track " + std::to_string(track));
    t = &tracks_[track];
  }
  std::lock_guard<std::mutex> guard(t->mutex);
  if (e.phase == 'B')
    ++t->open;
  if (e.phase == 'E') {
    if (t->open == 0)
      return; // nothing to end: an unmatched end would break the trace's nesting
    --t->open;
  }
  t->events.push_back(std::move(e));
}

void timeline_recorder::complete(track_id track, std::string name, clock::time_point start,
                                 clock::time_point end, std::initializer_list<timeline_arg> args,
                                 std::string detail) {
  auto e = make_event('X', std::move(name), unix_micros(start), args, std::move(detail));
  e.dur = std::max<std::int64_t>(0, unix_micros(end) - e.ts);
  append(track, std::move(e));
}

void timeline_recorder::begin(track_id track, std::string name,
                              std::initializer_list<timeline_arg> args) {
  append(track, make_event('B', std::move(name), unix_micros(clock::now()), args, {}));
}

void timeline_recorder::end(track_id track) {
  append(track, make_event('E', {}, unix_micros(clock::now()), {}, {}));
}

void timeline_recorder::instant(track_id track, std::string name, std::string detail,
                                std::initializer_list<timeline_arg> args) {
  append(track,
         make_event('i', std::move(name), unix_micros(clock::now()), args, std::move(detail)));
}

std::string timeline_recorder::json(int pid) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto events = json_value::array();
  events.push_back(metadata("process_name", process_, pid, 0, unix_origin_));
  const auto now = unix_micros(clock::now());
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    const auto tid = i + 1;
    std::vector<event> track;
    int open = 0;
    {
      std::lock_guard<std::mutex> track_guard(tracks_[i].mutex);
      track = tracks_[i].events;
      open = tracks_[i].open;
    }
    // Time order; at one microsecond the longer span first, so it encloses the shorter.
    std::stable_sort(track.begin(), track.end(), [](const event& a, const event& b) {
      auto key = [](const event& e) { return e.phase == 'X' ? -e.dur : 0; };
      return a.ts != b.ts ? a.ts < b.ts : key(a) < key(b);
    });
    for (; open > 0; --open)
      track.push_back(make_event('E', {}, std::max(now, track.back().ts), {}, {}));
    events.push_back(metadata("thread_name", tracks_[i].name, pid, tid, unix_origin_));
    for (const auto& e : track) {
      json_value record{{"name", e.name},
                        {"ph", std::string(1, e.phase)},
                        {"ts", e.ts},
                        {"pid", pid},
                        {"tid", tid}};
      if (e.phase == 'X')
        record["dur"] = e.dur;
      if (e.phase == 'i')
        record["s"] = "t";
      if (e.arg_count > 0 || !e.detail.empty()) {
        auto args = json_value::object();
        for (std::uint8_t a = 0; a < e.arg_count; ++a)
          args[e.args[a].key] = e.args[a].value;
        if (!e.detail.empty())
          args["detail"] = e.detail;
        record["args"] = std::move(args);
      }
      events.push_back(std::move(record));
    }
  }
  auto trace = json_value{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  if (!clock_reference_.empty())
    trace["otherData"] = json_value{{"clock_reference", clock_reference_},
                                    {"clock_offset_us", clock_offset_},
                                    {"clock_uncertainty_us", clock_uncertainty_}};
  return trace.dump() + "\n";
}

void timeline_recorder::write(const std::string& path) const {
  const auto text = json();
  write_file_atomically(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

std::string merge_timelines(const std::vector<timeline_part>& parts, std::size_t* shifted) {
  auto merged = json_value::array();
  if (shifted)
    *shifted = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& path = parts[i].path;
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw io_error(path + ": cannot read this timeline part");
    json_value part;
    try {
      part = json_value::parse(in);
    } catch (const std::exception& e) {
      throw io_error(path + ": not a timeline (JSON): " + e.what());
    }
    if (!part.is_object() || !part.contains("traceEvents") || !part["traceEvents"].is_array())
      throw io_error(path + ": not a timeline: no \"traceEvents\" array");
    const auto measured = recorded_offset(path, part);
    if (shifted && measured)
      ++*shifted;
    const auto offset = parts[i].offset + (measured ? measured->offset : 0);
    std::optional<std::int64_t> first;
    for (auto& e : part["traceEvents"]) {
      if (!e.is_object() || !e.contains("ts") || !e["ts"].is_number_integer())
        throw io_error(path + ": not a timeline: an event without an integer \"ts\"");
      e["pid"] = static_cast<int>(i + 1);
      e["ts"] = e["ts"].get<std::int64_t>() + offset;
      first = std::min(first.value_or(e["ts"].get<std::int64_t>()), e["ts"].get<std::int64_t>());
      merged.push_back(std::move(e));
    }
    merged.push_back(json_value{{"name", "process_labels"},
                                {"ph", "M"},
                                {"ts", first.value_or(0)},
                                {"pid", static_cast<int>(i + 1)},
                                {"tid", 0},
                                {"args", json_value{{"labels", clock_label(part, measured)}}}});
  }
  return json_value{{"traceEvents", std::move(merged)}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

} // namespace troupe
