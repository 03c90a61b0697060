// The flags (flags.hpp) on CLI11. CLI11 parses: long names, `--name value` and `--name=value`,
// the last value of a repeated flag (MultiOptionPolicy::TakeLast), switches that refuse a value
// (disable_flag_override), --help. What CLI11 words or lays out differently from what the
// project promises is customised here rather than re-parsed: values are converted by the
// project's own readers (integer_text.hpp) so messages name the flag as they always did;
// arguments CLI11 does not know are left to us (allow_extras) for the "did you mean" message;
// CLI11's few parse errors are reworded; help comes from a formatter of our own, each flag on
// its own line with its placeholder and the description wrapped under it so no line passes
// 100 columns whatever a help string's length.
#include "apps/flags.hpp"

#include <CLI/CLI.hpp>

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

template <class T> std::string to_text(const T& v) {
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

std::string number_text(double v) {
  return shortest_number(v);
}

bool on_off(const char* flag, const std::string& value) {
  if (value != "on" && value != "off")
    throw usage_error(std::string("--") + flag + ": '" + value + "' is not one of on, off");
  return value == "on";
}

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

namespace {

// Help as the project lays it out: usage line, summary, then each visible flag.
std::string help_text(const flag_set::text& t, const CLI::App& app) {
  std::string out = "usage: troupe " + t.command + (t.operands.empty() ? "" : " " + t.operands)
                    + " [flags]\n\n" + wrap(t.summary, 0, help_width) + "\nflags:\n";
  for (const CLI::Option* o : app.get_options()) {
    if (o == app.get_help_ptr() || o->get_group().empty()) // the empty group: hidden
      continue;
    const bool is_switch = o->get_type_size() == 0;
    out += "  --" + o->get_lnames().front() + (is_switch ? "" : " " + o->get_type_name()) + "\n";
    const auto& default_text = o->get_default_str();
    out +=
      wrap(o->get_description() + (default_text.empty() ? "" : " (default: " + default_text + ")"),
           help_indent, help_width);
  }
  return out + "  --help\n" + wrap("print this help and exit", help_indent, help_width);
}

// The flag a CLI11 message starts with: "--count: 1 required TEXT missing", "fast was given a
// disallowed flag override".
std::string flag_in(const std::string& message) {
  auto name = message.substr(0, message.find_first_of(": "));
  return name.rfind("--", 0) == 0 ? name : "--" + name;
}

} // namespace

flag_set::flag_set(std::string command, std::string summary)
    : app_(std::make_unique<CLI::App>()),
      text_(std::make_shared<text>(text{std::move(command), std::move(summary), ""})) {
  app_->allow_extras(); // unknown arguments are refused by parse(), in the project's words
  app_->set_help_flag("-h,--help", "print this help and exit");
  app_->formatter_fn([t = text_](const CLI::App* app, std::string, CLI::AppFormatMode) {
    return help_text(*t, *app);
  });
}

flag_set::~flag_set() = default;
flag_set::flag_set(flag_set&&) noexcept = default;
flag_set& flag_set::operator=(flag_set&&) noexcept = default;

void flag_set::add_value(const std::string& name, std::string default_text, const std::string& help,
                         std::function<void(const std::string&)> assign, const char* placeholder) {
  app_->add_option_function<std::string>("--" + name, std::move(assign), help)
    ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast) // a flag given again overrides
    ->type_name(placeholder)
    ->default_str(std::move(default_text));
}

void flag_set::add(const std::string& name, std::string& target, const std::string& help) {
  add_value(
    name, target, help, [&target](const std::string& v) { target = v; }, "TEXT");
}

void flag_set::add(const std::string& name, std::int64_t& target, const std::string& help) {
  add_value(
    name, to_text(target), help,
    [&target, name](const std::string& v) { target = flag_integer(name, v); }, "N");
}

void flag_set::add(const std::string& name, int& target, const std::string& help) {
  add_value(
    name, to_text(target), help,
    [&target, name](const std::string& v) {
      target = static_cast<int>(
        flag_integer(name, v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    },
    "N");
}

void flag_set::add(const std::string& name, double& target, const std::string& help) {
  add_value(
    name, to_text(target), help,
    [&target, name](const std::string& v) { target = parse_real(name, v); }, "X");
}

void flag_set::add(const std::string& name, float& target, const std::string& help) {
  add_value(
    name, to_text(target), help,
    [&target, name](const std::string& v) { target = static_cast<float>(parse_real(name, v)); },
    "X");
}

void flag_set::add_switch(const std::string& name, bool& target, const std::string& help) {
  app_
    ->add_flag_callback(
      "--" + name, [&target] { target = true; }, help)
    ->disable_flag_override(); // `--fast=1` is refused: a switch takes no value
}

void flag_set::set_placeholder(const std::string& name, const std::string& placeholder) {
  if (auto* o = app_->get_option_no_throw("--" + name))
    o->type_name(placeholder);
}

void flag_set::hide(const std::string& name) {
  if (auto* o = app_->get_option_no_throw("--" + name))
    o->group(""); // CLI11's hidden group: left out of help, and of "did you mean" below
}

void flag_set::keep_only(const std::set<std::string>& names, std::string why) {
  kept_ = names;
  unread_why_ = std::move(why);
  for (const CLI::Option* o : app_->get_options())
    if (o != app_->get_help_ptr() && kept_.count(o->get_lnames().front()) == 0)
      hide(o->get_lnames().front());
}

std::string flag_set::unknown_flag(const std::string& name) const {
  std::string nearest;
  std::size_t best = std::max<std::size_t>(2, name.size() / 4) + 1;
  for (const CLI::Option* o : app_->get_options()) {
    if (o == app_->get_help_ptr() || o->get_group().empty())
      continue;
    const auto& known = o->get_lnames().front();
    if (auto d = edit_distance(name, known); d < best) {
      best = d;
      nearest = known;
    }
  }
  return "unknown flag --" + name + (nearest.empty() ? "" : " (did you mean --" + nearest + "?)")
         + "; see troupe " + text_->command + " --help";
}

void flag_set::refuse(const std::string& arg) const {
  if (arg.rfind("--", 0) != 0 || arg.size() == 2)
    throw usage_error("unexpected argument '" + arg + "' (flags start with --)");
  throw usage_error(unknown_flag(arg.substr(2, arg.find('=') - 2)));
}

bool flag_set::parse(const std::vector<std::string>& args) {
  // CLI11 reads `--name=` (an empty value) as `--name` and takes the next argument as the
  // value; given as two arguments the empty value is kept (`--lr-step-epochs=`: the default).
  // CLI11 takes the arguments reversed, last first.
  std::vector<std::string> reversed;
  for (auto a = args.rbegin(); a != args.rend(); ++a) {
    const bool empty_value =
      a->size() > 3 && a->rfind("--", 0) == 0 && a->back() == '=' && a->find('=') == a->size() - 1;
    if (empty_value)
      reversed.push_back("");
    reversed.push_back(empty_value ? a->substr(0, a->size() - 1) : *a);
  }
  try {
    app_->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return false;
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string what = e.what();
    throw usage_error(
      flag_in(what)
      + (what.find("flag override") != std::string::npos ? " takes no value" : " needs a value"));
  } catch (const CLI::ParseError& e) {
    throw usage_error(e.what());
  }
  if (const auto extras = app_->remaining(); !extras.empty())
    refuse(extras.front());
  given_.clear();
  for (const CLI::Option* o : app_->get_options())
    if (o != app_->get_help_ptr() && o->count() > 0)
      given_.insert(o->get_lnames().front());
  if (!kept_.empty())
    for (const auto& name : given_)
      if (kept_.count(name) == 0)
        throw usage_error("--" + name + " " + unread_why_);
  return true;
}

std::vector<std::string> flag_set::names() const {
  std::vector<std::string> out;
  for (const CLI::Option* o : app_->get_options())
    if (o != app_->get_help_ptr())
      out.push_back(o->get_lnames().front());
  return out;
}

std::string flag_set::help() const {
  return app_->help();
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
