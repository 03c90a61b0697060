// The PEGTL grammar of the config language and its translation into the syntax tree.
//
// Error reporting uses PEGTL's must_if: every rule that has an entry in `error_message` raises
// a parse_error at the point it fails, so each message names what was expected there
// ("expected ']' or ','") instead of a rule name. Those rules only appear at points where no
// other alternative remains, which keeps backtracking (sor, opt, star) unaffected elsewhere.
// Recursion depth is bounded before parsing (`check_nesting`) so hostile input cannot
// overflow the stack.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/parse_tree.hpp>

#include "graph/config/syntax.hpp"

namespace troupe {
namespace {

namespace pegtl = tao::pegtl;

namespace grammar {
using namespace tao::pegtl;

struct comment : seq<one<'#'>, until<eolf>> {};
struct ws : star<sor<plus<space>, comment>> {};
struct name_text : identifier {};

struct exponent_digits : plus<digit> {};
struct number : seq<opt<one<'+', '-'>>,
                    sor<seq<plus<digit>, opt<one<'.'>, star<digit>>>, seq<one<'.'>, plus<digit>>>,
                    opt<one<'e', 'E'>, opt<one<'+', '-'>>, exponent_digits>, opt<one<'%'>>> {};
struct escape_char : one<'"', '\\', 'n', 't'> {};
struct escaped : seq<one<'\\'>, escape_char> {};
struct string_close : one<'"'> {};
struct string_literal
    : seq<one<'"'>, star<sor<escaped, not_one<'"', '\\', '\n', '\r'>>>, string_close> {};
struct true_literal : TAO_PEGTL_KEYWORD("true") {};
struct false_literal : TAO_PEGTL_KEYWORD("false") {};

struct value;
struct list_close : one<']'> {};
struct list_item : seq<value> {};
struct list : seq<one<'['>, ws, opt<value, ws, star<one<','>, ws, list_item, ws>>, list_close> {};
struct argument_key : identifier {};
struct argument_value : seq<value> {};
// A value is a literal, a name or a call: an operator after one is refused by name, since the
// docs' `need = workers - backups` describes what a preset computes, not something to write.
struct arithmetic_operator : sor<one<'+', '*', '/'>, seq<one<'-'>, not_at<one<'>'>>>> {};
struct no_arithmetic : not_at<ws, arithmetic_operator> {};
struct named_argument : seq<argument_key, ws, one<'='>, ws, argument_value, must<no_arithmetic>> {};
struct argument : sor<named_argument, value> {};
struct next_argument : argument {};
struct arguments_close : one<')'> {};
struct arguments
    : seq<one<'('>, ws, opt<argument, ws, star<one<','>, ws, next_argument, ws>>, arguments_close> {
};
struct call : seq<name_text, opt<ws, arguments>> {};
struct value : sor<number, string_literal, true_literal, false_literal, list, call> {};

struct arrow : string<'-', '>'> {};
struct endpoint : call {};
struct route_target : endpoint {};
struct route : seq<endpoint, plus<ws, arrow, ws, route_target>> {};
struct assignment_value : value {};
struct assignment
    : seq<argument_key, ws, one<'='>, ws, must<assignment_value>, must<no_arithmetic>> {};
struct block_close : one<'}'> {};
struct block : seq<one<'{'>, ws, star<sor<assignment, route>, ws>, block_close> {};

struct section_name : identifier {};
struct binding_name : identifier {};
struct binding_call : call {};
struct head : sor<seq<binding_name, ws, one<'='>, ws, binding_call>, call> {};
struct statement_body : sor<block, seq<head, opt<ws, block>>> {};
struct statement : seq<section_name, ws, must<statement_body>> {};
struct end_of_file : eof {};
struct file : seq<ws, star<statement, ws>, end_of_file> {};

// clang-format off
template <typename> inline constexpr const char* error_message = nullptr;
template <> inline constexpr auto error_message<exponent_digits> = "expected digits after the exponent 'e'";
template <> inline constexpr auto error_message<escape_char> = "unknown escape: a string may contain \\\" \\\\ \\n \\t";
template <> inline constexpr auto error_message<string_close> = "unterminated string: a string must end with '\"' on the same line";
template <> inline constexpr auto error_message<list_item> = "expected a value after ',' in the list";
template <> inline constexpr auto error_message<list_close> = "expected ',' or ']' to continue or close the list";
template <> inline constexpr auto error_message<argument_value> = "expected a value after '='";
template <> inline constexpr auto error_message<next_argument> = "expected an argument after ','";
template <> inline constexpr auto error_message<arguments_close> = "expected ',' or ')' to continue or close the argument list";
template <> inline constexpr auto error_message<route_target> = "expected an actor after '->' (loader, compute, aggregate, shard)";
template <> inline constexpr auto error_message<assignment_value> = "expected a value after '='";
template <> inline constexpr auto error_message<no_arithmetic> = "a value is a number, a string, a name or a call: arithmetic (such as 'workers - 1') is not part of the language, write the number";
template <> inline constexpr auto error_message<block_close> = "expected 'key = value', 'actor -> actor' or '}'";
template <> inline constexpr auto error_message<binding_call> = "expected a call such as fashion_mnist(...) after '='";
template <> inline constexpr auto error_message<statement_body> = "expected a name, a call or '{' after the section name";
template <> inline constexpr auto error_message<end_of_file> = "expected a section: cluster, data, model, optimizer, schedule, topology or train";
// clang-format on

struct errors {
  template <typename Rule> static constexpr const char* message = error_message<Rule>;
};

template <typename Rule> using control = must_if<errors>::control<Rule>;

template <typename Rule>
using selector = parse_tree::selector<
  Rule, parse_tree::store_content::on<number, string_literal, true_literal, false_literal, list,
                                      call, name_text, arguments, named_argument, argument_key,
                                      route, endpoint, route_target, assignment, block,
                                      section_name, binding_name, binding_call, statement>>;

} // namespace grammar

using tree_node = pegtl::parse_tree::node;
constexpr int max_nesting = 32;
constexpr std::string_view utf8_byte_order_mark = "\xEF\xBB\xBF";

source_span span_of(const tree_node& n) {
  auto begin = n.begin();
  return source_span{begin.line, begin.column, begin.byte, n.string_view().size()};
}

source_span span_at(const std::string& text, std::size_t offset) {
  source_span s{1, 1, offset, 1};
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++s.line;
      s.column = 1;
    } else {
      ++s.column;
    }
  }
  return s;
}

// Rejects nesting deeper than max_nesting before the recursive grammar sees it, and a
// non-ASCII byte outside strings and comments, which PEGTL would otherwise report as a missing
// section or key. Strings and comments are skipped so what they hold does not count.
void check_text(const std::string& path, const std::string& text) {
  int depth = 0;
  bool in_string = false, in_comment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_comment) {
      in_comment = c != '\n';
    } else if (in_string) {
      if (c == '\\')
        ++i;
      else
        in_string = c != '"' && c != '\n';
    } else if (c == '#' || c == '"') {
      (c == '#' ? in_comment : in_string) = true;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      throw_config_error(path, text, span_at(text, i),
                         "a non-ASCII character: names and keys are ASCII letters, digits and "
                         "'_' (other text belongs in a string or a comment)");
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > max_nesting)
        throw_config_error(path, text, span_at(text, i),
                           "brackets nested deeper than " + std::to_string(max_nesting));
    } else if (c == ')' || c == ']' || c == '}') {
      depth = depth > 0 ? depth - 1 : 0;
    }
  }
}

std::string unescape(std::string_view quoted) {
  std::string out;
  for (std::size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '\\') {
      c = quoted[++i];
      c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
    }
    out += c;
  }
  return out;
}

struct translator {
  const std::string& path;
  const std::string& text;

  [[noreturn]] void fail(const tree_node& n, const std::string& message) const {
    throw_config_error(path, text, span_of(n), message);
  }

  syntax_value number(const tree_node& n) const {
    syntax_value v;
    v.span = span_of(n);
    auto s = n.string();
    errno = 0;
    v.number = std::strtod(s.c_str(), nullptr);
    if (errno == ERANGE || !std::isfinite(v.number))
      fail(n, "number '" + s + "' is out of range");
    v.integral = s.find_first_of(".eE") == std::string::npos;
    v.percent = s.back() == '%'; // a share of something (schedule steps: of the run)
    return v;
  }

  syntax_value value(const tree_node& n) const {
    namespace g = grammar;
    if (n.is_type<g::number>())
      return number(n);
    syntax_value v;
    v.span = span_of(n);
    if (n.is_type<g::string_literal>()) {
      v.type = syntax_value::kind::string;
      v.text = unescape(n.string_view());
    } else if (n.is_type<g::true_literal>() || n.is_type<g::false_literal>()) {
      v.type = syntax_value::kind::boolean;
      v.boolean = n.is_type<g::true_literal>();
    } else if (n.is_type<g::list>()) {
      v.type = syntax_value::kind::list;
      for (const auto& child : n.children)
        v.items.push_back(value(*child));
    } else {
      return call(n);
    }
    return v;
  }

  // call, endpoint, route_target and binding_call nodes: a name, then optional arguments.
  syntax_value call(const tree_node& n) const {
    syntax_value v;
    v.span = span_of(n);
    v.type = syntax_value::kind::name;
    v.text = n.children.at(0)->string();
    if (n.children.size() < 2)
      return v;
    v.type = syntax_value::kind::call;
    for (const auto& arg : n.children[1]->children) {
      syntax_argument a;
      if (arg->is_type<grammar::named_argument>()) {
        a.key = arg->children.at(0)->string();
        a.key_span = span_of(*arg->children[0]);
        a.value = value(*arg->children.at(1));
      } else {
        a.value = value(*arg);
      }
      v.arguments.push_back(std::move(a));
    }
    return v;
  }

  void block(const tree_node& n, syntax_statement& st) const {
    st.has_block = true;
    st.block_span = span_of(n);
    st.block_span.length = 1;
    for (const auto& item : n.children) {
      if (item->is_type<grammar::assignment>()) {
        syntax_assignment a;
        a.key = item->children.at(0)->string();
        a.key_span = span_of(*item->children[0]);
        a.value = value(*item->children.at(1));
        st.assignments.push_back(std::move(a));
      } else {
        syntax_route r;
        r.span = span_of(*item);
        for (const auto& end : item->children)
          r.endpoints.push_back(call(*end));
        st.routes.push_back(std::move(r));
      }
    }
  }

  syntax_statement statement(const tree_node& n) const {
    syntax_statement st;
    st.section = n.children.at(0)->string();
    st.section_span = span_of(*n.children[0]);
    for (std::size_t i = 1; i < n.children.size(); ++i) {
      const auto& child = *n.children[i];
      if (child.is_type<grammar::binding_name>()) {
        st.binding = child.string();
        st.binding_span = span_of(child);
      } else if (child.is_type<grammar::block>()) {
        block(child, st);
      } else {
        st.head = call(child);
      }
    }
    return st;
  }
};

} // namespace

syntax_file parse_syntax(std::string path, std::string text) {
  // Editors on some systems open a UTF-8 file with a byte-order mark; it is no part of the text.
  if (text.rfind(utf8_byte_order_mark, 0) == 0)
    text.erase(0, utf8_byte_order_mark.size());
  check_text(path, text);
  syntax_file file;
  std::unique_ptr<tree_node> root;
  try {
    pegtl::memory_input in(text.data(), text.size(), path);
    root =
      pegtl::parse_tree::parse<grammar::file, grammar::selector, pegtl::nothing, grammar::control>(
        in);
  } catch (const pegtl::parse_error& e) {
    const auto& pos = e.positions().front();
    throw_config_error(path, text, source_span{pos.line, pos.column, pos.byte, 1},
                       std::string(e.message()));
  }
  translator t{path, text};
  if (root)
    for (const auto& st : root->children)
      file.statements.push_back(t.statement(*st));
  file.path = std::move(path);
  file.text = std::move(text);
  return file;
}

} // namespace troupe
