// Random access to the records of a RecordIO file (`.rec`, framing in recordio.hpp), with or
// without its `.idx` index.
//
// Opening finds where each record starts and nothing more, so a set far larger than memory
// (ImageNet: 140 GB) opens without reading its payloads: the file is walked header to header
// (one 8-byte pread per frame, the payloads skipped). With an `.idx` (text lines
// "key<TAB>byte offset", as MXNet's MXIndexedRecordIO writes it) the offsets come from it in
// line order, and the walk checks it against the file before anything is trained on: each
// offset must be the start of a record, after the previous line's, and every record of the
// file must be listed. An index of another file, a stale or partial one, or one of zeros is
// refused naming the `.idx` and the line, never trusted. read(i) then fetches and joins one
// record with pread, so any number of threads may read at once.
//
// Errors name the file, the record index and its byte offset: a bad magic, a frame whose
// length runs past the end of the file, a file cut inside a header, continuation flags out of
// order. When opening with skip_bad_records, a corrupt stretch found by the walk becomes one
// bad entry (its read() throws the message) and the walk resumes at the next aligned magic
// that starts a record, so the loss shows up where the record would have been used; without
// it, the walk throws at once (with an index too: a corrupt file is refused when opening).
// With an index and skipping, index entries inside a corrupt stretch are its bad entries.
// A malformed or mismatched `.idx` is always an error.
//
// Thread-safety: after construction all methods are const and safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <troupe/io/dataset.hpp>

namespace troupe {

struct recordio_reader_options {
  std::string index_path;        ///< "": walk the file instead
  bool skip_bad_records = false; ///< keep corrupt stretches as bad entries instead of failing
};

class recordio_reader {
public:
  /// Throws io_error naming the file (missing, unreadable, corrupt without skipping) or the
  /// index: a line that is malformed, points outside the file, not at a record's start or not
  /// after the line before; an index that leaves records of the file out, or is empty.
  recordio_reader(std::string path, recordio_reader_options options = {});
  ~recordio_reader();
  recordio_reader(const recordio_reader&) = delete;
  recordio_reader& operator=(const recordio_reader&) = delete;

  const std::string& path() const { return path_; }
  std::int64_t size() const { return static_cast<std::int64_t>(offsets_.size()); }
  /// Byte offset of record i's first frame.
  std::uint64_t offset(std::int64_t i) const { return offsets_[std::size_t(i)]; }
  /// Entries the walk found corrupt and kept (skip_bad_records only).
  std::int64_t bad_entries() const { return static_cast<std::int64_t>(bad_.size()); }

  /// The payload of record i, parts joined with the magic between them. Throws io_error
  /// "<path>: record <i> at offset <o>: <what>" or std::out_of_range for i outside [0, size).
  std::vector<std::uint8_t> read(std::int64_t i) const;

private:
  struct bad_entry {
    std::int64_t record;
    std::string message;
  };

  void read_index(const std::string& index_path, bool skip_bad_records);
  /// Checks offsets_ (as read from the index) against a walk of the file: throws, or keeps
  /// them, with the walk's bad entries numbered by index entry.
  void check_index(const std::string& index_path, const std::vector<std::int64_t>& lines,
                   bool skip_bad_records);
  void walk(bool skip_bad_records);
  /// Ends past the record starting at `offset`, or throws a message without the prefix.
  std::uint64_t check_record(std::uint64_t offset, std::vector<std::uint8_t>* payload) const;
  std::uint64_t resync(std::uint64_t from) const;
  void read_exactly(std::uint64_t offset, std::uint8_t* out, std::size_t bytes) const;
  std::string where(std::int64_t record, std::uint64_t offset) const;

  std::string path_;
  int fd_ = -1;
  std::uint64_t file_size_ = 0;
  std::vector<std::uint64_t> offsets_;
  std::vector<bad_entry> bad_; ///< sorted by record
};

} // namespace troupe
