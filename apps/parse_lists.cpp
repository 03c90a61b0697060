// Comma-separated list flags (--lr-step-epochs, --image-shape).
#include <sstream>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/integer_text.hpp"

namespace troupe {

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    parts.push_back(item);
  if (!text.empty() && text.back() == ',')
    parts.push_back("");
  return parts;
}

} // namespace

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

std::vector<double> parse_number_list(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  for (const auto& part : split_commas(text)) {
    char* end = nullptr;
    double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0')
      throw usage_error("--" + flag + ": '" + part + "' in '" + text + "' is not a number");
    out.push_back(v);
  }
  return out;
}

std::vector<std::int64_t> parse_shape(const std::string& flag, const std::string& text) {
  std::vector<std::int64_t> out;
  for (const auto& part : split_commas(text)) {
    const auto v = parse_integer(part);
    if (!v || *v <= 0)
      throw usage_error("--" + flag + ": '" + part + "' in '" + text
                        + "' is not a positive integer");
    out.push_back(*v);
  }
  if (out.size() != 3)
    throw usage_error("--" + flag + ": expected C,H,W (three numbers), got '" + text + "'");
  return out;
}

} // namespace troupe
