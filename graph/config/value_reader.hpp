// Typed reading of syntax values, shared by the section and topology resolvers: each reader
// checks the type and range of one value and throws config_error at its position, so every
// "wrong type" or "out of range" message has the same wording.
//
// `keyed_values` turns a call's arguments or a block's assignments into a key -> value table,
// rejecting unknown and duplicate keys and positional arguments beyond those a call accepts.
//
// Thread-safety: plain values; a reader holds references to the file it reports against.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/config/syntax.hpp"
#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/key_ranges.hpp>

namespace troupe {

class value_reader {
public:
  explicit value_reader(const syntax_file& file) : file_(file) {}

  [[noreturn]] void fail(const source_span& span, const std::string& message) const;

  std::int64_t integer(const syntax_value& v, const std::string& key, std::int64_t min,
                       std::int64_t max, const std::string& why = "") const;
  /// The same with the range the key shares with its flag (key_ranges.hpp).
  std::int64_t integer(const syntax_value& v, const std::string& key, const key_range& range) const;
  double real(const syntax_value& v, const std::string& key, const key_range& range) const;
  double real(const syntax_value& v, const std::string& key, double min, bool min_inclusive,
              double max = 1e300) const;
  bool boolean(const syntax_value& v, const std::string& key) const;
  std::string string(const syntax_value& v, const std::string& key) const;
  /// A bare name such as `all` (not a string, not a call).
  std::string name(const syntax_value& v, const std::string& key) const;
  std::vector<double> reals(const syntax_value& v, const std::string& key, double min) const;
  std::vector<std::int64_t> integers(const syntax_value& v, const std::string& key,
                                     std::int64_t min, std::int64_t max) const;

  template <typename T> void set(located<T>& target, T value, const syntax_value& v) const {
    target.value = std::move(value);
    target.span = v.span;
    target.given = true;
  }

private:
  /// A number written with '%' where the key wants a plain number.
  void refuse_percent(const syntax_value& v, const std::string& key) const;
  const syntax_file& file_;
};

/// Key -> value of one call or block, validated against the keys `what` accepts.
class keyed_values {
public:
  /// `positional` names what unnamed arguments mean, in order.
  keyed_values(const value_reader& reader, const std::string& what,
               const std::vector<syntax_argument>& arguments, const std::vector<std::string>& known,
               const std::vector<std::string>& positional);
  keyed_values(const value_reader& reader, const std::string& what,
               const std::vector<syntax_assignment>& assignments,
               const std::vector<std::string>& known);

  /// The value for `key`, or null when not written.
  const syntax_value* find(const std::string& key) const;

private:
  void add(const value_reader& reader, const std::string& what, const std::string& key,
           const source_span& key_span, const syntax_value& value,
           const std::vector<std::string>& known);
  std::map<std::string, const syntax_value*> values_;
};

/// "a, b or c"
std::string join_names(const std::vector<std::string>& names);

} // namespace troupe
