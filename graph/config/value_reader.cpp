// Type and range checks for config values. Integers must be written without '.' or exponent
// so that `workers = 2.5` is an error rather than a silent truncation.
#include "graph/config/value_reader.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <troupe/graph/config/key_ranges.hpp>

namespace troupe {

namespace {

const char* kind_name(syntax_value::kind k) {
  switch (k) {
  case syntax_value::kind::number:
    return "a number";
  case syntax_value::kind::string:
    return "a string";
  case syntax_value::kind::boolean:
    return "a boolean";
  case syntax_value::kind::name:
    return "a name";
  case syntax_value::kind::call:
    return "a call";
  case syntax_value::kind::list:
    return "a list";
  }
  return "a value";
}

std::string number_text(double v) {
  return shortest_number(v);
}

} // namespace

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

void value_reader::fail(const source_span& span, const std::string& message) const {
  throw_config_error(file_.path, file_.text, span, message);
}

void value_reader::refuse_percent(const syntax_value& v, const std::string& key) const {
  if (v.type == syntax_value::kind::number && v.percent)
    fail(v.span, key + " takes a plain number, not a percentage");
}

std::int64_t value_reader::integer(const syntax_value& v, const std::string& key, std::int64_t min,
                                   std::int64_t max, const std::string& why) const {
  refuse_percent(v, key);
  const bool number = v.type == syntax_value::kind::number;
  // A whole value out of range says so, however written (`epochs = 1e30` is too many, not a
  // fraction); a value in range must still be written as an integer.
  if (number && v.number == std::floor(v.number)
      && (v.number < static_cast<double>(min) || v.number > static_cast<double>(max)))
    fail(v.span, key + " must be between " + std::to_string(min) + " and " + std::to_string(max)
                   + (why.empty() ? "" : " (" + why + ")") + ", got " + number_text(v.number));
  if (!number || !v.integral)
    fail(v.span, key + " must be a whole number"
                   + std::string(number && v.number == std::floor(v.number)
                                   ? " written without '.' or exponent"
                                   : "")
                   + ", got "
                   + (number ? "'" + number_text(v.number) + "'" : std::string(kind_name(v.type))));
  if (v.number < static_cast<double>(min) || v.number > static_cast<double>(max))
    fail(v.span, key + " must be between " + std::to_string(min) + " and " + std::to_string(max)
                   + (why.empty() ? "" : " (" + why + ")") + ", got " + number_text(v.number));
  return static_cast<std::int64_t>(v.number);
}

std::int64_t value_reader::integer(const syntax_value& v, const std::string& key,
                                   const key_range& range) const {
  return integer(v, key, static_cast<std::int64_t>(range.min), static_cast<std::int64_t>(range.max),
                 range.why);
}

double value_reader::real(const syntax_value& v, const std::string& key,
                          const key_range& range) const {
  refuse_percent(v, key);
  if (v.type != syntax_value::kind::number)
    fail(v.span, key + " must be a number, got " + kind_name(v.type));
  if (!range.contains(v.number))
    fail(v.span, key + " must be " + (range.min_open ? "greater than " : "at least ")
                   + number_text(range.min) + (range.max_open ? " and below " : " and at most ")
                   + number_text(range.max) + ", got " + number_text(v.number));
  return v.number;
}

double value_reader::real(const syntax_value& v, const std::string& key, double min,
                          bool min_inclusive, double max) const {
  refuse_percent(v, key);
  if (v.type != syntax_value::kind::number)
    fail(v.span, key + " must be a number, got " + kind_name(v.type));
  bool low = min_inclusive ? v.number < min : v.number <= min;
  if (low || v.number > max)
    fail(v.span, key + " must be " + (min_inclusive ? "at least " : "greater than ")
                   + number_text(min) + (max < 1e300 ? " and at most " + number_text(max) : "")
                   + ", got " + number_text(v.number));
  return v.number;
}

bool value_reader::boolean(const syntax_value& v, const std::string& key) const {
  if (v.type != syntax_value::kind::boolean)
    fail(v.span, key + " must be true or false, got " + kind_name(v.type));
  return v.boolean;
}

std::string value_reader::string(const syntax_value& v, const std::string& key) const {
  if (v.type != syntax_value::kind::string)
    fail(v.span, key + " must be a string in double quotes, got " + kind_name(v.type));
  return v.text;
}

std::string value_reader::name(const syntax_value& v, const std::string& key) const {
  if (v.type != syntax_value::kind::name)
    fail(v.span, key + " must be a name, got " + kind_name(v.type));
  return v.text;
}

std::vector<double> value_reader::reals(const syntax_value& v, const std::string& key,
                                        double min) const {
  if (v.type != syntax_value::kind::list)
    fail(v.span, key + " must be a list such as [5, 7.5], got " + kind_name(v.type));
  std::vector<double> out;
  for (const auto& item : v.items)
    out.push_back(real(item, key + " element", min, true));
  return out;
}

std::vector<std::int64_t> value_reader::integers(const syntax_value& v, const std::string& key,
                                                 std::int64_t min, std::int64_t max) const {
  if (v.type != syntax_value::kind::list)
    fail(v.span, key + " must be a list such as [3, 32, 32], got " + kind_name(v.type));
  std::vector<std::int64_t> out;
  for (const auto& item : v.items)
    out.push_back(integer(item, key + " element", min, max));
  return out;
}

keyed_values::keyed_values(const value_reader& reader, const std::string& what,
                           const std::vector<syntax_argument>& arguments,
                           const std::vector<std::string>& known,
                           const std::vector<std::string>& positional) {
  std::size_t next_positional = 0;
  bool named_seen = false;
  for (const auto& a : arguments) {
    if (!a.key.empty()) {
      named_seen = true;
      add(reader, what, a.key, a.key_span, a.value, known);
      continue;
    }
    if (named_seen)
      reader.fail(a.value.span, "positional argument after a named one in " + what);
    if (next_positional >= positional.size())
      reader.fail(a.value.span, what + " takes "
                                  + (positional.empty()
                                       ? std::string("no positional arguments")
                                       : "at most " + std::to_string(positional.size())
                                           + " positional argument(s): " + join_names(positional)));
    add(reader, what, positional[next_positional++], a.value.span, a.value, known);
  }
}

keyed_values::keyed_values(const value_reader& reader, const std::string& what,
                           const std::vector<syntax_assignment>& assignments,
                           const std::vector<std::string>& known) {
  for (const auto& a : assignments)
    add(reader, what, a.key, a.key_span, a.value, known);
}

void keyed_values::add(const value_reader& reader, const std::string& what, const std::string& key,
                       const source_span& key_span, const syntax_value& value,
                       const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), key) == known.end())
    reader.fail(key_span,
                "unknown key '" + key + "' in " + what
                  + (known.empty() ? " (it takes no keys)" : " (keys: " + join_names(known) + ")"));
  if (!values_.emplace(key, &value).second)
    reader.fail(key_span, "duplicate key '" + key + "' in " + what);
}

const syntax_value* keyed_values::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : it->second;
}

} // namespace troupe
