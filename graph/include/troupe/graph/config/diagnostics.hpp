// Source positions and the error type of the config language.
//
// Every error a config can cause, from a stray character to a wiring that cannot train, is a
// `config_error` whose text reads like a compiler's: `file:line:col: message`, then the
// offending source line and a caret underlining the text. Positions are 1-based and count
// bytes, which is what an editor's "go to line:col" expects for ASCII configs.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace troupe {

/// Where a piece of text sits in a config file. line 0 means "nowhere" (a default value).
struct source_span {
  std::size_t line = 0;   ///< 1-based
  std::size_t column = 0; ///< 1-based, in bytes
  std::size_t offset = 0; ///< bytes from the start of the file
  std::size_t length = 0; ///< bytes underlined (at least one caret is drawn)
};

/// A config the language rejects. what() is the full diagnostic (several lines);
/// headline() is its first line, `file:line:col: message`.
class config_error : public std::runtime_error {
public:
  config_error(std::string diagnostic, std::string headline)
      : std::runtime_error(std::move(diagnostic)), headline_(std::move(headline)) {}
  const std::string& headline() const { return headline_; }

private:
  std::string headline_;
};

/// The diagnostic text for `message` at `span` of `text` (the whole file) named `path`.
std::string format_diagnostic(const std::string& path, const std::string& text,
                              const source_span& span, const std::string& message);

/// Throws the config_error for `message` at `span`.
[[noreturn]] void throw_config_error(const std::string& path, const std::string& text,
                                     const source_span& span, const std::string& message);

} // namespace troupe
