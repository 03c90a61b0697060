// A small command-line flag parser for the `troupe` subcommands.
//
// Flags are declared with a target variable, a default (the variable's current value) and a
// help line; `--name value` and `--name=value` both work, booleans take no value. Unknown
// flags, missing values and values that do not parse are `usage_error`s naming the flag, which
// the app prints as one line before exiting with status 2. Only apps/ reads the command line;
// what it parses is handed down as typed options objects.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe {

class usage_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws usage_error "--FLAG must be between MIN (WHY) and MAX, got V" unless MIN <= v <= MAX:
/// the config language's range for the same value, worded for the flag.
void check_range(const char* flag, std::int64_t v, std::int64_t min, std::int64_t max,
                 const std::string& why = "");

class flag_set {
public:
  flag_set(std::string command, std::string summary);

  void add(const std::string& name, std::string& target, const std::string& help);
  void add(const std::string& name, std::int64_t& target, const std::string& help);
  void add(const std::string& name, int& target, const std::string& help);
  void add(const std::string& name, double& target, const std::string& help);
  void add(const std::string& name, float& target, const std::string& help);
  /// A switch: present means true.
  void add_switch(const std::string& name, bool& target, const std::string& help);

  /// Parses `args` (without the command name). Returns false if --help was given (and the
  /// caller should print help()). Throws usage_error on anything else it cannot accept.
  bool parse(const std::vector<std::string>& args);
  /// Whether the user gave the flag explicitly.
  bool given(const std::string& name) const { return given_.count(name) > 0; }
  /// Every flag the user gave explicitly.
  const std::set<std::string>& given_flags() const { return given_; }
  std::string help() const;

private:
  struct flag {
    std::string name;
    std::string default_text;
    std::string help;
    bool is_switch = false;
    std::function<void(const std::string&)> assign;
  };
  const flag* find(const std::string& name) const;

  std::string command_;
  std::string summary_;
  std::vector<flag> flags_;
  std::set<std::string> given_;
};

} // namespace troupe
