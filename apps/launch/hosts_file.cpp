// Hosts files are user input: every problem is a usage_error that names the file and line.
#include "apps/launch/hosts_file.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "apps/flags.hpp"
#include "apps/integer_text.hpp"

namespace troupe::launch {

namespace {

// A positive decimal number no larger than `max`, or -1.
long parse_count(const std::string& text, long max) {
  const auto v = parse_integer(text);
  return v && *v >= 1 && *v <= max ? static_cast<long>(*v) : -1;
}

// "HOST" or "HOST:PORT"; a name with several colons is an IPv6 address and has no port.
host parse_host(const std::string& word, const std::string& where) {
  host h{word, 0};
  if (std::count(word.begin(), word.end(), ':') == 1) {
    auto colon = word.find(':');
    h.name = word.substr(0, colon);
    long port = parse_count(word.substr(colon + 1), 65535);
    if (port < 0)
      throw usage_error(where + ": bad ssh port '" + word.substr(colon + 1)
                        + "' (expected 1 to 65535)");
    h.ssh_port = static_cast<int>(port);
  }
  if (h.name.empty())
    throw usage_error(where + ": no host name before ':'");
  if (h.name[0] == '-')
    throw usage_error(where + ": a host name cannot start with '-': '" + h.name + "'");
  return h;
}

bool safe_for_shell(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_-./:,+@%").find(c) != std::string_view::npos;
  });
}

} // namespace

std::vector<host> parse_hosts(std::istream& in, const std::string& file) {
  std::vector<host> hosts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string word;
    if (!(words >> word))
      continue;
    std::string where = file + ":" + std::to_string(number);
    hosts.push_back(parse_host(word, where));
    while (words >> word) {
      if (word.rfind("slots=", 0) != 0)
        throw usage_error(where + ": unexpected '" + word
                          + "' after the host (only slots=N may follow)");
      if (parse_count(word.substr(6), 1 << 20) < 0)
        throw usage_error(where + ": slots must be a positive number, got '" + word.substr(6)
                          + "'");
    }
  }
  if (hosts.empty())
    throw usage_error(file + ": no hosts");
  return hosts;
}

std::vector<host> read_hosts_file(const std::string& path) {
  errno = 0;
  std::ifstream in(path);
  if (!in)
    throw usage_error("cannot open hosts file " + path + ": "
                      + std::strerror(errno ? errno : EACCES));
  return parse_hosts(in, path);
}

std::string shell_quote(const std::string& text) {
  if (safe_for_shell(text))
    return text;
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::vector<std::string> ssh_command(const std::string& ssh_program, const host& h,
                                     const std::string& dir, const std::vector<std::string>& argv) {
  std::vector<std::string> command{ssh_program, "-o", "BatchMode=yes", "-o",
                                   "StrictHostKeyChecking=accept-new"};
  if (h.ssh_port != 0)
    command.insert(command.end(), {"-p", std::to_string(h.ssh_port)});
  std::string remote = "cd " + shell_quote(dir) + " && exec";
  for (const auto& a : argv)
    remote += " " + shell_quote(a);
  command.push_back(h.name);
  command.push_back(remote);
  return command;
}

} // namespace troupe::launch
