// The hosts a `troupe launch --hostfile` run spreads its nodes over, in the format MXNet's
// (dmlc) launcher reads: one host per line, optionally `HOST:SSHPORT`, optionally followed by
// `slots=N` (accepted for compatibility and ignored: each node is its own process); `#` starts a
// comment, blank lines are skipped. And the ssh command line that runs a node on one of them.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace troupe::launch {

struct host {
  std::string name; ///< host name or address, as ssh takes it
  int ssh_port = 0; ///< 0: ssh's default
};

/// Parses a hosts file's text; `file` names it in errors. Throws usage_error
/// "FILE:LINE: what is wrong" for a bad line, and "FILE: no hosts" when it lists none.
std::vector<host> parse_hosts(std::istream& in, const std::string& file);
/// Reads and parses the file at `path`; throws usage_error when it cannot be opened.
std::vector<host> read_hosts_file(const std::string& path);

/// `text` as one word for a POSIX shell: single-quoted (`'` written as `'\''`) unless it is
/// made of characters no shell treats specially.
std::string shell_quote(const std::string& text);

/// `SSH -o BatchMode=yes -o StrictHostKeyChecking=accept-new [-p PORT] HOST 'cd DIR && exec
/// ARGV...'`, every argument of the remote command quoted: what runs `argv` in `dir` on `h`.
std::vector<std::string> ssh_command(const std::string& ssh_program, const host& h,
                                     const std::string& dir, const std::vector<std::string>& argv);

} // namespace troupe::launch
