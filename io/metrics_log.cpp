// JSON Lines writer (see metrics_log.hpp). Lines are built and escaped by nlohmann-json, the one
// JSON library of the project. A line is formatted completely before the lock is
// taken, and it goes out with write(2) on a plain descriptor: there is no user-space buffer,
// so when write() returns the line is with the OS (that is the per-line flush), and a failed
// write cannot leave half a line queued behind the next one. The part of a line that did reach
// a regular file before a write failed is truncated away, and the writer then refuses every
// later line: a file never holds a line after a gap, nor the head of one.
#include <troupe/io/metrics_log.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

// A double as the metrics lines hold it: integral values below 2^53 (where every integer is exact
// in a double) as JSON integers, so counts read as counts (`"epoch":3`, not `3.0`); others as
// nlohmann writes doubles, the shortest decimal that reads back to the same value; NaN and
// infinities, which JSON cannot express, as null.
nlohmann::ordered_json number_value(double value) {
  if (!std::isfinite(value))
    return nullptr;
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0)
    return static_cast<std::int64_t>(value);
  return value;
}

// Invalid UTF-8 (a tag taken from argv, say) is written as U+FFFD: the line stays valid JSON.
std::string dump(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace

std::string json_number(double value) {
  return dump(number_value(value));
}

// Truncation waits until the lock is held: a second run must not empty the file of the run
// that holds it. The lock goes with the descriptor, so it lasts exactly as long as the writer.
jsonl_writer::jsonl_writer(const std::string& path, bool append) : path_(path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    throw io_error(path + ": cannot open for writing: it is a directory");
  descriptor_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND, 0644);
  if (descriptor_ < 0)
    throw io_error(path + ": cannot open for writing: " + std::strerror(errno));
  if (::flock(descriptor_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(descriptor_);
    throw io_error(path
                   + (error == EWOULDBLOCK
                        ? std::string(": another run is writing it (locked)")
                        : ": cannot lock: " + std::string(std::strerror(error))));
  }
  struct stat opened {};
  regular_ = ::fstat(descriptor_, &opened) == 0 && S_ISREG(opened.st_mode);
  if (!append && regular_ && ::ftruncate(descriptor_, 0) != 0) {
    const int error = errno;
    ::close(descriptor_);
    throw io_error(path + ": cannot truncate: " + std::strerror(error));
  }
}

jsonl_writer::~jsonl_writer() {
  if (descriptor_ >= 0)
    ::close(descriptor_); // every line reached the OS already; nothing left to report
}

void jsonl_writer::write(const std::vector<std::pair<std::string, double>>& numbers,
                         const std::vector<std::pair<std::string, std::string>>& strings,
                         const std::vector<std::pair<std::string, std::string>>& json) {
  auto object = nlohmann::ordered_json::object();
  for (const auto& [key, value] : numbers)
    object[key] = number_value(value);
  for (const auto& [key, value] : strings)
    object[key] = value;
  for (const auto& [key, value] : json) {
    try {
      object[key] = nlohmann::ordered_json::parse(value);
    } catch (const nlohmann::json::parse_error& e) {
      throw std::invalid_argument(path_ + ": the value of '" + key + "' is not JSON: " + e.what());
    }
  }
  const std::string line = dump(object) + "\n";

  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty())
    throw io_error(failure_);
  // Where the line starts, so that a line cut short (a full disk, a file size limit) can be
  // taken back: the file then ends with its last whole line, and every line parses.
  const off_t before = regular_ ? ::lseek(descriptor_, 0, SEEK_END) : -1;
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(descriptor_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      failure_ = path_ + ": write failed: "
                 + (n < 0 ? std::string(std::strerror(errno)) : "no bytes accepted");
      if (done > 0 && (before < 0 || ::ftruncate(descriptor_, before) != 0))
        failure_ += "; the part of the line written could not be removed"
                    + (before < 0 ? std::string() : ": " + std::string(std::strerror(errno)));
      throw io_error(failure_);
    }
    done += static_cast<std::size_t>(n);
  }
}

} // namespace troupe
