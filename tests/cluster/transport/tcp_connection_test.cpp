// TCP connections and their listener (tcp_connection.hpp) on 127.0.0.1: a connection made is
// accepted with both ends named and bytes crossing both ways; connecting where nothing listens
// and binding a port in use name the address; the same-host shortcut takes the listener's Unix
// socket only where it offers one; pacing and the unsent limit are what the kernel holds; stop()
// wakes an accept() that waits for a peer, and one that waits for descriptors to come free.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <memory>
#include <string>

#include <troupe/actors/actor_errors.hpp>

#include "cluster/transport/tcp_connection.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<tcp_listener> bind_any(bool twin = false) {
  auto bound = tcp_listener::bind("127.0.0.1", 0, twin);
  REQUIRE(bound);
  return std::move(*bound);
}

// A connection to `listening`, and the listener's end of it: the kernel completes a TCP
// connect before the accept, so one thread does both.
struct connected {
  std::unique_ptr<connection> client, served;
  connected(tcp_listener& listening, bool shortcut = false) {
    auto made = connect_stream("127.0.0.1", listening.port(), 5s, shortcut);
    REQUIRE(made);
    client = std::move(*made);
    served = listening.accept();
    REQUIRE(served);
  }
};

} // namespace

TEST_CASE("a TCP connection is accepted, both ends named, bytes crossing both ways",
          "[cluster][transport][tcp]") {
  auto listening = bind_any();
  CHECK_FALSE(listening->has_local_twin());
  connected pair(*listening);
  CHECK_FALSE(pair.client->local());
  CHECK_FALSE(pair.served->local());
  CHECK(pair.client->peer() == "127.0.0.1:" + std::to_string(listening->port()));
  CHECK(pair.served->peer().rfind("127.0.0.1:", 0) == 0);
  const std::string ping = "ping", pong = "pong!";
  REQUIRE(pair.client->write({frame_piece{ping.data(), ping.size()}}));
  REQUIRE(pair.served->write({frame_piece{pong.data(), pong.size()}}));
  char got[8] = {};
  REQUIRE(pair.served->read_exactly(got, ping.size()) == read_status::complete);
  CHECK(std::string(got, ping.size()) == ping);
  REQUIRE(pair.client->read_exactly(got, pong.size()) == read_status::complete);
  CHECK(std::string(got, pong.size()) == pong);
  CHECK(pair.client->bytes_sent() == ping.size());
  CHECK(pair.client->bytes_received() == pong.size());
}

TEST_CASE("connecting where nothing listens and listening on a taken port name the address",
          "[cluster][transport][tcp]") {
  std::uint16_t port = 0;
  {
    auto listening = bind_any();
    port = listening->port();
    REQUIRE(port != 0);
    auto again = tcp_listener::bind("127.0.0.1", port);
    REQUIRE_FALSE(again);
    const auto text = error_text(again.error());
    CHECK(text.find("cannot listen on 127.0.0.1:" + std::to_string(port)) != std::string::npos);
    CHECK(text.find("in use") != std::string::npos);
  }
  auto made = connect_stream("127.0.0.1", port, 5s); // closed again above
  REQUIRE_FALSE(made);
  const auto text = error_text(made.error());
  CHECK(text.find("cannot connect to 127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(text.find("refused") != std::string::npos);
  auto unresolved = connect_stream("no such host.invalid", port, 5s);
  REQUIRE_FALSE(unresolved);
  CHECK(error_text(unresolved.error()).find("cannot resolve 'no such host.invalid'")
        != std::string::npos);
}

TEST_CASE("the shortcut takes the listener's Unix socket where it offers one, else TCP",
          "[cluster][transport][tcp]") {
  const bool twin = GENERATE(false, true);
  INFO((twin ? "with its twin" : "TCP only"));
  auto listening = bind_any(twin);
  CHECK(listening->has_local_twin() == twin);
  connected pair(*listening, true);
  CHECK(pair.client->local() == twin);
  CHECK(pair.served->local() == twin);
  CHECK(pair.client->peer()
        == "127.0.0.1:" + std::to_string(listening->port()) + (twin ? " (local socket)" : ""));
  connected not_asked(*listening, false);
  CHECK_FALSE(not_asked.client->local());
}

TEST_CASE("a TCP connection's pacing and unsent limit are what the kernel holds, and a Unix one "
          "has neither",
          "[cluster][transport][tcp][pacing]") {
  auto listening = bind_any(true);
  connected pair(*listening);
  auto& client = *pair.client;
  CHECK(client.pacing() == 0); // not paced
  CHECK(client.unsent_limit() == 0);
  REQUIRE(client.set_pacing(62'500'000));
  CHECK(client.pacing() == 62'500'000);
  CHECK(client.unsent_limit() == 256 * 1024); // a millisecond is 62,500 bytes: a writer's batch
  REQUIRE(client.set_pacing(1'250'000'000));
  CHECK(client.unsent_limit() == 1'250'000); // a millisecond of 10 Gbit/s
  REQUIRE(client.set_pacing(0));
  CHECK(client.pacing() == 0);
  CHECK(client.unsent_limit() == 0);
  CHECK_FALSE(client.set_congestion("no-such-algorithm"));
  connected local(*listening, true);
  REQUIRE(local.client->local());
  errno = 0;
  CHECK_FALSE(local.client->set_pacing(62'500'000));
  CHECK(errno == EOPNOTSUPP);
  CHECK_FALSE(local.client->set_congestion("cubic"));
  CHECK(local.client->pacing() == 0);
  CHECK(local.client->unsent_limit() == 0);
}

TEST_CASE("stop wakes an accept that waits for a peer, and later ones return at once",
          "[cluster][transport][tcp]") {
  auto listening = bind_any(true);
  auto waiting = std::async(std::launch::async, [&] { return listening->accept(); });
  listening->stop();
  REQUIRE(waiting.wait_for(30s) == std::future_status::ready);
  CHECK(waiting.get() == nullptr);
  listening->stop();                                              // idempotent
  auto made = connect_stream("127.0.0.1", listening->port(), 5s); // waits in the backlog
  REQUIRE(made);
  CHECK(listening->accept() == nullptr);
}

namespace {

// Holds the process's descriptor limit at the descriptors open now (none can be made), for as
// long as it lives, or until raise() gives the old limit back.
struct descriptors_used_up {
  rlimit old{};
  descriptors_used_up() {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
    const int lowest_free = ::dup(0); // every lower descriptor is open
    REQUIRE(lowest_free >= 0);
    ::close(lowest_free);
    rlimit none = old;
    none.rlim_cur = static_cast<rlim_t>(lowest_free);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &none) == 0);
    REQUIRE(::dup(0) == -1);
  }
  void raise() { ::setrlimit(RLIMIT_NOFILE, &old); }
  ~descriptors_used_up() { raise(); }
};

} // namespace

TEST_CASE("out of descriptors, a peer waits in the backlog until one is free or the listener stops",
          "[cluster][transport][tcp]") {
  auto listening = bind_any();
  auto made = connect_stream("127.0.0.1", listening->port(), 5s);
  REQUIRE(made);
  {
    descriptors_used_up full;
    auto waiting = std::async(std::launch::async, [&] { return listening->accept(); });
    full.raise(); // whether accept() has tried yet or not, the peer is taken, not refused
    REQUIRE(waiting.wait_for(30s) == std::future_status::ready);
    CHECK(waiting.get() != nullptr);
  }
  auto second = connect_stream("127.0.0.1", listening->port(), 5s);
  REQUIRE(second);
  descriptors_used_up full;
  auto waiting = std::async(std::launch::async, [&] { return listening->accept(); });
  listening->stop(); // ends the wait for descriptors (or the poll before it) at once
  REQUIRE(waiting.wait_for(30s) == std::future_status::ready);
  CHECK(waiting.get() == nullptr);
}
