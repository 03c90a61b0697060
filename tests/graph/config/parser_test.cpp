// Syntax-level tests: every construct of the grammar lands in the syntax tree with the right
// kind, text and position, and syntax errors point at the right byte.
#include <catch2/catch.hpp>

#include "graph/config/syntax.hpp"

namespace troupe {
namespace {

std::string headline_of(const std::string& text) {
  try {
    parse_syntax("t.troupe", text);
  } catch (const config_error& e) {
    return e.headline();
  }
  return "no error";
}

TEST_CASE("parser reads sections, bindings, calls, blocks and routes") {
  auto f = parse_syntax(
    "t.troupe", "# comment\ncluster { servers = 2 workers = 4 }\n"
                "data train = mnist(\"/d\", batch = 32)  # trailing\n"
                "topology bsp {\n  loader -> compute\n  compute -> aggregate(all) -> shard\n}\n");
  REQUIRE(f.statements.size() == 3);
  const auto& cluster = f.statements[0];
  CHECK(cluster.section == "cluster");
  CHECK(cluster.has_block);
  REQUIRE(cluster.assignments.size() == 2);
  CHECK(cluster.assignments[1].key == "workers");
  CHECK(cluster.assignments[1].value.number == 4);
  CHECK(cluster.assignments[1].key_span.line == 2);
  CHECK(cluster.assignments[1].key_span.column == 23);
  const auto& data = f.statements[1];
  CHECK(data.binding == "train");
  REQUIRE(data.head);
  CHECK(data.head->type == syntax_value::kind::call);
  REQUIRE(data.head->arguments.size() == 2);
  CHECK(data.head->arguments[0].key.empty());
  CHECK(data.head->arguments[0].value.text == "/d");
  CHECK(data.head->arguments[1].key == "batch");
  const auto& topo = f.statements[2];
  CHECK(topo.head->type == syntax_value::kind::name);
  REQUIRE(topo.routes.size() == 2);
  CHECK(topo.routes[1].endpoints.size() == 3);
  CHECK(topo.routes[1].endpoints[1].text == "aggregate");
  CHECK(topo.routes[1].endpoints[1].arguments[0].value.text == "all");
}

TEST_CASE("parser reads every value kind") {
  auto f = parse_syntax("t", "model x(a = -1.5e2, b = 7, c = \"q\\\"t\", d = true, e = false, "
                             "f = [1, [2]], g = name, h = f(1))");
  const auto& args = f.statements[0].head->arguments;
  REQUIRE(args.size() == 8);
  CHECK(args[0].value.number == -150);
  CHECK_FALSE(args[0].value.integral);
  CHECK(args[1].value.integral);
  CHECK(args[2].value.text == "q\"t");
  CHECK(args[3].value.boolean);
  CHECK(args[4].value.type == syntax_value::kind::boolean);
  CHECK(args[5].value.items.size() == 2);
  CHECK(args[5].value.items[1].type == syntax_value::kind::list);
  CHECK(args[6].value.type == syntax_value::kind::name);
  CHECK(args[7].value.type == syntax_value::kind::call);
}

TEST_CASE("parser accepts empty files and comments only") {
  CHECK(parse_syntax("t", "").statements.empty());
  CHECK(parse_syntax("t", "# nothing\n\n").statements.empty());
}

TEST_CASE("parser errors carry line, column and a caret") {
  CHECK(headline_of("model lenet(classes = [1, 2")
        == "t.troupe:1:28: expected ',' or ']' to continue or close the list");
  CHECK(headline_of("model\n")
        == "t.troupe:2:1: expected a name, a call or '{' after the section name");
  try {
    parse_syntax("t.troupe", "train { epochs = 1e999 }");
    FAIL("no error");
  } catch (const config_error& e) {
    std::string text = e.what();
    CHECK(text.find(" 1 | train { epochs = 1e999 }") != std::string::npos);
    CHECK(text.find("^~~~~") != std::string::npos);
  }
}

TEST_CASE("a UTF-8 byte-order mark is no part of the text") {
  auto f = parse_syntax("t.troupe", "\xEF\xBB\xBFmodel mlp\ntrain { epochs = 2 }\n");
  REQUIRE(f.statements.size() == 2);
  CHECK(f.statements[0].section == "model");
  CHECK(f.statements[0].section_span.column == 1);
  CHECK(f.statements[1].assignments.at(0).key_span.column == 9);
  // Only at the start: elsewhere it is a non-ASCII character outside a string.
  CHECK(headline_of("model mlp\n\xEF\xBB\xBFtrain { epochs = 2 }")
        == "t.troupe:2:1: a non-ASCII character: names and keys are ASCII letters, digits and '_' "
           "(other text belongs in a string or a comment)");
}

TEST_CASE("non-ASCII text is allowed in strings and comments only") {
  CHECK(headline_of("# caf\xC3\xA9\nmodel mlp  # \xC3\xA9\ndata train = mnist(\"/d/\xC3\xA9\")\n")
        == "no error");
  CHECK(
    headline_of("model mlp\ncluster { w\xC3\xB6rkers = 2 }").rfind("t.troupe:2:12: a non-ASCII", 0)
    == 0);
}

TEST_CASE("a value followed by an operator is refused as arithmetic") {
  const std::string refused = "a value is a number, a string, a name or a call: arithmetic (such "
                              "as 'workers - 1') is not part of the language, write the number";
  CHECK(headline_of("topology { compute -> aggregate(all, need = workers - 1) }")
        == "t.troupe:1:52: " + refused);
  CHECK(headline_of("cluster { workers = 2 * 2 }") == "t.troupe:1:22: " + refused);
  // A route's arrow after a value is no operator.
  CHECK(headline_of("topology { shard -> compute(all) -> shard }") == "no error");
  CHECK(headline_of("cluster { workers = 2\n}\ntopology { compute -> shard }") == "no error");
}

TEST_CASE("parser survives hostile input") {
  CHECK(headline_of(std::string(100000, '[')) != "no error");
  CHECK(headline_of(std::string("\0\1\2\xff", 4)) != "no error");
  CHECK(headline_of("model x(\"" + std::string(10000, 'a')) != "no error");
  CHECK(headline_of("train { epochs = 99999999999999999999999999999 }") == "no error");
}

} // namespace
} // namespace troupe
