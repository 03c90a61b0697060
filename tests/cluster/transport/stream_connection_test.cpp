// What every socket stream shares (stream_connection.hpp), on Unix socket pairs: many pieces,
// more than one system call takes and more bytes than the socket buffers hold, arrive whole and
// in order and are counted at both ends; a read of a fixed size reports a stream that ended
// before it was complete; shutting down wakes a blocked read and fails later writes; the rest of
// a stream can be discarded to its end; a descriptor becomes the connection its family says.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <future>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "cluster/transport/stream_connection.hpp"
#include "cluster/transport/tcp_connection.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

// Both ends of a Unix stream socket pair as connections.
struct pair_of_connections {
  std::unique_ptr<connection> a, b;
  pair_of_connections() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    a = connection_of(fds[0]);
    b = connection_of(fds[1]);
  }
};

} // namespace

TEST_CASE("pieces beyond one system call and the socket's buffers arrive whole, in order, counted",
          "[cluster][transport]") {
  pair_of_connections ends;
  // 3 * IOV_MAX pieces of growing sizes, 24 MiB in all: several sendmsg calls, partial writes.
  std::vector<std::vector<char>> buffers;
  std::vector<frame_piece> pieces;
  std::size_t total = 0;
  for (std::size_t i = 0; i < 3 * IOV_MAX; ++i) {
    buffers.emplace_back(1 + (i * 4099) % 16384, static_cast<char>(i));
    total += buffers.back().size();
  }
  for (const auto& b : buffers)
    pieces.push_back(frame_piece{b.data(), b.size()});
  std::vector<char> received(total);
  auto reading = std::async(std::launch::async,
                            [&] { return ends.b->read_exactly(received.data(), received.size()); });
  REQUIRE(ends.a->write(pieces));
  REQUIRE(reading.wait_for(30s) == std::future_status::ready);
  REQUIRE(reading.get() == read_status::complete);
  std::size_t at = 0;
  bool same = true;
  for (const auto& b : buffers) {
    same = same && std::equal(b.begin(), b.end(), received.begin() + at);
    at += b.size();
  }
  CHECK(same);
  CHECK(ends.a->bytes_sent() == total);
  CHECK(ends.b->bytes_received() == total);
  CHECK(ends.a->bytes_received() == 0);
  CHECK(ends.b->bytes_sent() == 0);
}

TEST_CASE("a read the stream ends before is reported as ended, what came before it as read",
          "[cluster][transport]") {
  pair_of_connections ends;
  const std::string text = "hello";
  REQUIRE(ends.a->write({frame_piece{text.data(), text.size()}}));
  ends.a.reset(); // the peer's end: closed
  char got[16] = {};
  CHECK(ends.b->read_exactly(got, 3) == read_status::complete);
  CHECK(std::string(got, 3) == "hel");
  CHECK(ends.b->read_exactly(got, 3) == read_status::ended); // two of three came
  CHECK(ends.b->bytes_received() == text.size());
}

TEST_CASE("shutting down wakes a blocked read and fails the writes after it",
          "[cluster][transport]") {
  pair_of_connections ends;
  char got[8];
  auto reading = std::async(std::launch::async, [&] { return ends.b->read_exactly(got, 8); });
  ends.b->shut_down();
  REQUIRE(reading.wait_for(30s) == std::future_status::ready);
  CHECK(reading.get() == read_status::ended);
  ends.b->shut_down(); // idempotent
  const std::string text = "late";
  errno = 0;
  CHECK_FALSE(ends.b->write({frame_piece{text.data(), text.size()}}));
  CHECK(errno == EPIPE);
  CHECK(ends.b->bytes_sent() == 0);
}

TEST_CASE("the rest of a stream is discarded to its end and counted", "[cluster][transport]") {
  pair_of_connections ends;
  const std::vector<char> junk(100'000, 'x');
  auto writing = std::async(std::launch::async, [&] {
    const bool written = ends.a->write({frame_piece{junk.data(), junk.size()}});
    ends.a.reset();
    return written;
  });
  ends.b->discard_until_end(); // returns once the peer has closed
  REQUIRE(writing.wait_for(30s) == std::future_status::ready);
  CHECK(writing.get());
  CHECK(ends.b->bytes_received() == junk.size());
}

TEST_CASE("a descriptor becomes the connection of its family", "[cluster][transport]") {
  pair_of_connections ends;
  CHECK(ends.a->local());
  auto listening = tcp_listener::bind("127.0.0.1", 0);
  REQUIRE(listening);
  auto client = connect_stream("127.0.0.1", (*listening)->port(), 5s);
  REQUIRE(client);
  CHECK_FALSE((*client)->local());
  CHECK((*client)->peer() == "127.0.0.1:" + std::to_string((*listening)->port()));
}
