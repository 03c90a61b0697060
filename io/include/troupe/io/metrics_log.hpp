// Metrics output as JSON Lines: one JSON object per line, e.g.
//   {"epoch":3,"step":1200,"loss":0.41235,"accuracy":0.8731,"phase":"train"}
//
// JSON Lines is what plotting scripts and `jq` read without a schema, and a line-per-record
// file stays valid up to the last complete line when a run is killed, so every line is
// flushed as it is written. Numbers round-trip exactly (the shortest decimal that reads back
// to the same double), integral values print as integers, and NaN or infinity, which JSON
// cannot express, print as null.
//
// Thread-safety: write() may be called from several threads; lines never interleave.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// A double as the metrics lines write it: integers (below 2^53) as integers, others as the
/// shortest decimal that reads back to the same double, NaN and infinities as null.
std::string json_number(double value);

class jsonl_writer {
public:
  /// Opens `path`, takes an exclusive flock on it (held as long as the writer lives), then
  /// truncates it unless `append`. Throws io_error "<path>: cannot open for writing:
  /// <strerror>", or "<path>: another run is writing it (locked)" when another writer holds it.
  explicit jsonl_writer(const std::string& path, bool append = false);
  ~jsonl_writer();
  jsonl_writer(const jsonl_writer&) = delete;
  jsonl_writer& operator=(const jsonl_writer&) = delete;

  /// Writes one object, numbers first, then strings, then `json` values (JSON texts, such as
  /// an annotation's object, embedded as values), each in the given order, and flushes. A key
  /// given twice keeps its first place and its last value. Strings are escaped as JSON requires
  /// (control characters as \uXXXX, UTF-8 as it is, invalid UTF-8 as U+FFFD). Throws
  /// std::invalid_argument when a `json` value is not JSON, io_error "<path>: write failed:
  /// <strerror>" when the bytes do not reach the OS. A line is written whole or not at all:
  /// what reached a regular file of a failed line is truncated away, and after a failure every
  /// later write throws the same error (the file ends with its last whole line).
  void write(const std::vector<std::pair<std::string, double>>& numbers,
             const std::vector<std::pair<std::string, std::string>>& strings = {},
             const std::vector<std::pair<std::string, std::string>>& json = {});

  const std::string& path() const { return path_; }

private:
  std::string path_;
  std::mutex mutex_;
  int descriptor_ = -1;  ///< a POSIX fd: one write(2) per line, no stdio buffer to go stale
  bool regular_ = false; ///< a regular file (not a pipe, a terminal): a cut line is truncated
  std::string failure_;  ///< the first failed write's error; every later write repeats it
};

} // namespace troupe
