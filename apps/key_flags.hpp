// The flags that set a plain config key, declared from the key table
// (troupe/graph/config/key_table.hpp): each one's name, help, value type, default and range come
// from its key, and a given flag lands on its key's field as the key itself would. A key whose
// flag means more than its value (a -1 that derives a default, a list written as text, a value
// checked against another) is declared by hand in train_flags.cpp, which names why.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <variant>

#include "apps/flags.hpp"
#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/key_table.hpp>

namespace troupe {

class key_flags {
public:
  /// The flags of every key with a flag and a plain field, save those in `by_hand`.
  explicit key_flags(const std::set<std::string>& by_hand);

  /// Declares each flag on `f`, its default the default job's value.
  void declare(flag_set& f);
  /// Checks each given flag's value against its key's range, naming the flag.
  void check(const flag_set& f) const;
  /// Sets each given flag's key in `config` (the train data's for a data key), as given at no
  /// place in the config's text. `section` (e.g. "cluster"): only that section's keys.
  void apply(job_config& config, const flag_set& f, const std::string& section = "") const;
  /// The flags declared, by name.
  std::set<std::string> names() const;

private:
  using value = std::variant<int, std::int64_t, double, bool, std::string>;
  struct entry {
    const config_key* key;
    value raw;
  };
  std::deque<entry> entries_; // flag_set binds to the values: their addresses stay put
};

} // namespace troupe
