#include "apps/secret_flag.hpp"

#include <iostream>

#include "apps/flags.hpp"

namespace troupe {

cluster_secret read_secret(const std::string& file, const environment& env) {
  if (file == "-") {
    std::string line;
    std::getline(std::cin, line);
    if (line.empty())
      throw usage_error("--secret-file -: standard input held no secret");
    return cluster_secret(line);
  }
  if (!file.empty())
    return cluster_secret::from_file(file);
  auto it = env.find("TROUPE_SECRET");
  if (it != env.end() && !it->second.empty())
    return cluster_secret(it->second);
  throw usage_error("the cluster secret is missing: give --secret-file FILE or set TROUPE_SECRET "
                    "(there is no unauthenticated mode)");
}

} // namespace troupe
