// Formats diagnostics. The echoed source line is sanitized (tabs become spaces, other control
// or non-ASCII bytes become '?') so that a binary file cannot garble the terminal and the caret
// stays under the byte it points at.
#include <troupe/graph/config/diagnostics.hpp>

#include <algorithm>

namespace troupe {

namespace {

std::string printable_line(const std::string& text, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end && out.size() < 200; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    out += c == '\t' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  }
  return out;
}

} // namespace

std::string format_diagnostic(const std::string& path, const std::string& text,
                              const source_span& span, const std::string& message) {
  if (span.line == 0)
    return path + ": " + message;
  std::string out =
    path + ":" + std::to_string(span.line) + ":" + std::to_string(span.column) + ": " + message;
  auto offset = std::min(span.offset, text.size());
  auto begin = offset;
  while (begin > 0 && text[begin - 1] != '\n')
    --begin;
  auto end = std::min(text.find('\n', begin), text.size());
  auto line = printable_line(text, begin, end);
  auto gutter = std::to_string(span.line);
  out += "\n " + gutter + " | " + line + "\n " + std::string(gutter.size(), ' ') + " | ";
  auto col = std::min<std::size_t>(span.column - 1, line.size());
  auto width =
    std::max<std::size_t>(1, std::min(span.length, line.size() - std::min(col, line.size())));
  out += std::string(col, ' ') + "^" + std::string(width - 1, '~');
  return out;
}

void throw_config_error(const std::string& path, const std::string& text, const source_span& span,
                        const std::string& message) {
  auto diagnostic = format_diagnostic(path, text, span, message);
  auto headline = diagnostic.substr(0, diagnostic.find('\n'));
  throw config_error(std::move(diagnostic), std::move(headline));
}

} // namespace troupe
