#include "apps/flags.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace troupe {

namespace {

std::int64_t parse_integer(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw usage_error("--" + flag + ": '" + text + "' is not an integer");
  return v;
}

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

} // namespace

flag_set::flag_set(std::string command, std::string summary)
  : command_(std::move(command)), summary_(std::move(summary)) {}

void flag_set::add(const std::string& name, std::string& target, const std::string& help) {
  flags_.push_back({name, target.empty() ? "\"\"" : target, help, false,
                    [&target](const std::string& v) { target = v; }});
}

void flag_set::add(const std::string& name, std::int64_t& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false,
                    [&target, name](const std::string& v) { target = parse_integer(name, v); }});
}

void flag_set::add(const std::string& name, int& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false, [&target, name](const std::string& v) {
                      auto x = parse_integer(name, v);
                      if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
                        throw usage_error("--" + name + ": " + v + " is out of range");
                      target = static_cast<int>(x);
                    }});
}

void flag_set::add(const std::string& name, double& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false,
                    [&target, name](const std::string& v) { target = parse_real(name, v); }});
}

void flag_set::add(const std::string& name, float& target, const std::string& help) {
  flags_.push_back({name, to_text(target), help, false, [&target, name](const std::string& v) {
                      target = static_cast<float>(parse_real(name, v));
                    }});
}

void flag_set::add_switch(const std::string& name, bool& target, const std::string& help) {
  flags_.push_back({name, "off", help, true, [&target](const std::string&) { target = true; }});
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
      throw usage_error(command_ + ": unexpected argument '" + arg + "' (flags start with --)");
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
      throw usage_error(command_ + ": unknown flag --" + name + " (see troupe " + command_
                        + " --help)");
    if (f->is_switch && inline_value)
      throw usage_error("--" + name + " takes no value");
    if (!f->is_switch && !inline_value) {
      if (i + 1 >= args.size())
        throw usage_error("--" + name + " needs a value");
      value = args[++i];
    }
    if (given_.count(name))
      throw usage_error("--" + name + " given twice");
    f->assign(value);
    given_.insert(name);
  }
  return true;
}

std::string flag_set::help() const {
  std::ostringstream out;
  out << "usage: troupe " << command_ << " [flags]\n\n" << summary_ << "\n\nflags:\n";
  for (const auto& f : flags_) {
    std::string left = "  --" + f.name + (f.is_switch ? "" : " VALUE");
    out << left;
    out << std::string(left.size() < 28 ? 28 - left.size() : 1, ' ') << f.help
        << " (default: " << f.default_text << ")\n";
  }
  out << "  --help                    print this help\n";
  return out.str();
}

void check_range(const char* flag, std::int64_t v, std::int64_t min, std::int64_t max,
                 const std::string& why) {
  if (v < min || v > max)
    throw usage_error(std::string("--") + flag + " must be between " + std::to_string(min)
                      + (why.empty() ? "" : " (" + why + ")") + " and " + std::to_string(max)
                      + ", got " + std::to_string(v));
}

} // namespace troupe
