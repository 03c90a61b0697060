// See tcp_congestion.hpp.
#include <troupe/cluster/tcp_congestion.hpp>

#include <troupe/graph/config/job_config.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace troupe {

namespace {

// The kernel's limit on an algorithm's name, with its terminating zero (linux/tcp.h's
// TCP_CA_NAME_MAX, which glibc's netinet/tcp.h does not declare).
constexpr std::size_t name_max = 16;

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line.empty() ? "(unreadable)" : line;
}

// Whether this process may run `algorithm` on a TCP socket (errno of the refusal in `error`).
bool settable(const std::string& algorithm, int& error) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) {
    error = errno;
    return false;
  }
  const bool ok = set_tcp_congestion(fd, algorithm);
  error = ok ? 0 : errno;
  ::close(fd);
  return ok;
}

} // namespace

bool set_tcp_congestion(int fd, const std::string& algorithm) {
  return ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algorithm.data(),
                      static_cast<socklen_t>(algorithm.size()))
         == 0;
}

std::string tcp_congestion_of(int fd) {
  char name[name_max] = {};
  socklen_t length = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &length) != 0)
    return {};
  return std::string(name, ::strnlen(name, length));
}

tcp_congestion_choice choose_tcp_congestion(const std::string& setting) {
  if (setting == "system")
    return {};
  int error = 0;
  if (setting == "auto") {
    if (settable("cubic", error))
      return {"cubic", ""};
    return {"", "tcp_congestion = auto: cubic cannot be set here ("
                  + std::string(std::strerror(error)) + "; allowed to this user: "
                  + first_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
                  + "), so channels keep the host's default, "
                  + first_line("/proc/sys/net/ipv4/tcp_congestion_control")};
  }
  if (!congestion_control_name(setting))
    throw std::invalid_argument(
      "tcp_congestion '" + setting
      + "': give auto, system or an algorithm's name (lower case, e.g. cubic)");
  if (!settable(setting, error))
    throw std::invalid_argument("tcp_congestion '" + setting + "' cannot be set here ("
                                + std::strerror(error) + "): this host offers "
                                + first_line("/proc/sys/net/ipv4/tcp_available_congestion_control")
                                + ", of which this user may set "
                                + first_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
                                + " (or give auto or system)");
  return {setting, ""};
}

} // namespace troupe
