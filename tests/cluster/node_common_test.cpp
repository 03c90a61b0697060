// node_common: what the scheduler and the members share, as far as it is pure: where peers
// reach a node, which hosts other hosts cannot reach, and the time of a loss line.
#include <catch2/catch.hpp>

#include <regex>

#include "cluster/node_common.hpp"

using namespace troupe;

namespace {

member_options options_of(const std::string& listen, const std::string& advertise) {
  member_options o{cluster_secret("the secret of the test cluster!!")};
  o.listen_host = listen;
  o.advertise_host = advertise;
  return o;
}

} // namespace

TEST_CASE("peers reach a node at the address it advertises, else where it listens",
          "[cluster][node]") {
  CHECK(advertised_host(options_of("10.0.0.7", "")) == "10.0.0.7");
  CHECK(advertised_host(options_of("0.0.0.0", "node-3.example")) == "node-3.example");
}

TEST_CASE("the host of an address is what comes before its last colon", "[cluster][node]") {
  CHECK(host_of_address("10.0.0.7:9091") == "10.0.0.7");
  CHECK(host_of_address("node-3.example:1") == "node-3.example");
  CHECK(host_of_address("::1:9091") == "::1");
  CHECK(host_of_address("no-port") == "no-port");
}

TEST_CASE("loopback and wildcard hosts are told apart from reachable ones", "[cluster][node]") {
  for (const char* host : {"localhost", "127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    INFO(host);
    CHECK(is_loopback_host(host));
    CHECK_FALSE(is_wildcard_host(host));
  }
  for (const char* host : {"", "0.0.0.0", "::", "[::]"}) {
    INFO(host);
    CHECK(is_wildcard_host(host));
    CHECK_FALSE(is_loopback_host(host));
  }
  for (const char* host : {"10.0.0.7", "192.168.1.1", "128.0.0.1", "node-3.example", "::2"}) {
    INFO(host);
    CHECK_FALSE(is_loopback_host(host));
    CHECK_FALSE(is_wildcard_host(host));
  }
}

TEST_CASE("a loss line's time is the wall clock in UTC to the millisecond", "[cluster][node]") {
  CHECK(std::regex_match(clock_time_now(), std::regex(R"(\d\d:\d\d:\d\d\.\d\d\d UTC)")));
}
