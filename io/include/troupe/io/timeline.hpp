// A run's timeline (`--timeline FILE`): what each actor of a process did when, written at the
// run's end as a Chrome trace (the JSON Trace Event Format: {"traceEvents": [...]}) that
// Perfetto and chrome://tracing open. A process is the trace's "process" (its name: "troupe",
// "scheduler", "worker 0", ...), each actor that records is one of its "threads", a track
// (one per compute rank, per shard, the coordinator, the checkpoint): spans are complete
// events ("X") or begin/end pairs ("B"/"E"), moments are instants ("i"), and metadata events
// ("M") name the process and its tracks.
//
// Timestamps are microseconds since the unix epoch: a steady-clock reading (so a track never
// runs backwards) carried onto the wall clock once, when the timeline is made: the process's
// run clock (timeline_clock_micros). Hosts' wall clocks differ, so a cluster's member measures
// its offset to the scheduler's run clock from its join's round trip (clock_offset_of, NTP's
// arithmetic over the join and the assignment) and its file records it (set_clock_offset);
// merge_timelines shifts each part by its recorded offset, putting every process on the
// scheduler's clock.
//
// Recording is cheap: a holder keeps a null pointer when no timeline was asked for, and a
// record appends to its track's vector under that track's own lock (tracks of different
// actors never contend); nothing is written until write(). A track's events are sorted by
// time when written, so a span recorded at its end (after the spans inside it) still comes
// before them in the file. A span begun and never ended (a run that failed in it) is ended
// when written.
//
// Thread-safety: every member may be called from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

/// A number an event carries in its "args" (a step, a push group, a route). `key` must be a
/// string literal: it is kept as a pointer.
struct timeline_arg {
  const char* key;
  std::int64_t value;
};

class timeline_recorder {
public:
  using clock = std::chrono::steady_clock;
  using track_id = std::size_t;

  /// A timeline of the process named `process_name`.
  explicit timeline_recorder(std::string process_name);

  /// The process's name from now on (a member learns its role and rank once assigned).
  void set_process_name(std::string name);

  /// The track named `name`, made on first use: the same name gives the same track.
  track_id track(const std::string& name);

  /// A span on `track` from `start` to `end`; `detail` (may be empty) goes into its args as
  /// "detail". At most three args are kept.
  void complete(track_id track, std::string name, clock::time_point start, clock::time_point end,
                std::initializer_list<timeline_arg> args = {}, std::string detail = {});
  /// A span on `track` begun now, ended by the next end() on that track (spans nest).
  void begin(track_id track, std::string name, std::initializer_list<timeline_arg> args = {});
  void end(track_id track);
  /// A moment on `track`, now.
  void instant(track_id track, std::string name, std::string detail = {},
               std::initializer_list<timeline_arg> args = {});

  /// Microseconds since the unix epoch of a steady-clock reading of this process.
  std::int64_t unix_micros(clock::time_point t) const;

  /// This process's clock is `offset` microseconds behind `reference`'s (add it to a
  /// timestamp to get `reference`'s time), known to within `uncertainty` microseconds. The
  /// file records it ("otherData") and merge_timelines applies it; timestamps stay as taken.
  void set_clock_offset(std::string reference, std::int64_t offset, std::int64_t uncertainty);

  /// The trace as Chrome trace JSON, process id `pid`, each track's events in time order.
  std::string json(int pid = 1) const;
  /// Writes json() to `path` atomically (io/atomic_file.hpp). Throws io_error naming the path.
  void write(const std::string& path) const;

private:
  struct event {
    char phase = 'X';
    std::string name;
    std::int64_t ts = 0;  // microseconds since the unix epoch
    std::int64_t dur = 0; // 'X' only
    std::uint8_t arg_count = 0;
    timeline_arg args[3] = {};
    std::string detail;
  };
  struct track_events {
    std::string name;
    mutable std::mutex mutex;
    std::vector<event> events;
    int open = 0; // begin() calls not yet ended
  };

  void append(track_id track, event e);
  static event make_event(char phase, std::string name, std::int64_t ts,
                          std::initializer_list<timeline_arg> args, std::string detail);

  mutable std::mutex mutex_;        // the process name and the list of tracks
  std::deque<track_events> tracks_; // a deque: a track's address never changes
  std::string process_;
  clock::time_point steady_origin_;
  std::int64_t unix_origin_ = 0;
  std::string clock_reference_; // empty: no offset measured
  std::int64_t clock_offset_ = 0, clock_uncertainty_ = 0;
};

/// The run clock now: `recorder`'s (its unix_micros), or the wall clock without one.
std::int64_t timeline_clock_micros(const timeline_recorder* recorder);

/// A clock's offset to a reference clock, from one round trip.
struct clock_offset {
  std::int64_t offset = 0;      ///< add to this clock's time for the reference's
  std::int64_t uncertainty = 0; ///< at most this far off: half the round trip's time in flight
};

/// NTP's arithmetic over one exchange: `sent` and `arrived` on this clock, `received` and
/// `answered` on the reference's. The offset is exact when both directions take equally long;
/// however they differ, it is off by at most half the time in flight. None when the stamps
/// contradict each other (an answer before its question: a clock stepped between them).
std::optional<clock_offset> clock_offset_of(std::int64_t sent, std::int64_t received,
                                            std::int64_t answered, std::int64_t arrived);

/// One process's timeline file to merge: its path, and microseconds to add to its timestamps
/// besides the offset the file records.
struct timeline_part {
  std::string path;
  std::int64_t offset = 0;
};

/// The events of every part in one trace, part i as process id i + 1 (its own process ids are
/// replaced, so "M" events keep naming each part's process and tracks), each shifted by its
/// recorded clock offset, which a "process_labels" event of the part states. Throws io_error
/// naming the part that cannot be read, is not a trace, or records a malformed offset.
/// `shifted`, when given, is set to how many parts recorded an offset.
std::string merge_timelines(const std::vector<timeline_part>& parts,
                            std::size_t* shifted = nullptr);

} // namespace troupe
