// A strict reading of one JSON document (RFC 8259) for the headers of files Troupe reads back
// (safetensors). nlohmann-json does the parsing; this adds what a header from a damaged or
// hostile file needs beyond the grammar: duplicate object keys are refused (nlohmann would keep
// the last), nesting is bounded, and members keep their file order. Private to io/: nlohmann
// stays out of the public headers.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace troupe {

/// Parses `text` as one JSON value with nothing but whitespace after it. Throws
/// std::invalid_argument "at byte N: what is wrong" for a syntax error, and for duplicate keys
/// or nesting deeper than 64 levels.
nlohmann::ordered_json parse_strict_json(std::string_view text);

/// A JSON integer as a non-negative count: no sign, fraction or exponent, at most 2^63 - 1;
/// throws std::invalid_argument naming `what` otherwise.
std::uint64_t json_unsigned(const nlohmann::ordered_json& value, const std::string& what);

} // namespace troupe
