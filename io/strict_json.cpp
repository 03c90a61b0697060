// Strict JSON on nlohmann-json (strict_json.hpp). The checks nlohmann lacks run in its parser
// callback, which sees every key and every nesting level as it is read, so a hostile header is
// refused before it is built in full.
#include "io/strict_json.hpp"

#include <set>
#include <stdexcept>
#include <vector>

namespace troupe {

namespace {

constexpr int max_depth = 64;

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, column 4:
// syntax error while parsing value - unexpected ']'; ...": the part after the position.
std::string reason(const nlohmann::json::parse_error& e) {
  const std::string what = e.what();
  const auto colon = what.find(": ", what.find("parse error"));
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

} // namespace

nlohmann::ordered_json parse_strict_json(std::string_view text) {
  std::vector<std::set<std::string>> keys; // the keys seen in each open object
  auto check = [&keys](int depth, nlohmann::ordered_json::parse_event_t event,
                       nlohmann::ordered_json& parsed) {
    using event_t = nlohmann::ordered_json::parse_event_t;
    if ((event == event_t::object_start || event == event_t::array_start) && depth > max_depth)
      throw std::invalid_argument("nested deeper than " + std::to_string(max_depth) + " levels");
    if (event == event_t::object_start)
      keys.emplace_back();
    else if (event == event_t::object_end)
      keys.pop_back();
    else if (event == event_t::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw std::invalid_argument("duplicate key \"" + parsed.get<std::string>() + "\"");
    return true;
  };
  try {
    return nlohmann::ordered_json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann counts bytes from 1 up to the one that failed; our offset is that byte's index.
    throw std::invalid_argument("at byte " + std::to_string(e.byte > 0 ? e.byte - 1 : 0) + ": "
                                + reason(e));
  }
}

std::uint64_t json_unsigned(const nlohmann::ordered_json& value, const std::string& what) {
  // A literal with a sign, fraction or exponent, or past 2^64, is not number_unsigned.
  if (!value.is_number_unsigned())
    throw std::invalid_argument(what + " is not a non-negative integer");
  const auto v = value.get<std::uint64_t>();
  if (v > static_cast<std::uint64_t>(INT64_MAX))
    throw std::invalid_argument(what + " is larger than 2^63 - 1");
  return v;
}

} // namespace troupe
