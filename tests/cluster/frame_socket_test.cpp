// Frame sockets on 127.0.0.1: frames of every size arrive whole and in order (a large one takes
// many partial writes and reads), and every way a connection goes wrong reaches the owner as a
// message naming it: broken framing, a peer that closes in the middle of a frame, nothing
// listening, a port in use. Closing wakes a writer that a non-reading peer has blocked. The
// same over the same-host shortcut (unix_connection.hpp), which falls back to TCP where no local
// socket is offered. The writer follows its send order (send_order_test.cpp tests the policy
// itself): as queued (fifo), lowest rank first with ties as queued (by_rank), a fixed push
// sequence, and the owner told when the sequence's patience gives up on a push.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/frame_codec.hpp>

#include "cluster/frame_socket.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

// One [n] key per shard index n in the test's frames: shard 0 holds keys of the sizes below.
const std::vector<std::int64_t> sizes = {1, 7, 1024, 3, 10 << 20, 64, 255};

wire_keys keys_for_test() {
  wire_keys keys;
  keys.shards.resize(1);
  for (auto n : sizes)
    keys.shards[0].push_back(shape_t{n});
  return keys;
}

tensor filled(std::int64_t n, float start) {
  tensor t(shape_t{n});
  for (std::int64_t i = 0; i < n; ++i)
    t.data()[i] = start + static_cast<float>(i % 1000);
  return t;
}

weights_message frame_number(std::size_t key, std::uint64_t request) {
  weights_message m;
  m.request = request;
  m.shard = 0;
  m.weights.keys = {key};
  m.weights.weights = {filled(sizes[key], static_cast<float>(request))};
  return m;
}

// A listener on `host` (with its same-host twin when `twin`) whose first accepted connection is
// handed over through a future.
struct accepting {
  std::unique_ptr<listening_socket> listener;
  std::promise<std::shared_ptr<frame_socket>> first;
  explicit accepting(bool twin = false, const std::string& host = "127.0.0.1") {
    auto bound = listening_socket::bind(host, 0, twin);
    REQUIRE(bound);
    listener = std::move(*bound);
    auto done = std::make_shared<bool>(false);
    listener->start([this, done](std::shared_ptr<frame_socket> s) {
      if (!*done) {
        *done = true;
        first.set_value(std::move(s));
      }
    });
  }
  std::shared_ptr<frame_socket> accepted() {
    auto future = first.get_future();
    REQUIRE(future.wait_for(10s) == std::future_status::ready);
    return future.get();
  }
};

// A plain client socket connected to 127.0.0.1:port.
int plain_client(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

// What the owner hears next: its kind and text (payloads decoded against the test's keys).
struct heard {
  std::string kind; // "frame", "error", "closed", or "nothing" after 10 s
  std::string text;
  wire_message message;
};

heard next_event(caf::scoped_actor& self) {
  heard h{"nothing", "", {}};
  self->receive(
    [&](frame_in_atom, received_payload& p) {
      auto decoded = decode_payload(p.bytes, keys_for_test());
      h.kind = decoded.ok() ? "frame" : "undecodable";
      h.text = decoded.error;
      h.message = std::move(decoded.message);
    },
    [&](frame_error_atom, const std::string& why) {
      h = {"error", why, {}};
    },
    [&](socket_closed_atom, const std::string& why) {
      h = {"closed", why, {}};
    },
    [&](sequence_skip_atom, std::uint64_t rank, std::uint64_t skips) {
      h = {"skip", "rank " + std::to_string(rank) + ", skips " + std::to_string(skips), {}};
    },
    caf::after(10s) >> [] {});
  return h;
}

// Writes bytes [from, to) of `data` to `fd`, however many write calls that takes.
void write_range(int fd, const std::vector<char>& data, std::size_t from, std::size_t to) {
  while (from < to) {
    const auto n = ::write(fd, data.data() + from, to - from);
    REQUIRE(n > 0);
    from += static_cast<std::size_t>(n);
  }
}

// A frame socket served to this test as its owner, its peer a plain client socket (`raw`) that
// writes whatever bytes a test gives it.
struct raw_peer {
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  accepting server;
  const int raw = plain_client(server.listener->port());
  std::shared_ptr<frame_socket> served = server.accepted();
  raw_peer(std::size_t max_payload, std::size_t pool_bytes) {
    served->start(caf::actor_cast<socket_owner_actor>(self), max_payload,
                  std::make_shared<receive_pool>(pool_bytes));
  }
};

} // namespace

TEST_CASE("frames of every size cross a frame socket whole and in order", "[cluster][socket]") {
  const bool local = GENERATE(false, true);
  INFO((local ? "local socket" : "TCP"));
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  accepting server{local};
  REQUIRE(server.listener->has_local_twin() == local);
  auto client = frame_socket::connect("127.0.0.1", server.listener->port(), 5s, local);
  REQUIRE(client);
  CHECK((*client)->local() == local);
  auto served = server.accepted();
  CHECK(served->local() == local);
  served->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                std::make_shared<receive_pool>(64 << 20));
  auto sink = std::make_shared<receive_pool>(1 << 20);
  (*client)->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes, sink);
  CHECK((*client)->peer()
        == "127.0.0.1:" + std::to_string(server.listener->port())
             + (local ? " (local socket)" : ""));
  // Three rounds over every key size, the 40 MiB one far beyond a socket's buffers.
  std::vector<std::pair<std::size_t, std::uint64_t>> expected;
  for (std::uint64_t round = 0; round < 3; ++round)
    for (std::size_t key = 0; key < sizes.size(); ++key) {
      const auto request = round * 100 + key;
      (*client)->send(encode_frame(frame_number(key, request)));
      expected.emplace_back(key, request);
    }
  for (const auto& [key, request] : expected) {
    auto h = next_event(self);
    INFO(h.kind << ": " << h.text);
    REQUIRE(h.kind == "frame");
    const auto& got = std::get<weights_message>(h.message);
    CHECK(got.request == request);
    REQUIRE(got.weights.weights.size() == 1);
    const auto want = frame_number(key, request).weights.weights[0];
    REQUIRE(got.weights.weights[0].numel() == want.numel());
    CHECK(std::memcmp(got.weights.weights[0].data(), want.data(), want.bytes()) == 0);
  }
  // The client closes: its own reader and the server's both report the end.
  (*client)->close();
  CHECK(next_event(self).kind == "closed");
  CHECK(next_event(self).kind == "closed");
}

// What a frame of the ordering test is: "h<sequence>" for a heartbeat, "w<request>" for weights.
std::string label_of(const wire_message& m) {
  if (auto* h = std::get_if<heartbeat_message>(&m))
    return "h" + std::to_string(h->sequence);
  if (auto* w = std::get_if<weights_message>(&m))
    return "w" + std::to_string(w->request);
  return "other";
}

TEST_CASE("a held writer writes by rank, ties as queued, or exactly as queued under fifo",
          "[cluster][socket]") {
  const auto order = GENERATE(write_order::fifo, write_order::by_rank);
  INFO((order == write_order::fifo ? "fifo" : "by_rank"));
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  accepting server;
  auto client = frame_socket::connect("127.0.0.1", server.listener->port(), 5s);
  REQUIRE(client);
  auto served = server.accepted();
  served->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                std::make_shared<receive_pool>(64 << 20));
  (*client)->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                   std::make_shared<receive_pool>(1 << 20), order);
  // Heartbeats at rank 0 (control frames), weights at the ranks a channel would give them;
  // w4 is the 40 MiB key, more than one batch of the writer.
  struct queued {
    wire_message message;
    std::uint64_t rank;
  };
  std::vector<queued> frames;
  frames.push_back({frame_number(2, 1), 30});
  frames.push_back({heartbeat_message{1}, 0});
  frames.push_back({frame_number(0, 2), 10});
  frames.push_back({frame_number(6, 3), 30});
  frames.push_back({heartbeat_message{2}, 0});
  frames.push_back({frame_number(4, 4), 20});
  frames.push_back({frame_number(1, 5), 10});
  frames.push_back({frame_number(3, 6), 5});
  {
    frame_socket::holding held(**client);
    for (auto& f : frames)
      (*client)->send(encode_frame(f.message), f.rank);
  }
  const std::vector<std::string> expected =
    order == write_order::fifo
      ? std::vector<std::string>{"w1", "h1", "w2", "w3", "h2", "w4", "w5", "w6"}
      : std::vector<std::string>{"h1", "h2", "w6", "w2", "w5", "w4", "w1", "w3"};
  std::vector<std::string> arrived;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    auto h = next_event(self);
    INFO(h.kind << ": " << h.text);
    REQUIRE(h.kind == "frame");
    arrived.push_back(label_of(h.message));
  }
  REQUIRE(arrived.size() == expected.size());
  CHECK(arrived == expected);
  (*client)->close();
  CHECK(next_event(self).kind == "closed");
  CHECK(next_event(self).kind == "closed");
}

TEST_CASE("a stream that breaks the framing is reported once, then its end", "[cluster][socket]") {
  raw_peer peer(default_max_frame_bytes, 1 << 20);
  auto& self = peer.self;
  const int raw = peer.raw;
  const std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n and more bytes after it";
  REQUIRE(::write(raw, garbage.data(), garbage.size()) == static_cast<ssize_t>(garbage.size()));
  auto h = next_event(self);
  CHECK(h.kind == "error");
  CHECK(h.text.find("not a Troupe frame") != std::string::npos);
  ::close(raw);
  h = next_event(self);
  CHECK(h.kind == "closed");
}

TEST_CASE("a frame over the limit is refused by its header alone", "[cluster][socket]") {
  raw_peer peer(4096, 1 << 20);
  auto& self = peer.self;
  const int raw = peer.raw;
  std::vector<char> frame;
  append_frame(frame_number(2, 1), frame); // 4 KiB of values plus the message: over 4096
  REQUIRE(::write(raw, frame.data(), frame_header_bytes)
          == static_cast<ssize_t>(frame_header_bytes));
  auto h = next_event(self);
  CHECK(h.kind == "error");
  CHECK(h.text.find("over the limit of 4096") != std::string::npos);
  ::close(raw);
  CHECK(next_event(self).kind == "closed");
}

TEST_CASE("a peer that closes in the middle of a frame is reported as such", "[cluster][socket]") {
  raw_peer peer(default_max_frame_bytes, 1 << 20);
  auto& self = peer.self;
  const int raw = peer.raw;
  std::vector<char> frame;
  append_frame(frame_number(2, 1), frame);
  REQUIRE(::write(raw, frame.data(), 100) == 100);
  ::close(raw);
  auto h = next_event(self);
  CHECK(h.kind == "closed");
  CHECK(h.text.find("in the middle of a frame") != std::string::npos);
}

// A piece of which part is already read must still be read whole when only its rest comes,
// and nothing after it (a reader that waits for a fixed amount of new bytes, SO_RCVLOWAT in a
// blocking recv, hangs here): half the frame's last piece is in the reader's socket (the
// client's send queue is empty) before its rest is written, and the peer then sends nothing.
TEST_CASE("a frame whose rest comes after its first part was read arrives whole",
          "[cluster][socket]") {
  raw_peer peer(default_max_frame_bytes, 64 << 20);
  auto& self = peer.self;
  const int raw = peer.raw;
  std::vector<char> frame;
  append_frame(frame_number(4, 9), frame);
  REQUIRE(frame.size() > 2 * read_piece_bytes);
  // the last piece of the payload, half of it written at first: no byte follows its rest
  const auto payload = frame.size() - frame_header_bytes;
  const auto last_piece =
    payload % read_piece_bytes == 0 ? read_piece_bytes : payload % read_piece_bytes;
  REQUIRE(last_piece >= 2);
  const std::size_t first = frame.size() - last_piece / 2;
  write_range(raw, frame, 0, first);
  const auto until = std::chrono::steady_clock::now() + 10s;
  int unsent = 1;
  while (unsent > 0 && std::chrono::steady_clock::now() < until) {
    REQUIRE(::ioctl(raw, SIOCOUTQ, &unsent) == 0);
    std::this_thread::yield();
  }
  REQUIRE(unsent == 0);
  write_range(raw, frame, first, frame.size());
  auto h = next_event(self);
  INFO(h.kind << ": " << h.text);
  REQUIRE(h.kind == "frame");
  CHECK(std::get<weights_message>(h.message).request == 9);
  ::close(raw);
}

// A frame still arriving counts as hearing from the peer: its bytes move last_bytes_at, piece by
// piece, long before the frame is whole (a channel's connection timeout reads it).
TEST_CASE("the bytes of a frame still arriving count as heard from the peer", "[cluster][socket]") {
  raw_peer peer(default_max_frame_bytes, 64 << 20);
  auto& self = peer.self;
  const int raw = peer.raw;
  auto& served = peer.served;
  std::vector<char> frame;
  append_frame(frame_number(4, 9), frame); // the 40 MiB key
  REQUIRE(frame.size() > 3 * read_piece_bytes);
  // Waits (at most 10 s) until the reader notes bytes after `mark`.
  auto heard_after = [&](std::chrono::steady_clock::time_point mark) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (served->last_bytes_at() <= mark && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    return served->last_bytes_at() > mark;
  };
  std::size_t written = 0;
  auto write_up_to = [&](std::size_t end) {
    write_range(raw, frame, written, end);
    written = end;
  };
  for (std::size_t piece = 1; piece <= 3; ++piece) {
    const auto mark = served->last_bytes_at();
    write_up_to(frame_header_bytes + piece * read_piece_bytes);
    CHECK(heard_after(mark)); // a piece of the payload, not a whole frame, moved it
  }
  bool early = false;
  self->receive([&](frame_in_atom, received_payload&) { early = true; }, caf::after(0s) >> [] {});
  CHECK_FALSE(early); // the frame itself is not whole yet
  write_up_to(frame.size());
  auto h = next_event(self);
  REQUIRE(h.kind == "frame");
  CHECK(std::get<weights_message>(h.message).request == 9);
  ::close(raw);
}

TEST_CASE("closing wakes a writer that a peer which does not read has blocked",
          "[cluster][socket]") {
  const bool local = GENERATE(false, true);
  INFO((local ? "local socket" : "TCP"));
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  accepting server{local}; // accepts, and never reads from the connection
  auto client = frame_socket::connect("127.0.0.1", server.listener->port(), 5s, local);
  REQUIRE(client);
  REQUIRE((*client)->local() == local);
  auto never_read = server.accepted();
  (*client)->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                   std::make_shared<receive_pool>(1 << 20));
  // 160 MiB queued: far more than the kernel buffers, so the writer blocks in sendmsg.
  for (int i = 0; i < 4; ++i)
    (*client)->send(encode_frame(frame_number(4, static_cast<std::uint64_t>(i))));
  // The writer is under way once the first bytes reach the peer; with 160 MiB to go and the
  // peer reading nothing, it is then blocked in sendmsg.
  pollfd arrived{never_read->descriptor(), POLLIN, 0};
  REQUIRE(::poll(&arrived, 1, 30000) == 1);
  // Destroying the socket closes it and joins both threads; a writer left blocked would hang
  // here, so the destruction runs beside a bound.
  auto socket = std::move(*client);
  auto ended = std::async(std::launch::async, [s = std::move(socket)]() mutable { s.reset(); });
  REQUIRE(ended.wait_for(30s) == std::future_status::ready);
  CHECK(next_event(self).kind == "closed");
}

TEST_CASE(
  "the shortcut reaches a listener over TCP where it offers no local socket, or when not asked for",
  "[cluster][socket]") {
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  const bool twin = GENERATE(false, true);
  accepting server{twin};
  // Asked for where the listener has no twin; not asked for where it has one.
  auto client = frame_socket::connect("127.0.0.1", server.listener->port(), 5s, !twin);
  REQUIRE(client);
  CHECK_FALSE((*client)->local());
  CHECK((*client)->peer() == "127.0.0.1:" + std::to_string(server.listener->port()));
  auto served = server.accepted();
  CHECK_FALSE(served->local());
  served->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                std::make_shared<receive_pool>(1 << 20));
  caf::scoped_actor client_owner{system};
  (*client)->start(caf::actor_cast<socket_owner_actor>(client_owner), default_max_frame_bytes,
                   std::make_shared<receive_pool>(1 << 20));
  (*client)->send(encode_frame(frame_number(2, 7)));
  auto h = next_event(self);
  REQUIRE(h.kind == "frame");
  CHECK(std::get<weights_message>(h.message).request == 7);
}

TEST_CASE("a peer lost over a local socket is reported as over TCP", "[cluster][socket]") {
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  accepting server{true};
  auto client = frame_socket::connect("127.0.0.1", server.listener->port(), 5s, true);
  REQUIRE(client);
  REQUIRE((*client)->local());
  auto served = server.accepted();
  served->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                std::make_shared<receive_pool>(1 << 20));
  caf::scoped_actor client_owner{system};
  (*client)->start(caf::actor_cast<socket_owner_actor>(client_owner), default_max_frame_bytes,
                   std::make_shared<receive_pool>(1 << 20));
  (*client)->send(encode_frame(frame_number(2, 1)));
  REQUIRE(next_event(self).kind == "frame");
  client->reset(); // the peer's end: closed, its threads joined
  auto h = next_event(self);
  CHECK(h.kind == "closed");
  CHECK(h.text.find("the peer closed the connection") != std::string::npos);
}

namespace {

// A TCP pair with the client's writer by rank under `sequence` (patience as given): what the
// sequence tests write through, reading on its `self`.
struct sequenced_pair {
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  accepting server;
  std::shared_ptr<frame_socket> client, served;
  sequenced_pair(std::vector<std::uint64_t> sequence, std::chrono::milliseconds patience) {
    auto connected = frame_socket::connect("127.0.0.1", server.listener->port(), 5s);
    REQUIRE(connected);
    client = std::move(*connected);
    served = server.accepted();
    served->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                  std::make_shared<receive_pool>(64 << 20));
    client->set_sequence(std::move(sequence), patience);
    client->start(caf::actor_cast<socket_owner_actor>(self), default_max_frame_bytes,
                  std::make_shared<receive_pool>(1 << 20), write_order::by_rank);
  }
  // A push stand-in of rank `rank` labelled "w<request>" (the socket orders frames, whatever they
  // hold).
  void push(std::uint64_t rank, std::uint64_t request) {
    client->send(encode_frame(frame_number(0, request)), rank, true);
  }
};

std::vector<std::string> arrivals(caf::scoped_actor& self, std::size_t n) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) {
    auto h = next_event(self);
    INFO(h.kind << ": " << h.text);
    REQUIRE(h.kind == "frame");
    labels.push_back(label_of(h.message));
  }
  return labels;
}

} // namespace

TEST_CASE("sequenced pushes go in the sequence's order after every other frame, whatever order "
          "they came in",
          "[cluster][socket][sequence]") {
  // The last layer first (what backward's time carries), then first layers first.
  sequenced_pair pair({5, 1, 2, 3, 4}, 60s);
  {
    frame_socket::holding held(*pair.client);
    for (std::uint64_t rank = 5; rank >= 1; --rank) // backward's order, as a compute pushes
      pair.push(rank, rank);
    pair.client->send(encode_frame(heartbeat_message{1}), 0); // a control frame's rank
    pair.client->send(encode_frame(frame_number(1, 9)), 3); // a tensor frame not sequenced: by rank
  }
  const std::vector<std::string> expected = {"h1", "w9", "w5", "w1", "w2", "w3", "w4"};
  const auto arrived = arrivals(pair.self, expected.size());
  REQUIRE(arrived.size() == expected.size());
  CHECK(arrived == expected);
  // The next step: the same order again, the frames coming one by one as backward makes them.
  for (std::uint64_t rank = 5; rank >= 1; --rank)
    pair.push(rank, 10 + rank);
  const std::vector<std::string> again = {"w15", "w11", "w12", "w13", "w14"};
  CHECK(arrivals(pair.self, again.size()) == again);
  CHECK(pair.client->sequence_skips() == 0);
  pair.client->close();
}

TEST_CASE(
  "a push that does not come within the patience is skipped, and goes at once when it comes",
  "[cluster][socket][sequence]") {
  sequenced_pair pair({1, 2, 3}, 100ms);
  {
    frame_socket::holding held(*pair.client);
    pair.push(3, 3);
    pair.push(2, 2);
  }
  // The writer tells its owner first (before it writes what follows): the push it gave up on.
  const auto told = next_event(pair.self);
  CHECK(told.kind == "skip");
  CHECK(told.text == "rank 1, skips 1");
  CHECK(arrivals(pair.self, 2) == std::vector<std::string>{"w2", "w3"});
  CHECK(pair.client->sequence_skips() == 1);
  pair.push(1, 1); // late: it goes, and the next cycle starts in order
  CHECK(arrivals(pair.self, 1) == std::vector<std::string>{"w1"});
  pair.push(3, 6);
  pair.push(2, 5);
  pair.push(1, 4);
  CHECK(arrivals(pair.self, 3).size() == 3); // nothing is lost either way
  pair.client->close();
}
