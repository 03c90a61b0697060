// JSON Lines writer (see metrics_log.hpp). A line is formatted completely before the lock is
// taken, and it goes out with write(2) on a plain descriptor: there is no user-space buffer,
// so when write() returns the line is with the OS (that is the per-line flush), and a failed
// write cannot leave half a line queued behind the next one.
#include <troupe/io/metrics_log.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <troupe/io/dataset.hpp>

namespace troupe {

std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", unsigned(ch));
          out += escape;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string json_number(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  // Below 2^53 every integer is exact in a double, so the integer form loses nothing.
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(value));
    return text;
  }
  // 17 significant digits always round-trip; fewer often do and read better (0.1, not
  // 0.10000000000000001).
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
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
    throw io_error(path + (error == EWOULDBLOCK ? std::string(": another run is writing it (locked)")
                                                : ": cannot lock: " + std::string(std::strerror(error))));
  }
  struct stat opened {};
  const bool regular = ::fstat(descriptor_, &opened) == 0 && S_ISREG(opened.st_mode);
  if (!append && regular && ::ftruncate(descriptor_, 0) != 0) {
    const int error = errno;
    ::close(descriptor_);
    throw io_error(path + ": cannot truncate: " + std::strerror(error));
  }
}

jsonl_writer::~jsonl_writer() {
  if (descriptor_ >= 0)
    ::close(descriptor_);  // every line reached the OS already; nothing left to report
}

void jsonl_writer::write(const std::vector<std::pair<std::string, double>>& numbers,
                         const std::vector<std::pair<std::string, std::string>>& strings,
                         const std::vector<std::pair<std::string, std::string>>& json) {
  std::string line = "{";
  for (const auto& [key, value] : numbers)
    line += (line.size() > 1 ? ",\"" : "\"") + json_escape(key) + "\":" + json_number(value);
  for (const auto& [key, value] : strings)
    line += (line.size() > 1 ? ",\"" : "\"") + json_escape(key) + "\":\"" +
            json_escape(value) + "\"";
  for (const auto& [key, value] : json)
    line += (line.size() > 1 ? ",\"" : "\"") + json_escape(key) + "\":" + value;
  line += "}\n";

  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(descriptor_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw io_error(path_ + ": write failed: " +
                     (n < 0 ? std::string(std::strerror(errno)) : "no bytes accepted"));
    done += static_cast<std::size_t>(n);
  }
}

} // namespace troupe
