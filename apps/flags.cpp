// The flag parser (flags.hpp). Help text is laid out here, once, for every command: each flag on
// its own line with its placeholder, the description wrapped under it so no line passes 100
// columns whatever a help string's length.
#include "apps/flags.hpp"

#include "apps/integer_text.hpp"

#include <troupe/graph/config/key_ranges.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace troupe {

namespace {

double parse_real(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw usage_error("--" + flag + ": '" + text + "' is not a finite number");
  return v;
}

template <class T>
std::string to_text(const T& v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

constexpr std::size_t help_width = 100;
constexpr std::size_t help_indent = 8;

// `text` as lines of at most `width` columns, broken at spaces, each prefixed by `indent`.
std::string wrap(const std::string& text, std::size_t indent, std::size_t width) {
  std::istringstream words(text);
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty())
    out += std::string(indent, ' ') + line + "\n";
  return out;
}

} // namespace

std::string number_text(double v) { return shortest_number(v); }

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

flag_set::flag_set(std::string command, std::string summary)
  : command_(std::move(command)), summary_(std::move(summary)) {}

void flag_set::add(const std::string& name, std::string& target, const std::string& help) {
  flags_.push_back({name, target.empty() ? "" : target, help, false,
                    [&target](const std::string& v) { target = v; }, "TEXT"});
}

void flag_set::add(const std::string& name, std::int64_t& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false,
                    [&target, name](const std::string& v) { target = flag_integer(name, v); }, "N"});
}

void flag_set::add(const std::string& name, int& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false, [&target, name](const std::string& v) {
                      target = static_cast<int>(flag_integer(name, v, std::numeric_limits<int>::min(),
                                                             std::numeric_limits<int>::max()));
                    }, "N"});
}

void flag_set::add(const std::string& name, double& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false,
                    [&target, name](const std::string& v) { target = parse_real(name, v); }, "X"});
}

void flag_set::add(const std::string& name, float& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false, [&target, name](const std::string& v) {
                      target = static_cast<float>(parse_real(name, v));
                    }, "X"});
}

void flag_set::add_switch(const std::string& name, bool& target, const std::string& help) {
  flags_.push_back({name, "", help, true, [&target](const std::string&) { target = true; }, ""});
}

void flag_set::set_placeholder(const std::string& name, const std::string& placeholder) {
  for (auto& f : flags_)
    if (f.name == name)
      f.placeholder = placeholder;
}

void flag_set::hide(const std::string& name) {
  for (auto& f : flags_)
    if (f.name == name)
      f.hidden = true;
}

std::string flag_set::unknown_flag(const std::string& name) const {
  const flag* nearest = nullptr;
  std::size_t best = std::max<std::size_t>(2, name.size() / 4) + 1;
  for (const auto& f : flags_)
    if (auto d = edit_distance(name, f.name); !f.hidden && d < best) {
      best = d;
      nearest = &f;
    }
  return "unknown flag --" + name + (nearest ? " (did you mean --" + nearest->name + "?)" : "")
         + "; see troupe " + command_ + " --help";
}

const flag_set::flag* flag_set::find(const std::string& name) const {
  for (const auto& f : flags_)
    if (f.name == name)
      return &f;
  return nullptr;
}

bool flag_set::parse(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h")
      return false;
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw usage_error("unexpected argument '" + arg + "' (flags start with --)");
    std::string name = arg.substr(2);
    std::string value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const flag* f = find(name);
    if (f == nullptr)
      throw usage_error(unknown_flag(name));
    if (f->is_switch && inline_value)
      throw usage_error("--" + name + " takes no value");
    if (!f->is_switch && !inline_value) {
      if (i + 1 >= args.size())
        throw usage_error("--" + name + " needs a value");
      value = args[++i];
    }
    f->assign(value);  // a flag given again overrides what it said before
    given_.insert(name);
  }
  return true;
}

std::string flag_set::help() const {
  std::string out = "usage: troupe " + command_ + (operands_.empty() ? "" : " " + operands_)
                    + " [flags]\n\n" + wrap(summary_, 0, help_width)
                    + "\nflags:\n";
  for (const auto& f : flags_) {
    if (f.hidden)
      continue;
    out += "  --" + f.name + (f.is_switch ? "" : " " + f.placeholder) + "\n";
    const bool shown = !f.is_switch && !f.default_text.empty();
    out += wrap(f.help + (shown ? " (default: " + f.default_text + ")" : ""), help_indent, help_width);
  }
  out += "  --help\n" + wrap("print this help and exit", help_indent, help_width);
  return out;
}

void check_range(const char* flag, std::int64_t v, std::int64_t min, std::int64_t max,
                 const std::string& why) {
  if (v < min || v > max)
    throw usage_error(std::string("--") + flag + " must be between " + std::to_string(min)
                      + (why.empty() ? "" : " (" + why + ")") + " and " + std::to_string(max)
                      + ", got " + std::to_string(v));
}

void check_real_range(const char* flag, double v, double min, double max, const std::string& why) {
  if (!(v >= min && v <= max))
    throw usage_error(std::string("--") + flag + " must be between " + number_text(min)
                      + (why.empty() ? "" : " (" + why + ")") + " and " + number_text(max)
                      + ", got " + number_text(v));
}

} // namespace troupe
