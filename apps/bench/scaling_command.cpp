// `troupe bench scaling`: throughput against workers over emulated hosts. The bench itself is
// scripts/bench_scaling.py (Python, because it drives network namespaces and tc through
// scripts/emulated_hosts.py, which the tests share); this command runs it with this executable
// as the nodes' `troupe`, so `troupe bench scaling --help` and a run look like any other bench.
// The scripts are looked up in $TROUPE_SCRIPTS_DIR, else in share/troupe/scripts beside this
// executable's bin/ folder: where `cmake --install` puts them, and where the build tree links
// the source's scripts/ (apps/CMakeLists.txt). No source path is compiled in, so an installed
// prefix runs the bench whether or not the tree it was built from is still there.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "apps/commands.hpp"

namespace troupe {

namespace {

// The folder holding the bench's scripts, for the executable at `self`.
std::string scripts_dir(const std::string& self) {
  const char* dir = std::getenv("TROUPE_SCRIPTS_DIR");
  if (dir && *dir)
    return dir;
  const auto bin = self.substr(0, self.find_last_of('/'));
  return bin.substr(0, bin.find_last_of('/') + 1) + "share/troupe/scripts";
}

} // namespace

int scaling_bench_command(const std::vector<std::string>& args) {
  char self[PATH_MAX];
  const auto n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::cerr << "troupe bench scaling: cannot find this executable (/proc/self/exe)\n";
    return 1;
  }
  self[n] = '\0';
  const std::string script = scripts_dir(self) + "/bench_scaling.py";
  if (::access(script.c_str(), R_OK) != 0) {
    std::cerr << "troupe bench scaling: cannot read " << script << " (" << std::strerror(errno)
              << "): install Troupe (cmake --install), or set TROUPE_SCRIPTS_DIR to the folder "
                 "holding bench_scaling.py\n";
    return 1;
  }
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
