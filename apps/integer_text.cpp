// Integers from text (integer_text.hpp): digits accumulated with an overflow check before each
// step, so no value past 64 bits is ever formed.
#include "apps/integer_text.hpp"

#include <limits>

#include "apps/flags.hpp"

namespace troupe {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  const bool negative = !text.empty() && text[0] == '-';
  if (negative)
    text.remove_prefix(1);
  if (text.empty())
    return std::nullopt;
  // Accumulated as a negative number: INT64_MIN has no positive counterpart.
  std::int64_t v = 0;
  constexpr auto lowest = std::numeric_limits<std::int64_t>::min();
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    const int digit = c - '0';
    if (v < (lowest + digit) / 10)
      return std::nullopt;
    v = v * 10 - digit;
  }
  if (!negative) {
    if (v == lowest)
      return std::nullopt;
    v = -v;
  }
  return v;
}

std::int64_t flag_integer(const std::string& flag, const std::string& text, std::int64_t min,
                          std::int64_t max) {
  const auto v = parse_integer(text);
  if (!v)
    throw usage_error("--" + flag + ": '" + text + "' is not an integer");
  if (*v < min || *v > max)
    throw usage_error("--" + flag + ": " + text + " is out of range (" + std::to_string(min)
                      + " to " + std::to_string(max) + ")");
  return *v;
}

} // namespace troupe
