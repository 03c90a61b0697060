// `troupe bench scaling`: throughput against workers over emulated hosts. The bench itself is
// scripts/bench_scaling.py (Python, because it drives network namespaces and tc through
// scripts/emulated_hosts.py, which the tests share); this command runs it with this executable
// as the nodes' `troupe`, so `troupe bench scaling --help` and a run look like any other bench.
// The script is looked up in $TROUPE_SCRIPTS_DIR, else in the source tree this executable was
// built from.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "apps/commands.hpp"

#ifndef TROUPE_SCRIPTS_DIR
#define TROUPE_SCRIPTS_DIR "scripts"
#endif

namespace troupe {

int scaling_bench_command(const std::vector<std::string>& args) {
  const char* dir = std::getenv("TROUPE_SCRIPTS_DIR");
  const std::string script =
    std::string(dir && *dir ? dir : TROUPE_SCRIPTS_DIR) + "/bench_scaling.py";
  if (::access(script.c_str(), R_OK) != 0) {
    std::cerr << "troupe bench scaling: cannot read " << script << " (" << std::strerror(errno)
              << "): set TROUPE_SCRIPTS_DIR to the folder holding bench_scaling.py\n";
    return 1;
  }
  char self[PATH_MAX];
  const auto n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::cerr << "troupe bench scaling: cannot find this executable (/proc/self/exe)\n";
    return 1;
  }
  self[n] = '\0';
  std::vector<std::string> all{"python3", script, "--troupe", self};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  ::execvp("python3", argv.data());
  std::cerr << "troupe bench scaling: cannot run python3 (" << std::strerror(errno) << ")\n";
  return 1;
}

} // namespace troupe
