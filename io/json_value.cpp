// Recursive descent over the JSON grammar; every error names the byte offset where the
// reader stopped, so a message about a damaged header points at the damage.
#include <troupe/io/json_value.hpp>

#include <stdexcept>

namespace troupe {

namespace {

constexpr int max_depth = 64;

class json_reader {
public:
  explicit json_reader(std::string_view text) : text_(text) {}

  json_value document() {
    auto v = value(0);
    skip_space();
    if (pos_ != text_.size())
      fail("unexpected text after the JSON value");
    return v;
  }

private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("at byte " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (
      pos_ < text_.size()
      && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size())
      fail("unexpected end of the JSON text");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c)
      fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      fail("unknown literal");
    pos_ += word.size();
  }

  json_value value(int depth) {
    if (depth > max_depth)
      fail("nested deeper than " + std::to_string(max_depth) + " levels");
    json_value v;
    const char c = peek();
    if (c == '{') {
      v.type = json_value::kind::object;
      object(v, depth);
    } else if (c == '[') {
      v.type = json_value::kind::array;
      array(v, depth);
    } else if (c == '"') {
      v.type = json_value::kind::string;
      v.text = string();
    } else if (c == 't' || c == 'f') {
      v.type = json_value::kind::boolean;
      v.boolean = c == 't';
      literal(v.boolean ? "true" : "false");
    } else if (c == 'n') {
      literal("null");
    } else {
      v.type = json_value::kind::number;
      v.text = number();
    }
    return v;
  }

  void object(json_value& v, int depth) {
    expect('{');
    if (peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      if (peek() != '"')
        fail("expected a member name");
      auto key = string();
      if (v.find(key) != nullptr)
        fail("duplicate key \"" + key + "\"");
      expect(':');
      v.members.emplace_back(std::move(key), value(depth + 1));
      if (peek() == '}') {
        ++pos_;
        return;
      }
      expect(',');
    }
  }

  void array(json_value& v, int depth) {
    expect('[');
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      v.items.push_back(value(depth + 1));
      if (peek() == ']') {
        ++pos_;
        return;
      }
      expect(',');
    }
  }

  std::string number() {
    const auto start = pos_;
    auto digits = [&] {
      const auto from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      return pos_ - from;
    };
    if (pos_ < text_.size() && text_[pos_] == '-')
      ++pos_;
    const auto int_start = pos_;
    const auto int_digits = digits();
    if (int_digits == 0 || (int_digits > 1 && text_[int_start] == '0'))
      fail("malformed number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (digits() == 0)
        fail("malformed number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (digits() == 0)
        fail("malformed number");
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size())
      fail("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= unsigned(h - 'A' + 10);
      else
        fail("bad hex digit in \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xc0 | (code >> 6));
      out += char(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += char(0xe0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3f));
      out += char(0x80 | (code & 0x3f));
    } else {
      out += char(0xf0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3f));
      out += char(0x80 | ((code >> 6) & 0x3f));
      out += char(0x80 | (code & 0x3f));
    }
  }

  unsigned escaped_code_point() {
    unsigned code = hex4();
    if (code >= 0xdc00 && code <= 0xdfff)
      fail("unpaired low surrogate");
    if (code >= 0xd800 && code <= 0xdbff) {
      if (text_.substr(pos_, 2) != "\\u")
        fail("unpaired high surrogate");
      pos_ += 2;
      const unsigned low = hex4();
      if (low < 0xdc00 || low > 0xdfff)
        fail("unpaired high surrogate");
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    }
    return code;
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= text_.size())
        fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        fail("unterminated escape");
      switch (const char e = text_[pos_++]) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u':
        append_utf8(out, escaped_code_point());
        break;
      default:
        --pos_;
        fail("unknown escape");
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

} // namespace

const json_value* json_value::find(const std::string& key) const {
  for (const auto& [name, value] : members)
    if (name == key)
      return &value;
  return nullptr;
}

json_value parse_json(std::string_view text) {
  return json_reader(text).document();
}

std::uint64_t json_unsigned(const json_value& value, const std::string& what) {
  const auto& t = value.text;
  if (value.type != json_value::kind::number || t.empty() || t.size() > 19
      || t.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(what + " is not a non-negative integer");
  const auto v = std::stoull(t);
  if (v > static_cast<std::uint64_t>(INT64_MAX))
    throw std::invalid_argument(what + " is larger than 2^63 - 1");
  return v;
}

} // namespace troupe
