// The syntax tree of a config file: what was written, where, before any meaning is given.
//
// A file is a list of statements `SECTION [NAME =] [CALL] [{ ITEMS }]`; items are assignments
// `key = value` or routes `actor -> actor [-> actor...]`. Values are numbers, strings,
// booleans, names, lists `[...]` and calls `name(args)`. Keeping this layer generic lets the
// grammar stay small and puts every "unknown key / wrong type" decision in one place
// (job_config.cpp) with the position of the offending text.
//
// Thread-safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <troupe/graph/config/diagnostics.hpp>

namespace troupe {

struct syntax_argument;

struct syntax_value {
  enum class kind { number, string, boolean, name, call, list };
  kind type = kind::number;
  source_span span;
  double number = 0;
  bool integral = false; ///< number written without '.' or exponent
  bool percent = false;  ///< written with a trailing '%' (`number` holds 50 for 50%)
  bool boolean = false;
  std::string text;                       ///< string contents, or the name / call name
  std::vector<syntax_value> items;        ///< list elements
  std::vector<syntax_argument> arguments; ///< call arguments, in order
};

/// `value` (positional: key empty) or `key = value` inside a call.
struct syntax_argument {
  std::string key;
  source_span key_span;
  syntax_value value;
};

struct syntax_assignment {
  std::string key;
  source_span key_span;
  syntax_value value;
};

/// `a -> b -> c`: endpoints are name or call values.
struct syntax_route {
  std::vector<syntax_value> endpoints;
  source_span span;
};

struct syntax_statement {
  std::string section;
  source_span section_span;
  std::string binding; ///< `data train = ...`: "train"; empty when absent
  source_span binding_span;
  std::optional<syntax_value> head; ///< the call or name after the section (and binding)
  bool has_block = false;
  source_span block_span; ///< the opening '{'
  std::vector<syntax_assignment> assignments;
  std::vector<syntax_route> routes;
};

struct syntax_file {
  std::string path;
  std::string text;
  std::vector<syntax_statement> statements;
};

/// Parses `text`; throws config_error (position and caret) on any syntax error. Never
/// crashes: nesting deeper than 32 brackets and numbers beyond double range are errors.
syntax_file parse_syntax(std::string path, std::string text);

} // namespace troupe
