// A strict reader for one JSON document (RFC 8259), for the headers of the files Troupe reads
// back (safetensors, troupe/io/safetensors.hpp). It is small on purpose: a header is a few
// kilobytes from a file that may be damaged or hostile, so the reader checks everything
// (nesting depth, escapes, UTF-16 surrogates, duplicate object keys, trailing text) and keeps
// numbers as their literal text, letting the caller decide which ones it accepts as integers.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe {

struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  std::string text;              ///< a string's value, or a number's literal as written
  std::vector<json_value> items; ///< an array's elements
  std::vector<std::pair<std::string, json_value>> members; ///< an object's, in file order

  /// The member named `key` of an object, or null when there is none (or this is no object).
  const json_value* find(const std::string& key) const;
};

/// Parses `text` as one JSON value with nothing but whitespace after it. Throws
/// std::invalid_argument "at byte N: what is wrong" (duplicate keys are refused, as are
/// nesting deeper than 64 levels and invalid escapes).
json_value parse_json(std::string_view text);

/// A number literal as a non-negative integer: digits only, at most 2^63 - 1; throws
/// std::invalid_argument naming `what` otherwise.
std::uint64_t json_unsigned(const json_value& value, const std::string& what);

} // namespace troupe
