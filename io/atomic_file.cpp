// POSIX calls throughout: std::ofstream can neither fsync nor report why a write failed.
#include <troupe/io/atomic_file.hpp>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& step, int error) {
  throw io_error(path + ": cannot " + step + ": " + std::strerror(error));
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Creates the temporary file; one left by a crashed writer of the same pid is replaced.
int create_temporary(const std::string& temporary) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0)
      return fd;
    if (errno != EEXIST || attempt > 0)
      fail(temporary, "create the temporary file", errno);
    ::unlink(temporary.c_str());
  }
  return -1; // not reached
}

void write_all(int fd, const std::string& temporary, const std::vector<std::uint8_t>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fail(temporary, "write", n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
}

void sync_directory(const std::string& path) {
  const auto directory = directory_of(path);
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    fail(directory, "open the directory to fsync it", errno);
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0)
    fail(directory, "fsync the directory", error);
}

} // namespace

void write_file_atomically(const std::string& path, const std::vector<std::uint8_t>& bytes,
                           const std::string& displaced) {
  const auto temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = create_temporary(temporary);
  bool open = true;
  try {
    write_all(fd, temporary, bytes);
    if (::fsync(fd) != 0)
      fail(temporary, "fsync", errno);
    open = false; // a failed close releases the descriptor all the same
    if (::close(fd) != 0)
      fail(temporary, "close", errno);
  } catch (...) {
    if (open)
      ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  if (!displaced.empty() && ::unlink(displaced.c_str()) != 0 && errno != ENOENT) {
    const int error = errno;
    ::unlink(temporary.c_str());
    fail(displaced, "remove it before writing " + path, error);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    fail(path, "rename " + temporary + " over it", error);
  }
  sync_directory(path);
}

void check_can_create(const std::string& path) {
  const auto temporary = path + ".tmp." + std::to_string(::getpid());
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && (errno != EEXIST || attempt > 0))
      fail(directory_of(path), "create files in it", errno);
    if (fd < 0)
      ::unlink(temporary.c_str()); // left by a crashed writer of the same pid, as above
  }
  ::close(fd);
  ::unlink(temporary.c_str());
}

} // namespace troupe
