// The command-line flags of the `troupe` subcommands, parsed by CLI11 (Debian libcli11-dev).
//
// Flags are declared with a target variable, a default (the variable's current value) and a
// help line; `--name value` and `--name=value` both work, booleans take no value. A flag given
// twice takes its last value, as argparse does, so a wrapper script's defaults can be
// overridden by appending flags. Unknown flags (with the nearest known one suggested), missing
// values and values that do not parse are `usage_error`s naming the flag, which the app prints
// as one line before exiting with status 2. Help goes to stdout, wrapped to 100 columns, with
// a placeholder naming each value's type (N, X, TEXT by default; FILE, RATE, ... when set).
// Only apps/ reads the command line; what it parses is handed down as typed options objects.
//
// This class is the one place that knows CLI11: it keeps the project's wording (CLI11's own
// messages and help layout differ) and keeps CLI11 out of every other file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace troupe {

class usage_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws usage_error "--FLAG must be between MIN (WHY) and MAX, got V" unless MIN <= v <= MAX:
/// the config language's range for the same value, worded for the flag.
void check_range(const char* flag, std::int64_t v, std::int64_t min, std::int64_t max,
                 const std::string& why = "");
/// The same for a real value (printed in its shortest form: 1e+09, 0.5, 3).
void check_real_range(const char* flag, double v, double min, double max,
                      const std::string& why = "");
/// A number as people write it: integers without a fraction, others in the shortest form.
std::string number_text(double v);
/// The value of an on|off flag: true for "on", false for "off"; anything else is a
/// usage_error "--FLAG: 'V' is not one of on, off".
bool on_off(const char* flag, const std::string& value);
/// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);

class flag_set {
public:
  flag_set(std::string command, std::string summary);
  ~flag_set();
  flag_set(flag_set&&) noexcept;
  flag_set& operator=(flag_set&&) noexcept;

  void add(const std::string& name, std::string& target, const std::string& help);
  void add(const std::string& name, std::int64_t& target, const std::string& help);
  void add(const std::string& name, int& target, const std::string& help);
  void add(const std::string& name, double& target, const std::string& help);
  void add(const std::string& name, float& target, const std::string& help);
  /// A switch: present means true.
  void add_switch(const std::string& name, bool& target, const std::string& help);
  /// What the command takes besides flags, for the usage line ("CONFIG").
  void set_operands(std::string operands) { text_->operands = std::move(operands); }
  /// The word help shows for the flag's value (`--metrics FILE`) instead of its type's.
  void set_placeholder(const std::string& name, const std::string& placeholder);
  /// Leaves the flag out of help and of "did you mean": a knob for tests and experiments,
  /// which keeps working for those who know it.
  void hide(const std::string& name);
  /// Keeps only `names` in help; any other flag given is a usage_error "--FLAG WHY": for a
  /// command that declares a shared set of flags but reads only some of them.
  void keep_only(const std::set<std::string>& names, std::string why);

  /// Parses `args` (without the command name). Returns false if --help was given (and the
  /// caller should print help()). Throws usage_error on anything else it cannot accept.
  bool parse(const std::vector<std::string>& args);
  /// Whether the user gave the flag explicitly.
  bool given(const std::string& name) const { return given_.count(name) > 0; }
  /// Every declared flag's name, hidden ones too, in declaration order.
  std::vector<std::string> names() const;
  /// Every flag the user gave explicitly.
  const std::set<std::string>& given_flags() const { return given_; }
  std::string help() const;

  /// What help shows besides the flags; shared with the help formatter, which outlives moves.
  struct text {
    std::string command, summary, operands;
  };

private:
  /// A value flag: CLI11 hands over the last value given as text, `assign` converts it.
  void add_value(const std::string& name, std::string default_text, const std::string& help,
                 std::function<void(const std::string&)> assign, const char* placeholder);
  /// "unknown flag --NAME", with the nearest declared flag when one is close.
  std::string unknown_flag(const std::string& name) const;
  /// The usage_error for an argument CLI11 left unparsed (an unknown flag, a stray word).
  [[noreturn]] void refuse(const std::string& arg) const;

  std::unique_ptr<CLI::App> app_;
  std::shared_ptr<text> text_;
  std::set<std::string> given_;
  std::set<std::string> kept_; ///< keep_only's names; empty: every flag is read
  std::string unread_why_;
};

} // namespace troupe
