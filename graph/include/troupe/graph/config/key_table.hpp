// Every key of the config language, declared once: its section, name, type, default, range,
// the flag that sets it and what it means. From this one table come the keys each section
// accepts and how the reader reads them (job_config.cpp), the ranges a flag shares with its key
// (key_ranges.hpp), the flags: a plain key's flag whole (apps/key_flags.cpp), the others' names
// and help (apps/train_flags.cpp, apps/node_command.cpp), the resolved values `troupe check`
// prints, and the reference `troupe check --reference` prints, which docs/dsl.md holds and a test
// compares with it.
//
// The keys of a section read in the table's order. A plain key (a number, a boolean, a name or
// a string) names its field and the reader reads it by its type and range; a key whose value
// is a list, or is checked against more than its range, names a reader of its own.
//
// Thread-safety: the table is built once, on first use, and read-only afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/key_ranges.hpp>

namespace troupe {

class value_reader;
struct syntax_value;

/// Where a key's value lands: the job, and for a data statement's keys that statement's data.
struct key_target {
  job_config& job;
  data_config& data;
};

template <typename T> using key_field = located<T>& (*)(key_target&);
/// A key's field: a plain value, or a list its own reader reads (monostate: a value of its own
/// kind, read and printed by its own code).
using key_value =
  std::variant<std::monostate, key_field<int>, key_field<std::int64_t>, key_field<double>,
               key_field<bool>, key_field<std::string>, key_field<std::vector<std::int64_t>>,
               key_field<std::vector<double>>>;
using key_reader = void (*)(const value_reader&, const syntax_value&, key_target&);

enum class key_type { integer, real, boolean, name, text, list };

struct config_key {
  const char* section; ///< cluster, data, model, optimizer, schedule, train
  const char* name;
  key_type type;
  key_value field;                ///< a plain key's value
  std::optional<key_range> range; ///< the range it shares with its flag, if any
  const char* flag = "";          ///< "threads" for --threads; "" when no flag sets it
  /// One line: what --help says for the flag, and the reference's meaning begins with it.
  const char* help = "";
  const char* more = ""; ///< what the reference says beyond help ("" nothing)
  /// The reference's default when the default job's value does not say it ("" it does).
  const char* default_text = "";
  /// The reference's range when the range depends on the machine ("" range_text's).
  const char* range_text = "";
  /// data: the statements that take it; schedule: the policies (space-separated; "" all).
  const char* only = "";
  key_reader read = nullptr;  ///< reads a key that is not plain
  key_reader check = nullptr; ///< checks a plain key's value beyond its range, once set

  /// "cluster.shards"
  std::string path() const { return std::string(section) + "." + name; }
  /// Whether the statement or policy `call` ("recordio", "cosine") takes this key.
  bool taken_by(const std::string& call) const;
};

/// Every key, section by section, each section's keys in the order they are read.
const std::vector<config_key>& config_keys();
/// The key "section.name"; std::out_of_range for one the table lacks.
const config_key& config_key_of(const std::string& path);
/// The key --flag sets; null when no key's flag is `flag`.
const config_key* config_key_of_flag(const std::string& flag);
/// The names of the keys `section` accepts in the statement or policy `call` (all: "").
std::vector<std::string> section_keys(const std::string& section, const std::string& call = "");

/// The default a reference shows for the key: its default_text, else the default job's value.
std::string default_text(const config_key& key);

/// The reference of every section's keys: for each section a line `<!-- keys: SECTION -->`, a
/// Markdown table (key, default, range, flag, meaning) and `<!-- end keys -->`.
std::string key_reference();

} // namespace troupe
