// The headline of the error a config's text is refused with ("no error" when it is taken), for
// the tests that assert on what the reader says.
#pragma once

#include <string>

#include <troupe/graph/config/job_config.hpp>

namespace troupe::test {

inline std::string error_of(const std::string& text) {
  try {
    parse_job_config("t.troupe", text);
  } catch (const config_error& e) {
    return e.headline();
  }
  return "no error";
}

} // namespace troupe::test
