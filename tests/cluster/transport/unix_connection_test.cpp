// Same-host Unix connections (unix_connection.hpp): the accepting end knows its peer by its
// process, a Unix connection refuses TCP's tuning; only this host's addresses take a Unix
// socket, whoever holds one by the name of another host's; a listener's Unix socket is taken
// while it listens and gone with it, and a listener on every address offers it to loopback.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include <troupe/actors/actor_errors.hpp>

#include "cluster/transport/tcp_connection.hpp"
#include "cluster/transport/unix_connection.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

sockaddr_in ipv4(const char* host, std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  REQUIRE(::inet_pton(AF_INET, host, &address.sin_addr) == 1);
  return address;
}

const sockaddr* as_address(const sockaddr_in& a) {
  return reinterpret_cast<const sockaddr*>(&a);
}

} // namespace

TEST_CASE("a Unix connection names its peer's process and refuses TCP's tuning",
          "[cluster][transport][unix]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  unix_connection named(fds[0], "10.0.0.2:7000 (local socket)");
  unix_connection by_process(fds[1]);
  CHECK(named.peer() == "10.0.0.2:7000 (local socket)");
  CHECK(by_process.peer() == "pid " + std::to_string(::getpid()) + " of this host (local socket)");
  CHECK(by_process.local());
  errno = 0;
  CHECK_FALSE(by_process.set_pacing(1'000'000));
  CHECK(errno == EOPNOTSUPP);
  errno = 0;
  CHECK_FALSE(by_process.set_congestion("cubic"));
  CHECK(errno == EOPNOTSUPP);
  CHECK(by_process.pacing() == 0);
  CHECK(by_process.unsent_limit() == 0);
  // Its buffers are wider than a Unix socket's default (about 200 KB), as far as the kernel
  // allows (net.core.wmem_max caps the request).
  int sent = 0;
  socklen_t length = sizeof sent;
  REQUIRE(::getsockopt(by_process.descriptor(), SOL_SOCKET, SO_SNDBUF, &sent, &length) == 0);
  int plain[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, plain) == 0);
  int plain_sent = 0;
  REQUIRE(::getsockopt(plain[0], SOL_SOCKET, SO_SNDBUF, &plain_sent, &length) == 0);
  CHECK(sent >= plain_sent);
  ::close(plain[0]);
  ::close(plain[1]);
}

TEST_CASE("only this host's addresses take a local socket, whoever holds one by that name",
          "[cluster][transport][unix]") {
  const auto loopback = ipv4("127.0.0.1", 1);
  const auto elsewhere = ipv4("192.0.2.1", 4242); // TEST-NET-1: never an address of this host
  CHECK(is_local_address(as_address(loopback)));
  CHECK_FALSE(is_local_address(as_address(elsewhere)));
  CHECK(local_socket_name(as_address(elsewhere)) == "troupe/192.0.2.1/4242");
  // A local socket named after another host's address (nothing of ours makes one: a TCP
  // listener there cannot be bound here) does not capture connections meant for that host.
  const int decoy = listen_local(as_address(elsewhere));
  REQUIRE(decoy >= 0);
  CHECK(connect_local(as_address(elsewhere)) == -1);
  ::close(decoy);
}

TEST_CASE("a listener's local socket is taken while it listens and gone with it",
          "[cluster][transport][unix]") {
  std::uint16_t port = 0;
  {
    auto bound = tcp_listener::bind("127.0.0.1", 0, true);
    REQUIRE(bound);
    REQUIRE((*bound)->has_local_twin());
    port = (*bound)->port();
    // Its name is taken while it listens: a second twin of that name is refused.
    const auto here = ipv4("127.0.0.1", port);
    CHECK(listen_local(as_address(here)) == -1);
    const int reached = connect_local(as_address(here));
    CHECK(reached >= 0);
    ::close(reached);
  }
  const auto here = ipv4("127.0.0.1", port);
  CHECK(connect_local(as_address(here)) == -1);
  auto made = connect_stream("127.0.0.1", port, 5s, true);
  REQUIRE_FALSE(made);
  CHECK(error_text(made.error()).find("refused") != std::string::npos);
}

TEST_CASE("a listener on every address offers its local socket to this host's loopback",
          "[cluster][transport][unix]") {
  auto bound = tcp_listener::bind("0.0.0.0", 0, true);
  REQUIRE(bound);
  REQUIRE((*bound)->has_local_twin());
  auto made = connect_stream("127.0.0.1", (*bound)->port(), 5s, true);
  REQUIRE(made);
  CHECK((*made)->local());
  auto served = (*bound)->accept();
  REQUIRE(served);
  CHECK(served->local());
  CHECK(served->peer() == "pid " + std::to_string(::getpid()) + " of this host (local socket)");
}
