// The key table's assembly, lookups and reference (key_table.hpp); each section's entries are
// declared beside their readers (cluster_keys.cpp, data_keys.cpp, run_keys.cpp).
#include <troupe/graph/config/key_table.hpp>

#include <sstream>
#include <stdexcept>

#include "graph/config/key_builder.hpp"

namespace troupe {

namespace {

std::vector<config_key> build_table() {
  using namespace key_entries;
  std::vector<config_key> keys;
  for (auto&& section :
       {cluster_keys(), data_keys(), model_keys(), optimizer_keys(), schedule_keys(), train_keys()})
    keys.insert(keys.end(), section.begin(), section.end());
  return keys;
}

// A value as the language writes it, for the reference's default column.
struct written {
  key_type type;
  template <typename T> std::string operator()(const T& value) const {
    if constexpr (std::is_same_v<T, bool>)
      return value ? "true" : "false";
    else if constexpr (!std::is_arithmetic_v<T> && !std::is_same_v<T, std::string>)
      return ""; // a list: its key says its default in words
    else if constexpr (std::is_same_v<T, std::string>)
      return type == key_type::name ? "`" + value + "`" : "`\"" + value + "\"`";
    else
      return shortest_number(static_cast<double>(value));
  }
};

std::string cell(std::string text) {
  for (std::size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2))
    text.replace(at, 1, "\\|");
  return text;
}

// "synthetic recordio" -> "synthetic, recordio"
std::string only_text(const char* only) {
  std::istringstream words(only);
  std::string text;
  for (std::string word; words >> word;)
    text += (text.empty() ? "" : ", ") + word;
  return text;
}

} // namespace

bool config_key::taken_by(const std::string& call) const {
  if (*only == '\0' || call.empty())
    return true;
  std::istringstream words(only);
  for (std::string word; words >> word;)
    if (word == call)
      return true;
  return false;
}

const std::vector<config_key>& config_keys() {
  static const std::vector<config_key> keys = build_table();
  return keys;
}

const config_key& config_key_of(const std::string& path) {
  for (const auto& k : config_keys())
    if (k.path() == path)
      return k;
  throw std::out_of_range("no config key " + path);
}

const config_key* config_key_of_flag(const std::string& flag) {
  for (const auto& k : config_keys())
    if (*k.flag != '\0' && flag == k.flag)
      return &k;
  return nullptr;
}

std::vector<std::string> section_keys(const std::string& section, const std::string& call) {
  std::vector<std::string> names;
  for (const auto& k : config_keys())
    if (section == k.section && k.taken_by(call))
      names.emplace_back(k.name);
  return names;
}

std::string default_text(const config_key& key) {
  if (*key.default_text != '\0')
    return key.default_text;
  job_config defaults;
  key_target at{defaults, defaults.train_data};
  return std::visit(
    [&](auto field) -> std::string {
      if constexpr (std::is_same_v<decltype(field), std::monostate>)
        return "";
      else
        return written{key.type}(field(at).value);
    },
    key.field);
}

std::string key_reference() {
  std::string out;
  const char* section = "";
  for (const auto& k : config_keys()) {
    if (std::string(section) != k.section) {
      if (*section != '\0')
        out += "<!-- end keys -->\n";
      section = k.section;
      out += std::string("<!-- keys: ") + section + " -->\n";
      out += "| key | default | range | flag | meaning |\n|---|---|---|---|---|\n";
    }
    std::string range = *k.range_text != '\0' ? k.range_text : k.range ? range_text(*k.range) : "";
    std::string meaning = k.help;
    if (*k.more != '\0')
      meaning += std::string("; ") + k.more;
    if (*k.only != '\0')
      meaning = only_text(k.only) + ": " + meaning;
    out += "| `" + std::string(k.name) + "` | " + cell(default_text(k)) + " | " + cell(range)
           + " | " + (*k.flag != '\0' ? "`--" + std::string(k.flag) + "`" : std::string()) + " | "
           + cell(meaning) + " |\n";
  }
  if (*section != '\0')
    out += "<!-- end keys -->\n";
  return out;
}

} // namespace troupe
