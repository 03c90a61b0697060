// Hosts files in the dmlc format, errors naming file and line, and the ssh command line, whose
// quoting is checked by handing it to a real shell.
#include <catch2/catch.hpp>

#include <cstdio>
#include <sstream>

#include "apps/flags.hpp"
#include "apps/launch/hosts_file.hpp"

using namespace troupe;
using namespace troupe::launch;

namespace {

std::vector<host> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_hosts(in, "hosts.txt");
}

// What `sh -c COMMAND` prints.
std::string shell_output(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    out.append(buffer, n);
  CHECK(::pclose(pipe) == 0);
  return out;
}

const std::vector<std::string> nasty{
  "it's", "a b",   "$HOME", "`id`", "\"q\"", "back\\slash", "",  "new\nline",    "*",
  "-n",   ";rm x", "a=b",   "'",    "''",    "!x",          "~", "plain-arg_1.0"};

} // namespace

TEST_CASE(
  "a hosts file lists hosts with optional ssh ports, and slots, comments, blanks are skipped") {
  auto hosts = parse("# the cluster\n"
                     "node1\n"
                     "\n"
                     "  node2:2222   # a comment\n"
                     "10.0.0.3 slots=4\n"
                     "node4:22 slots=1\n"
                     "fe80::1\n");
  REQUIRE(hosts.size() == 5);
  CHECK(hosts[0].name == "node1");
  CHECK(hosts[0].ssh_port == 0);
  CHECK(hosts[1].name == "node2");
  CHECK(hosts[1].ssh_port == 2222);
  CHECK(hosts[2].name == "10.0.0.3");
  CHECK(hosts[2].ssh_port == 0);
  CHECK(hosts[3].name == "node4");
  CHECK(hosts[3].ssh_port == 22);
  CHECK(hosts[4].name == "fe80::1"); // several colons: an IPv6 address, no port
  CHECK(hosts[4].ssh_port == 0);
}

TEST_CASE("a bad hosts file line is a usage error naming file and line") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse("a\nb:x\n"), Contains("hosts.txt:2: bad ssh port 'x'"));
  CHECK_THROWS_WITH(parse("a:0"), Contains("hosts.txt:1: bad ssh port '0'"));
  CHECK_THROWS_WITH(parse("a:70000"), Contains("hosts.txt:1: bad ssh port '70000'"));
  CHECK_THROWS_WITH(parse("a:"), Contains("hosts.txt:1: bad ssh port ''"));
  CHECK_THROWS_WITH(parse("\n\n:22"), Contains("hosts.txt:3: no host name"));
  CHECK_THROWS_WITH(parse("a slots=0"), Contains("hosts.txt:1: slots must be a positive number"));
  CHECK_THROWS_WITH(parse("a\na slots=x"), Contains("hosts.txt:2: slots must be"));
  CHECK_THROWS_WITH(parse("a b"), Contains("hosts.txt:1: unexpected 'b' after the host"));
  CHECK_THROWS_WITH(parse("-oProxyCommand=x"),
                    Contains("hosts.txt:1: a host name cannot start with '-'"));
  CHECK_THROWS_WITH(parse("# nothing\n\n"), Contains("hosts.txt: no hosts"));
  CHECK_THROWS_AS(parse("a:x"), usage_error);
  CHECK_THROWS_WITH(read_hosts_file("/nonexistent/hosts"),
                    Contains("cannot open hosts file /nonexistent/hosts"));
}

TEST_CASE("shell_quote makes any argument one word that a shell gives back unchanged") {
  CHECK(shell_quote("plain-arg_1.0") == "plain-arg_1.0");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("") == "''");
  std::string command = "printf '%s\\0'";
  std::string expected;
  for (const auto& a : nasty) {
    command += " " + shell_quote(a);
    expected += a + '\0';
  }
  CHECK(shell_output(command) == expected);
}

TEST_CASE("the ssh command runs the node's argv unchanged in the directory on the host") {
  auto plain = ssh_command("ssh", {"node1", 0}, "/work", {"troupe", "node"});
  CHECK(plain
        == std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-o",
                                    "StrictHostKeyChecking=accept-new", "node1",
                                    "cd /work && exec troupe node"});
  auto ported = ssh_command("/usr/bin/fake-ssh", {"node2", 2222}, "/", {"x"});
  CHECK(ported
        == std::vector<std::string>{"/usr/bin/fake-ssh", "-o", "BatchMode=yes", "-o",
                                    "StrictHostKeyChecking=accept-new", "-p", "2222", "node2",
                                    "cd / && exec x"});

  // What a remote shell does with the last word: run printf with every nasty argument.
  std::vector<std::string> argv{"printf", "%s\\0"};
  argv.insert(argv.end(), nasty.begin(), nasty.end());
  auto command = ssh_command("ssh", {"h", 0}, "/tmp/../tmp", argv);
  std::string expected;
  for (const auto& a : nasty)
    expected += a + '\0';
  CHECK(shell_output("sh -c " + shell_quote(command.back())) == expected);
}
