// A node's machine-readable record of its life (`troupe node --events FILE`): one JSON object a
// line, e.g.
//   {"t":1796224801.25,"rank":1,"pid":4242,"epoch":0,"batch":8,"event":"batch","role":"worker"}
//
// Scripts that fault a cluster at chosen moments, or check how a run went, read these records,
// never the log lines written for people: a record's fields are named and typed, and its
// wording never changes with a log line's. Every record holds "t" (the wall clock, seconds since
// the epoch, as a float: records of different processes on one host compare), "event" (one
// word), "role", "rank" (-1 while not yet known) and "pid", then the event's own fields. The
// events and their fields are listed in docs/operations.md, "Event records".
//
// A record is written whole and flushed as it is made (jsonl_writer), so a reader polling the
// file sees it at once, and a killed node's file ends with its last whole record. A record that
// cannot be written never ends the run: it is dropped, the first failure kept for the host to
// report (failure()).
//
// Thread-safety: every member may be called from several threads.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// An event's own fields: numbers first, then strings, each in the given order.
struct event_fields {
  std::vector<std::pair<std::string, double>> numbers;
  std::vector<std::pair<std::string, std::string>> strings;
};

class node_events {
public:
  /// Where a record's line goes: its numbers, then its strings (jsonl_writer::write). Throws
  /// what it cannot write.
  using line_sink = std::function<void(const std::vector<std::pair<std::string, double>>&,
                                       const std::vector<std::pair<std::string, std::string>>&)>;

  /// Who else is told each record as it is made (the status server's view of a cluster):
  /// the event and its own fields. Must not throw.
  using observer = std::function<void(const std::string& event, const event_fields& fields)>;

  /// Records of the process `pid` in `role` (scheduler, server, worker, launch) at `rank`; a
  /// null sink writes nowhere (records then go only to the observer).
  node_events(line_sink sink, std::string role, int rank, int pid);

  /// Records appended to `path` (created if missing: a node started again continues its file)
  /// for this process. Throws io_error naming the path when it cannot be opened for writing.
  static std::shared_ptr<node_events> append_to(const std::string& path, std::string role,
                                                int rank);

  /// Writes one record of `event` with the common fields first. Never throws.
  void record(const std::string& event, const event_fields& fields = {});

  /// Tells `watcher` every later record (replacing any earlier one).
  void observe(observer watcher);

  /// The rank later records carry (a member learns its own once assigned).
  void set_rank(int rank);

  /// The first failed write's error; empty while none failed.
  std::string failure() const;

private:
  line_sink sink_;
  std::string role_;
  int pid_;
  mutable std::mutex mutex_;
  int rank_;
  std::string failure_;
  observer observer_;
};

/// Records `event` when `events` is set (a node runs without records when not asked for them).
void record_event(const std::shared_ptr<node_events>& events, const std::string& event,
                  const event_fields& fields = {});

} // namespace troupe
