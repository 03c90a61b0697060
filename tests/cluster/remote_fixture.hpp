// What the message-level tests of the remote path share (remote_test.cpp and one file per
// interface beside it), on CAF's deterministic test coordinator (caf/test/dsl.hpp).
//
// channel_fixture: skeletons run inside a real channel. The channel gets one end of a socket
// pair (spawn_channel, channel_internals.hpp); the test reads what it writes from the other
// end and hands it, as its socket's reader would, the frames the peer "sent" (frame_in_atom),
// so no frame depends on a thread's timing. The channel's tick is sent by the test too (its
// clock is the coordinator's, advanced only by a case that waits for a deadline).
// proxy_fixture: proxies run over a fake channel of the typed channel interface
// (channel_actor.hpp) that records what they ask and answers as the test says.
//
// Include after defining CAF_SUITE: CAF's test framework needs it first.
#pragma once

#include <caf/test/dsl.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/admission.hpp>
#include <troupe/cluster/frame_codec.hpp>
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/channel_internals.hpp"
#include "cluster/remote/interface_codec.hpp"
#include "cluster/transport/stream_connection.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

inline const cluster_secret test_secret(std::string(32, 's'));

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::string text_of(const caf::error& err) {
  return err.category() == error_category ? error_text(err) : std::string("caf error");
}

// Four shards of one key each.
inline wire_keys four_shards() {
  wire_keys keys;
  keys.shards.assign(4, std::vector<shape_t>{shape_t{2}});
  return keys;
}

// Reads exactly `n` bytes from `fd`, waiting at most 5 s for each piece (the channel's writer
// thread writes them): false when they do not come.
inline bool read_exactly(int fd, char* at, std::size_t n) {
  while (n > 0) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1)
      return false;
    const auto got = ::read(fd, at, n);
    if (got <= 0)
      return false;
    at += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

// What the channel wrote next, decoded; a heartbeat when nothing came (no test expects one).
struct read_result {
  bool ok = false;
  wire_message message;
};

inline read_result read_frame(int fd, const wire_keys& keys) {
  char header[frame_header_bytes];
  if (!read_exactly(fd, header, sizeof header))
    return {};
  auto announced = read_frame_header(header, default_max_frame_bytes);
  if (!announced.error.empty())
    return {};
  auto payload = std::make_shared<std::vector<char>>(announced.payload_bytes);
  if (!read_exactly(fd, payload->data(), payload->size()))
    return {};
  auto decoded = decode_payload(payload, keys);
  if (!decoded.ok()) {
    CAF_MESSAGE("the channel wrote an undecodable frame: " << decoded.error);
    return {};
  }
  return {true, std::move(decoded.message)};
}

// `message` as the channel's socket reader hands it over: the payload alone.
inline received_payload payload_of(const wire_message& message) {
  std::vector<char> frame;
  append_frame(message, frame);
  return received_payload{
    std::make_shared<std::vector<char>>(frame.begin() + frame_header_bytes, frame.end())};
}

// The channel under test, admitted: the test is the peer (a scheduler, accepting side).
struct channel_fixture : test_coordinator_fixture<> {
  int peer_fd = -1;
  channel_self_actor channel;
  wire_keys keys = four_shards();
  std::shared_ptr<serving_registry> serving = std::make_shared<serving_registry>();
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
  hello_message peer_hello{node_kind::scheduler, "scheduler", fresh_nonce(), 0};

  channel_fixture() {
    int fds[2];
    CAF_REQUIRE_EQUAL(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    peer_fd = fds[1];
    channel_options options{test_secret};
    options.role = node_kind::worker;
    options.name = "worker 0";
    options.keys = keys;
    options.serving = serving;
    options.heartbeat_interval = 1h; // no heartbeat, no silence: ticks come from the tests
    options.connection_timeout = 1h;
    options.log = [lines = lines](const std::string& line) { lines->push_back(line); };
    channel = spawn_channel(sys, std::make_shared<frame_socket>(connection_of(fds[0])), options,
                            channel_side::connecting);
    consume_messages();
    auto hello = read_frame(peer_fd, keys);
    CAF_REQUIRE(hello.ok && std::holds_alternative<hello_message>(hello.message));
    const auto channel_hello = std::get<hello_message>(hello.message);
    arrive(peer_hello);
    auto proof = read_frame(peer_fd, keys);
    CAF_REQUIRE(proof.ok && std::holds_alternative<proof_message>(proof.message));
    arrive(proof_message{
      membership_proof(test_secret, channel_side::accepting, peer_hello, channel_hello)});
  }

  ~channel_fixture() override {
    // The peer closes: the channel ends (its socket's reader reports to a closed mailbox).
    self->send(channel, socket_closed_atom::value, std::string("the test is over"));
    consume_messages();
    ::close(peer_fd);
  }

  // The peer sent `message`.
  void arrive(const wire_message& message) {
    self->send(channel, frame_in_atom::value, payload_of(message));
    consume_messages();
  }

  // What the channel wrote next (fails the test when nothing came in 5 s).
  wire_message written() {
    auto got = read_frame(peer_fd, keys);
    CAF_REQUIRE(got.ok);
    return std::move(got.message);
  }

  bool logged(const std::string& part) const {
    return std::any_of(lines->begin(), lines->end(), [&](auto& l) { return contains(l, part); });
  }

  // Frames of `kind` the channel received so far.
  std::uint64_t frames_in(std::size_t kind) {
    std::uint64_t frames = 0;
    auto asked = self->request(channel, caf::infinite, stats_atom::value);
    consume_messages();
    asked.receive(
      [&](channel_traffic& t) { frames = t.frames_in[kind]; },
      [&](caf::error& err) { CAF_FAIL("the channel did not answer its stats: " << text_of(err)); });
    return frames;
  }
};

// A fake channel: records every call and one-way message; answers a call with `answer`, or
// fails it with `failure` when that is set, or, while `hold` is set, keeps it unanswered in
// `held` (a peer that has not answered yet).
struct fake_channel_probe {
  std::vector<wire_message> calls;
  std::vector<deadline> deadlines;
  std::vector<wire_message> sent;
  wire_message answer;
  caf::error failure;
  bool hold = false;
  std::vector<caf::typed_response_promise<wire_message>> held;
};

inline channel_actor::behavior_type fake_channel(channel_actor::pointer self,
                                                 std::shared_ptr<fake_channel_probe> probe) {
  return {
    [=](call_atom, wire_message& request, const deadline& due) -> caf::result<wire_message> {
      probe->calls.push_back(request);
      probe->deadlines.push_back(due);
      if (probe->hold) {
        probe->held.push_back(self->make_response_promise<wire_message>());
        return probe->held.back();
      }
      if (probe->failure)
        return probe->failure;
      return probe->answer;
    },
    [=](send_atom, wire_message& message) { probe->sent.push_back(std::move(message)); },
    [=](stats_atom) { return channel_traffic{}; },
    [=](plan_atom, std::uint64_t, wire_keys&) {},
  };
}

struct proxy_fixture : test_coordinator_fixture<> {
  std::shared_ptr<fake_channel_probe> probe = std::make_shared<fake_channel_probe>();
  channel_actor channel = sys.spawn(fake_channel, probe);

  ~proxy_fixture() override { caf::anon_send_exit(channel, caf::exit_reason::kill); }
};

} // namespace
