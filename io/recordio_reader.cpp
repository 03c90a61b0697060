// RecordIO random access (see recordio_reader.hpp). One routine, check_record, walks the
// frames of one record and either measures it (opening without an index) or also copies the
// payload out (read), so the two paths cannot disagree on what a valid record is.
#include <troupe/io/recordio_reader.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <troupe/io/recordio.hpp>

#include "io/file_bytes.hpp"

namespace troupe {

namespace {

// A framing problem of one record, before the file and record are added to the message.
struct frame_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

std::string kind_name(recordio::frame_kind kind) {
  static const char* const names[] = {"whole record", "first part", "middle part", "last part"};
  const auto value = static_cast<std::uint32_t>(kind);
  return std::to_string(value) + " (" + (value < 4 ? names[value] : "not a flag") + ")";
}

} // namespace

recordio_reader::recordio_reader(std::string path, recordio_reader_options options)
    : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw io_error(path_ + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    throw io_error(path_ + ": cannot stat: " + std::strerror(error));
  }
  file_size_ = static_cast<std::uint64_t>(info.st_size);
  try {
    if (options.index_path.empty())
      walk(options.skip_bad_records);
    else
      read_index(options.index_path, options.skip_bad_records);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

recordio_reader::~recordio_reader() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string recordio_reader::where(std::int64_t record, std::uint64_t offset) const {
  return path_ + ": record " + std::to_string(record) + " at offset " + std::to_string(offset)
         + ": ";
}

void recordio_reader::read_exactly(std::uint64_t offset, std::uint8_t* out,
                                   std::size_t bytes) const {
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, out, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      throw frame_error(std::string("read failed: ") + std::strerror(errno));
    if (got == 0)
      throw frame_error("the file ended while reading (it shrank after opening?)");
    out += got;
    offset += static_cast<std::uint64_t>(got);
    bytes -= static_cast<std::size_t>(got);
  }
}

std::uint64_t recordio_reader::check_record(std::uint64_t offset,
                                            std::vector<std::uint8_t>* payload) const {
  if (payload)
    payload->clear();
  bool inside = false; // after a first part, before the last
  for (std::uint64_t at = offset;;) {
    const std::string frame = at == offset ? "" : "frame at offset " + std::to_string(at) + ": ";
    if (file_size_ - at < recordio::header_bytes)
      throw frame_error(frame + "the file ends inside a record header ("
                        + std::to_string(file_size_ - at) + " of 8 bytes left; truncated file?)");
    std::uint8_t header[recordio::header_bytes];
    read_exactly(at, header, sizeof header);
    const std::uint32_t word = recordio::load_u32(header);
    if (word != recordio::magic)
      throw frame_error(frame + "bad magic " + hex32(word) + " (expected " + hex32(recordio::magic)
                        + ")");
    const std::uint32_t lrecord = recordio::load_u32(header + 4);
    const auto kind = recordio::kind_of(lrecord);
    const std::uint32_t length = recordio::length_of(lrecord);
    const bool opens = kind == recordio::frame_kind::whole || kind == recordio::frame_kind::first;
    if (opens == inside || static_cast<std::uint32_t>(kind) > 3)
      throw frame_error(
        frame + "continuation flag " + kind_name(kind)
        + (inside ? " inside a record split into parts" : " where a record starts"));
    const std::uint64_t body = at + recordio::header_bytes;
    if (length > file_size_ - body)
      throw frame_error(frame + "length " + std::to_string(length)
                        + " runs past the end of the file (" + std::to_string(file_size_ - body)
                        + " bytes left; bad length or truncated file)");
    if (payload) {
      if (inside) {
        const std::size_t joint = payload->size();
        payload->resize(joint + 4);
        recordio::store_u32(payload->data() + joint, recordio::magic);
      }
      const std::size_t start = payload->size();
      payload->resize(start + length);
      read_exactly(body, payload->data() + start, length);
    }
    // The last frame's padding may be missing at the very end of a file MXNet would still
    // read to the payload's end; anything shorter was caught above.
    at = std::min(file_size_, body + recordio::padded(length));
    if (kind == recordio::frame_kind::whole || kind == recordio::frame_kind::last)
      return at;
    inside = true;
  }
}

std::uint64_t recordio_reader::resync(std::uint64_t from) const {
  constexpr std::size_t chunk = 1 << 16;
  std::vector<std::uint8_t> buffer(chunk + 8);
  for (std::uint64_t at = recordio::padded(from); at + recordio::header_bytes <= file_size_;
       at += chunk) {
    const std::size_t bytes =
      static_cast<std::size_t>(std::min<std::uint64_t>(chunk + 8, file_size_ - at));
    read_exactly(at, buffer.data(), bytes);
    for (std::size_t i = 0; i + recordio::header_bytes <= bytes && i < chunk; i += 4) {
      const auto kind = recordio::kind_of(recordio::load_u32(buffer.data() + i + 4));
      if (recordio::load_u32(buffer.data() + i) == recordio::magic
          && (kind == recordio::frame_kind::whole || kind == recordio::frame_kind::first))
        return at + i;
    }
  }
  return file_size_;
}

void recordio_reader::walk(bool skip_bad_records) {
  std::uint64_t at = 0;
  while (at < file_size_) {
    const std::int64_t record = size();
    offsets_.push_back(at);
    try {
      at = check_record(at, nullptr);
    } catch (const frame_error& e) {
      if (!skip_bad_records)
        throw io_error(where(record, at) + e.what());
      bad_.push_back({record, e.what()});
      at = resync(at + 4);
    }
  }
}

void recordio_reader::read_index(const std::string& index_path, bool skip_bad_records) {
  std::vector<std::int64_t> lines; // the line of each entry, for the messages
  for_each_text_line(
    index_path, "the index of " + path_, [&](std::int64_t number, const std::string& line) {
      const auto tab = line.find('\t');
      const std::string offset_text = tab == std::string::npos ? "" : line.substr(tab + 1);
      std::size_t used = 0;
      unsigned long long offset = 0;
      bool ok = tab != 0 && !offset_text.empty() && std::isdigit((unsigned char)offset_text[0]);
      if (ok) {
        try {
          offset = std::stoull(offset_text, &used);
        } catch (const std::exception&) {
          ok = false;
        }
      }
      if (!ok || used != offset_text.size())
        throw io_error(index_path + ": line " + std::to_string(number)
                       + ": expected 'key<TAB>byte offset', got '" + line + "'");
      offsets_.push_back(offset);
      lines.push_back(number);
    });
  check_index(index_path, lines, skip_bad_records);
}

void recordio_reader::check_index(const std::string& index_path,
                                  const std::vector<std::int64_t>& lines, bool skip_bad_records) {
  // The index is checked against the records the file really holds, found by the same walk
  // as opening without an index: one 8-byte pread per frame (one per record unless it is
  // split), the payloads skipped, so a 140 GB ImageNet .rec costs about 1.3 million small
  // reads and never a read of the whole file. Trusting the index instead trains on whatever
  // it lists: a record many times, a subset, another file's offsets.
  std::vector<std::uint64_t> listed;
  listed.swap(offsets_);
  walk(skip_bad_records); // a corrupt .rec is refused here, naming the .rec and the record
  std::vector<std::uint64_t> held;
  held.swap(offsets_);
  std::vector<bad_entry> held_bad;
  held_bad.swap(bad_);
  const auto bad_record = [&](std::size_t r) -> const bad_entry* {
    const auto at =
      std::lower_bound(held_bad.begin(), held_bad.end(), std::int64_t(r),
                       [](const bad_entry& e, std::int64_t x) { return e.record < x; });
    return at != held_bad.end() && at->record == std::int64_t(r) ? &*at : nullptr;
  };
  const std::string holds = path_ + " holds " + std::to_string(held.size()) + " record"
                            + (held.size() == 1 ? "" : "s")
                            + (held_bad.empty() ? "" : " (each corrupt stretch counted as one)");
  if (listed.empty()) {
    if (!held.empty())
      throw io_error(index_path + " is empty but " + holds);
    return; // an empty file with an empty index: the dataset says "no records"
  }
  // An entry is accepted at the start of a record the walk found, or, when skipping, inside a
  // corrupt stretch (whose records the walk could not tell apart): that entry reads as bad.
  std::size_t next = 0;    // first walked record at or after the entry's offset
  std::size_t matched = 0; // walked records the index lists
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const std::string line = index_path + ": line " + std::to_string(lines[i]) + ": offset "
                             + std::to_string(listed[i]) + " ";
    if (listed[i] >= file_size_ || listed[i] % 4 != 0)
      throw io_error(line + "is "
                     + (listed[i] % 4 ? "not 4-byte aligned"
                                      : "past the end of " + path_ + " ("
                                          + std::to_string(file_size_) + " bytes)"));
    if (i > 0 && listed[i] <= listed[i - 1])
      throw io_error(line + "does not come after the previous line's offset "
                     + std::to_string(listed[i - 1]) + " (an index lists each record of " + path_
                     + " once, in file order; is it the index of another file?)");
    while (next < held.size() && held[next] < listed[i])
      ++next;
    if (next < held.size() && held[next] == listed[i]) {
      if (const bad_entry* bad = bad_record(next))
        bad_.push_back({std::int64_t(i), bad->message});
      ++matched;
      continue;
    }
    const bad_entry* stretch = next > 0 ? bad_record(next - 1) : nullptr;
    if (skip_bad_records && stretch) {
      bad_.push_back({std::int64_t(i), stretch->message});
      continue;
    }
    throw io_error(line + "is not the start of a record in " + path_ + " ("
                   + (next > 0 ? "record " + std::to_string(next - 1) + " starts at byte "
                                   + std::to_string(held[next - 1])
                               : std::string("no record starts before it"))
                   + "; is it the index of another file?)");
  }
  if (matched != held.size()) {
    std::size_t missing = 0;
    for (std::size_t i = 0; missing < held.size() && i < listed.size(); ++i)
      if (listed[i] == held[missing])
        ++missing;
      else if (listed[i] > held[missing])
        break;
    throw io_error(index_path + " lists " + std::to_string(listed.size()) + " record"
                   + (listed.size() == 1 ? "" : "s") + ", " + holds + " (record "
                   + std::to_string(missing) + " at byte " + std::to_string(held[missing])
                   + " is not listed; a stale or partial index?)");
  }
  offsets_ = std::move(listed);
}

std::vector<std::uint8_t> recordio_reader::read(std::int64_t i) const {
  if (i < 0 || i >= size())
    throw std::out_of_range(path_ + ": record " + std::to_string(i) + " is outside [0, "
                            + std::to_string(size()) + ")");
  const auto bad = std::lower_bound(
    bad_.begin(), bad_.end(), i, [](const bad_entry& e, std::int64_t r) { return e.record < r; });
  if (bad != bad_.end() && bad->record == i)
    throw io_error(where(i, offset(i)) + bad->message);
  std::vector<std::uint8_t> payload;
  try {
    check_record(offset(i), &payload);
  } catch (const frame_error& e) {
    throw io_error(where(i, offset(i)) + e.what());
  }
  return payload;
}

} // namespace troupe
