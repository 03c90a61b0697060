// A config file for one test case, removed when it goes out of scope. ctest runs test cases
// as parallel processes, so each case names its own file.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace troupe::test {

class temp_config {
public:
  temp_config(const std::string& name, const std::string& text)
      : path_((std::filesystem::temp_directory_path() / ("troupe_train_flags_" + name + ".troupe"))
                .string()) {
    std::ofstream(path_) << text;
  }
  ~temp_config() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

} // namespace troupe::test
