// Choosing the channels' congestion control: system leaves the host's default, auto takes cubic
// where this process may set it (and says why not otherwise), a name is tried on a real socket
// and refused with what the host offers, and a malformed name never reaches the kernel.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include <troupe/cluster/tcp_congestion.hpp>

using namespace troupe;

TEST_CASE("system leaves every channel at the host's default", "[cluster][congestion]") {
  const auto choice = choose_tcp_congestion("system");
  CHECK(choice.algorithm.empty());
  CHECK(choice.note.empty());
}

TEST_CASE("auto is cubic where it may be set, else the host's default with the reason",
          "[cluster][congestion]") {
  const auto choice = choose_tcp_congestion("auto");
  if (choice.algorithm.empty()) {
    CHECK(choice.note.find("cubic cannot be set here") != std::string::npos);
    CHECK(choice.note.find("allowed to this user") != std::string::npos);
  } else {
    CHECK(choice.algorithm == "cubic");
    CHECK(choice.note.empty());
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    CHECK(set_tcp_congestion(fd, choice.algorithm));
    CHECK(tcp_congestion_of(fd) == "cubic");
    ::close(fd);
  }
}

TEST_CASE("a named algorithm is taken when the kernel takes it", "[cluster][congestion]") {
  // reno: built into every Linux kernel and allowed to every user.
  CHECK(choose_tcp_congestion("reno").algorithm == "reno");
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  REQUIRE(set_tcp_congestion(fd, "reno"));
  CHECK(tcp_congestion_of(fd) == "reno");
  ::close(fd);
}

TEST_CASE("an algorithm the kernel refuses, or a malformed name, is refused naming it",
          "[cluster][congestion]") {
  CHECK_THROWS_WITH(choose_tcp_congestion("nosuch"),
                    Catch::Contains("tcp_congestion 'nosuch' cannot be set here")
                      && Catch::Contains("this host offers") && Catch::Contains("may set"));
  CHECK_THROWS_WITH(choose_tcp_congestion("Cubic"),
                    Catch::Contains("give auto, system or an algorithm's name"));
  CHECK_THROWS_WITH(choose_tcp_congestion(""),
                    Catch::Contains("give auto, system or an algorithm's name"));
  CHECK_THROWS_WITH(choose_tcp_congestion("a-name-far-too-long-for-the-kernel"),
                    Catch::Contains("give auto, system or an algorithm's name"));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  CHECK_FALSE(set_tcp_congestion(fd, "nosuch"));
  ::close(fd);
}
