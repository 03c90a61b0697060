// Node event records (see node_events.hpp). The common fields are put before the event's own,
// so that a record's first keys always say when, who and what; the line itself is the metrics
// writer's (jsonl_writer): whole, flushed, locked against a second writer of the same file.
#include <troupe/io/node_events.hpp>

#include <chrono>
#include <exception>

#include <unistd.h>

#include <troupe/io/metrics_log.hpp>

namespace troupe {

namespace {

double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

} // namespace

node_events::node_events(line_sink sink, std::string role, int rank, int pid)
    : sink_(std::move(sink)), role_(std::move(role)), pid_(pid), rank_(rank) {}

std::shared_ptr<node_events> node_events::append_to(const std::string& path, std::string role,
                                                    int rank) {
  auto file = std::make_shared<jsonl_writer>(path, true);
  return std::make_shared<node_events>(
    [file](const auto& numbers, const auto& strings) { file->write(numbers, strings); },
    std::move(role), rank, static_cast<int>(::getpid()));
}

void node_events::record(const std::string& event, const event_fields& fields) {
  std::vector<std::pair<std::string, double>> numbers{{"t", wall_seconds()}};
  std::vector<std::pair<std::string, std::string>> strings{{"event", event}, {"role", role_}};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    numbers.push_back({"rank", static_cast<double>(rank_)});
  }
  numbers.push_back({"pid", static_cast<double>(pid_)});
  numbers.insert(numbers.end(), fields.numbers.begin(), fields.numbers.end());
  strings.insert(strings.end(), fields.strings.begin(), fields.strings.end());
  try {
    if (sink_)
      sink_(numbers, strings);
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.empty())
      failure_ = e.what();
  }
  observer watcher;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    watcher = observer_;
  }
  if (watcher)
    watcher(event, fields);
}

void node_events::observe(observer watcher) {
  std::lock_guard<std::mutex> lock(mutex_);
  observer_ = std::move(watcher);
}

void node_events::set_rank(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  rank_ = rank;
}

std::string node_events::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void record_event(const std::shared_ptr<node_events>& events, const std::string& event,
                  const event_fields& fields) {
  if (events)
    events->record(event, fields);
}

} // namespace troupe
