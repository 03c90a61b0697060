// Frames: every message kind survives encode -> header -> decode with its values, tensors
// arrive as views of the received payload (no copy), and every malformed or unexpected input
// is refused with a text naming what is wrong, never a crash: bad headers, truncation, another
// protocol version, unknown shards and keys, wrong value sizes, out-of-range numbers, and
// random bytes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include <troupe/cluster/frame_codec.hpp>

#include "cluster/receive_pool.hpp"

using namespace troupe;

namespace {

std::vector<char> frame_of(const wire_message& message) {
  std::vector<char> out;
  append_frame(message, out);
  return out;
}

// The payload of a frame in a buffer of its own, as a connection receives it.
std::shared_ptr<std::vector<char>> payload_of(const std::vector<char>& frame) {
  REQUIRE(frame.size() > frame_header_bytes);
  auto header = read_frame_header(frame.data(), default_max_frame_bytes);
  REQUIRE(header.error.empty());
  REQUIRE(header.payload_bytes == frame.size() - frame_header_bytes);
  return std::make_shared<std::vector<char>>(frame.begin() + frame_header_bytes, frame.end());
}

// Shard 0: a [2, 3] key and a 5-element slice; shard 1: one [4] key.
wire_keys test_keys() {
  return wire_keys{{{{2, 3}, {5}}, {{4}}}};
}

tensor counting(shape_t shape, float start) {
  tensor t(std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = start + static_cast<float>(i);
  return t;
}

bool same_values(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && a.numel() > 0 && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

push_message test_push() {
  push_message m;
  m.request = 77;
  m.shard = 0;
  m.push.step = 12;
  m.push.epoch_position = 1.5;
  m.push.source = 3;
  m.push.samples = 128;
  m.remaining_ms = 5000;
  m.push.keys = {0, 1};
  // The second is a slice at an odd offset: not 8-byte aligned, so the encoder copies it.
  m.push.gradients = {counting({2, 3}, 1.0f), counting({9}, 10.0f).flat_slice(1, 5)};
  return m;
}

template <class T>
T decoded_as(const std::vector<char>& frame, const wire_keys& keys = test_keys()) {
  auto result = decode_payload(payload_of(frame), keys);
  INFO(result.error);
  REQUIRE(result.ok());
  REQUIRE(std::holds_alternative<T>(result.message));
  return std::get<T>(result.message);
}

std::string refusal(const std::vector<char>& frame, const wire_keys& keys = test_keys()) {
  auto result = decode_payload(payload_of(frame), keys);
  REQUIRE_FALSE(result.ok());
  return result.error;
}

} // namespace

TEST_CASE("a push round-trips, its gradients viewing the received payload", "[cluster][frame]") {
  const auto sent = test_push();
  const auto frame = frame_of(sent);
  auto payload = payload_of(frame);
  auto result = decode_payload(payload, test_keys());
  REQUIRE(result.ok());
  const auto& got = std::get<push_message>(result.message);
  CHECK(got.remaining_ms == 5000);
  CHECK(got.request == 77);
  CHECK(got.shard == 0);
  CHECK(got.push.step == 12);
  CHECK(got.push.epoch_position == 1.5);
  CHECK(got.push.source == 3);
  CHECK(got.push.samples == 128);
  REQUIRE(got.push.keys == std::vector<std::size_t>{0, 1});
  REQUIRE(got.push.gradients.size() == 2);
  CHECK(same_values(got.push.gradients[0], sent.push.gradients[0]));
  CHECK(same_values(got.push.gradients[1], sent.push.gradients[1]));
  // No copy on receipt: the values lie inside the payload buffer, which they keep alive.
  for (const auto& g : got.push.gradients) {
    const char* first = reinterpret_cast<const char*>(g.data());
    CHECK(first >= payload->data());
    CHECK(first + g.bytes() <= payload->data() + payload->size());
  }
  const auto held = payload.use_count();
  CHECK(held >= 3); // this handle and one per tensor view
}

TEST_CASE("weights, pull, hello, proof, failure, heartbeat and shutdown round-trip",
          "[cluster][frame]") {
  weights_message w;
  w.request = 5;
  w.shard = 1;
  w.weights.updates = 40;
  w.weights.keys = {0};
  w.weights.weights = {counting({4}, -2.0f)};
  w.weights.learning_rate = 0.05f;
  const auto got_w = decoded_as<weights_message>(frame_of(w));
  CHECK(got_w.request == 5);
  CHECK(got_w.shard == 1);
  CHECK(got_w.weights.updates == 40);
  CHECK(got_w.weights.learning_rate == 0.05f);
  REQUIRE(got_w.weights.weights.size() == 1);
  CHECK(same_values(got_w.weights.weights[0], w.weights.weights[0]));

  const auto got_pull = decoded_as<pull_message>(frame_of(pull_message{9, 1, 2500}));
  CHECK(got_pull.request == 9);
  CHECK(got_pull.shard == 1);
  CHECK_FALSE(got_pull.rewind);
  CHECK(got_pull.before_step == -1);
  CHECK(got_w.weights.before_step == -1);

  // Adopted workers: a rewinding pull, the step its weights precede, and the adopt frame.
  const auto rewind = decoded_as<pull_message>(frame_of(pull_message{10, 1, 2500, true, 768, 3}));
  CHECK(rewind.rewind);
  CHECK(rewind.before_step == 768);
  CHECK(rewind.source == 3);
  w.weights.before_step = 768;
  CHECK(decoded_as<weights_message>(frame_of(w)).weights.before_step == 768);
  CHECK(decoded_as<adopt_message>(frame_of(adopt_message{4, {}})).node == 4);
  CHECK(decoded_as<adopt_message>(frame_of(adopt_message{4, {}})).ranks.empty());
  const auto piece = decoded_as<adopt_message>(frame_of(adopt_message{4, {6, 7}}));
  REQUIRE(piece.ranks.size() == 2);
  CHECK(piece.ranks[0] == 6);
  CHECK(piece.ranks[1] == 7);

  // Workers that leave: a leave and both answers to it.
  CHECK(decoded_as<leave_message>(frame_of(leave_message{"SIGTERM"})).reason == "SIGTERM");
  const auto granted = decoded_as<release_message>(frame_of(release_message{true, ""}));
  CHECK(granted.granted);
  CHECK(granted.reason.empty());
  const auto refused =
    decoded_as<release_message>(frame_of(release_message{false, "no other worker is left"}));
  CHECK_FALSE(refused.granted);
  CHECK(refused.reason == "no other worker is left");
  CHECK(decoded_as<cede_message>(frame_of(cede_message{3, {}})).node == 3);
  const auto ceded = decoded_as<cede_message>(frame_of(cede_message{3, {5}}));
  REQUIRE(ceded.ranks.size() == 1);
  CHECK(ceded.ranks[0] == 5);

  // Shards with a backup: a primary's push passed to its backup reads back as the push it was
  // (its keys and values checked against the shard's table as a push's are), the backup's
  // count, and the scheduler's promote.
  const auto pushed = test_push();
  const auto replicated =
    decoded_as<replicate_message>(frame_of(replicate_message{{11, 0, pushed.push, 2500}}));
  CHECK(replicated.request == 11);
  CHECK(replicated.shard == 0);
  CHECK(replicated.remaining_ms == 2500);
  CHECK(replicated.push.step == pushed.push.step);
  CHECK(replicated.push.source == pushed.push.source);
  REQUIRE(replicated.push.gradients.size() == pushed.push.gradients.size());
  REQUIRE_FALSE(replicated.push.gradients.empty());
  CHECK(same_values(replicated.push.gradients[0], pushed.push.gradients[0]));
  const auto ack = decoded_as<replicated_message>(frame_of(replicated_message{11, 1877}));
  CHECK(ack.request == 11);
  CHECK(ack.updates == 1877);
  const auto promote = decoded_as<promote_message>(frame_of(promote_message{1, 2}));
  CHECK(promote.node == 1);
  CHECK(promote.server == 2);

  hello_message h;
  h.role = node_kind::server;
  h.name = "server 1";
  for (std::size_t i = 0; i < h.challenge.size(); ++i)
    h.challenge[i] = static_cast<std::uint8_t>(i * 7);
  h.plan_hash = 0x1234567890abcdefULL;
  const auto got_h = decoded_as<hello_message>(frame_of(h));
  CHECK(got_h.role == node_kind::server);
  CHECK(got_h.name == "server 1");
  CHECK(got_h.challenge == h.challenge);
  CHECK(got_h.plan_hash == h.plan_hash);

  proof_message p;
  p.proof.fill(0xab);
  CHECK(decoded_as<proof_message>(frame_of(p)).proof == p.proof);

  const auto got_f =
    decoded_as<failure_message>(frame_of(failure_message{3, errc::timeout, "too slow"}));
  CHECK(got_f.request == 3);
  CHECK(got_f.code == errc::timeout);
  CHECK(got_f.text == "too slow");

  CHECK(decoded_as<heartbeat_message>(frame_of(heartbeat_message{99})).sequence == 99);
  CHECK(decoded_as<shutdown_message>(frame_of(shutdown_message{"done"})).reason == "done");
}

TEST_CASE("frame headers: magic, length and limit are checked", "[cluster][frame]") {
  auto frame = frame_of(heartbeat_message{1});
  const auto payload = frame.size() - frame_header_bytes;
  CHECK(read_frame_header(frame.data(), payload).error.empty());
  CHECK(read_frame_header(frame.data(), payload - 8).error.find("over the limit")
        != std::string::npos);

  auto bad_magic = frame;
  bad_magic[0] = 'X';
  CHECK(
    read_frame_header(bad_magic.data(), default_max_frame_bytes).error.find("not a Troupe frame")
    != std::string::npos);

  auto set_length = [&](std::uint32_t length) {
    auto copy = frame;
    std::memcpy(copy.data() + 4, &length, 4);
    return read_frame_header(copy.data(), default_max_frame_bytes).error;
  };
  CHECK(set_length(0).find("not a positive multiple of 8") != std::string::npos);
  CHECK(set_length(12).find("not a positive multiple of 8") != std::string::npos);
}

TEST_CASE("truncated, padded, misaligned and other-version payloads are refused",
          "[cluster][frame]") {
  const auto frame = frame_of(test_push());
  auto cut = std::vector<char>(frame.begin(), frame.end() - 8);
  std::uint32_t length = static_cast<std::uint32_t>(cut.size() - frame_header_bytes);
  std::memcpy(cut.data() + 4, &length, 4);
  CHECK(refusal(cut).find("malformed payload") != std::string::npos);

  auto padded = payload_of(frame);
  padded->insert(padded->end(), 8, 0);
  auto padded_result = decode_payload(padded, test_keys());
  REQUIRE_FALSE(padded_result.ok());
  CHECK(padded_result.error.find("bytes after its message") != std::string::npos);

  CHECK(
    decode_payload(std::make_shared<std::vector<char>>(), test_keys()).error.find("multiple of 8")
    != std::string::npos);

  // The version is the root struct's first word: after the one-segment table (8 bytes) and
  // the root pointer (8 bytes).
  auto other = frame_of(heartbeat_message{1});
  const std::uint32_t version = wire_protocol_version() + 1;
  std::memcpy(other.data() + frame_header_bytes + 16, &version, 4);
  CHECK(refusal(other).find("protocol version " + std::to_string(version) + ", this node speaks "
                            + std::to_string(wire_protocol_version()))
        != std::string::npos);
}

TEST_CASE("pushes and weights are checked against the receiver's keys", "[cluster][frame]") {
  auto unknown_shard = test_push();
  unknown_shard.shard = 2;
  CHECK(refusal(frame_of(unknown_shard)).find("push.shard 2 is not a shard of the plan (2 shards)")
        != std::string::npos);

  // Another plan's shapes: the receiver expects [2, 2] for key 0.
  const wire_keys other_plan{{{{2, 2}, {5}}, {{4}}}};
  CHECK(refusal(frame_of(test_push()), other_plan)
          .find("value of key 0 has 24 bytes, expected 16 ([2, 2] float32)")
        != std::string::npos);

  auto unknown_key = test_push();
  unknown_key.shard = 1;
  unknown_key.push.keys = {3};
  unknown_key.push.gradients = {counting({4}, 0)};
  CHECK(refusal(frame_of(unknown_key)).find("key 3 is not a key of its shard (1 keys)")
        != std::string::npos);

  auto descending = test_push();
  descending.push.keys = {1, 0};
  descending.push.gradients = {counting({5}, 0), counting({2, 3}, 0)};
  CHECK(refusal(frame_of(descending)).find("not ascending") != std::string::npos);

  auto none = test_push();
  none.push.keys.clear();
  none.push.gradients.clear();
  CHECK(refusal(frame_of(none)).find("lists no keys") != std::string::npos);

  auto negative_step = test_push();
  negative_step.push.step = -1;
  CHECK(refusal(frame_of(negative_step)).find("push.step -1 is negative") != std::string::npos);
  auto no_samples = test_push();
  no_samples.push.samples = 0;
  CHECK(refusal(frame_of(no_samples)).find("push.samples 0 is not positive") != std::string::npos);
  auto nan_position = test_push();
  nan_position.push.epoch_position = std::numeric_limits<double>::quiet_NaN();
  CHECK(refusal(frame_of(nan_position)).find("epochPosition") != std::string::npos);
  auto negative_worker = test_push();
  negative_worker.push.source = -4;
  CHECK(refusal(frame_of(negative_worker)).find("push.source -4") != std::string::npos);

  weights_message w;
  w.shard = 1;
  w.weights.keys = {0};
  w.weights.weights = {counting({4}, 0)};
  w.weights.learning_rate = std::numeric_limits<float>::infinity();
  CHECK(refusal(frame_of(w)).find("learningRate is not finite") != std::string::npos);
  CHECK(refusal(frame_of(pull_message{1, 7, 10})).find("pull.shard 7") != std::string::npos);
  CHECK(refusal(frame_of(adopt_message{2, {3, 3}})).find("adopt.ranks lists rank 3 after 3")
        != std::string::npos);
  CHECK(refusal(frame_of(cede_message{2, {4, 1}}))
          .find("cede.ranks lists rank 1 after 4: each rank "
                "once, in ascending order")
        != std::string::npos);
  CHECK(refusal(frame_of(pull_message{1, 0, 10, true, -1, -2})).find("pull.source -2 is negative")
        != std::string::npos);
}

TEST_CASE("the encoder refuses what no decoder would accept", "[cluster][frame]") {
  std::vector<char> out;
  hello_message long_name;
  long_name.name.assign(hello_message::max_name_bytes + 1, 'x');
  CHECK_THROWS_AS(append_frame(long_name, out), std::invalid_argument);
  CHECK_THROWS_AS(append_frame(failure_message{1, errc::internal, std::string(5000, 'y')}, out),
                  std::invalid_argument);
  CHECK_THROWS_WITH(append_frame(leave_message{std::string(5000, 'y')}, out),
                    Catch::Contains("a leave's reason"));
  CHECK_THROWS_WITH(append_frame(release_message{false, std::string(5000, 'y')}, out),
                    Catch::Contains("a release's reason"));
  auto mismatched = test_push();
  mismatched.push.gradients.pop_back();
  CHECK_THROWS_AS(append_frame(mismatched, out), std::invalid_argument);
  hello_message one_process; // the plan's vocabulary has a role no wire carries
  one_process.role = node_kind::process;
  CHECK_THROWS_WITH(append_frame(one_process, out),
                    Catch::Contains("one-process node has no role"));
  CHECK(out.empty()); // nothing half-written
}

TEST_CASE("random bytes and flipped bytes never crash the decoder", "[cluster][frame]") {
  std::mt19937_64 random(20261122);
  const auto valid = payload_of(frame_of(test_push()));
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    std::shared_ptr<std::vector<char>> payload;
    if (trial % 2 == 0) {
      payload = std::make_shared<std::vector<char>>(8 * (1 + random() % 64));
      for (auto& byte : *payload)
        byte = static_cast<char>(random());
    } else {
      payload = std::make_shared<std::vector<char>>(*valid);
      for (int flips = 1 + random() % 4; flips > 0; --flips)
        (*payload)[random() % payload->size()] = static_cast<char>(random());
    }
    auto result = decode_payload(payload, test_keys());
    if (!result.ok()) {
      CHECK_FALSE(result.error.empty());
      ++refused;
      continue;
    }
    ++accepted;
    // Whatever is accepted satisfies the checks: a push's values match its keys' shapes.
    if (auto* push = std::get_if<push_message>(&result.message)) {
      REQUIRE(push->push.keys.size() == push->push.gradients.size());
      for (std::size_t i = 0; i < push->push.keys.size(); ++i)
        CHECK(push->push.gradients[i].shape()
              == test_keys().shards[push->shard][push->push.keys[i]]);
    }
  }
  CHECK(refused + accepted == 4000);
  CHECK(refused > 2000); // random bytes are essentially never a valid frame
}

TEST_CASE("the scheduler's messages round-trip", "[cluster][frame]") {
  const auto join =
    decoded_as<join_message>(frame_of(join_message{node_kind::server, "10.0.0.2", 9091, 4242}));
  CHECK(join.role == node_kind::server);
  CHECK(join.host == "10.0.0.2");
  CHECK(join.port == 9091);
  CHECK(join.pid == 4242);
  CHECK(join.rank == -1); // none asked for
  CHECK(join.sent_micros == 0);
  const auto ranked =
    decoded_as<join_message>(frame_of(join_message{node_kind::worker, "h", 0, 1, 3, 77}));
  CHECK(ranked.rank == 3);
  CHECK(ranked.job_hash == 77);
  CHECK(ranked.job.empty());
  join_message with_job{node_kind::worker, "h", 0, 1, -1, 77};
  with_job.job = {'j', '\0', 'b'};
  with_job.seen_from = "10.0.0.9:4000"; // the receiver's, never sent
  const auto carried = decoded_as<join_message>(frame_of(with_job));
  CHECK(carried.job == with_job.job);
  CHECK(carried.seen_from.empty());
  CHECK(!carried.rejoin); // a first join
  join_message rejoining{node_kind::worker, "h", 0, 1, -1, 77};
  rejoining.spare = true;
  rejoining.rejoin = rejoin_message{5, 2, 3, -1, {6, 7}, {}};
  rejoining.sent_micros = 1'790'000'000'123'456;
  const auto back = decoded_as<join_message>(frame_of(rejoining));
  CHECK(back.sent_micros == 1'790'000'000'123'456);
  REQUIRE(back.rejoin.has_value());
  CHECK(back.spare);
  CHECK(!back.rejoin->counted);
  CHECK(back.rejoin->node == 5);
  CHECK(back.rejoin->threads == 2);
  CHECK(back.rejoin->epoch == 3);
  CHECK(back.rejoin->applied_step == -1);
  REQUIRE(back.rejoin->adopted.size() == 2);
  CHECK(back.rejoin->adopted == std::vector<std::uint32_t>{6, 7});
  CHECK(back.rejoin->promoted.empty());
  join_message server_rejoin{node_kind::server, "h", 4000, 1, -1, 77};
  server_rejoin.rejoin = rejoin_message{1, 1, -1, 1234, {}, {2}};
  server_rejoin.rejoin->counted = traffic_message{3, {peer_traffic{"worker_0", {1, 2}, {3, 4}}}};
  const auto server_back = decoded_as<join_message>(frame_of(server_rejoin));
  REQUIRE(server_back.rejoin.has_value());
  REQUIRE(server_back.rejoin->counted.has_value());
  CHECK(server_back.rejoin->counted->epoch == 3);
  REQUIRE(server_back.rejoin->counted->peers.size() == 1);
  CHECK(server_back.rejoin->counted->peers[0].peer == "worker_0");
  CHECK(server_back.rejoin->counted->peers[0].bytes_out == std::vector<std::uint64_t>{3, 4});
  CHECK(server_back.rejoin->applied_step == 1234);
  REQUIRE(server_back.rejoin->promoted.size() == 1);
  CHECK(server_back.rejoin->promoted.front() == 2);

  assignment_message a;
  a.rank = 1;
  a.node = 4;
  a.job = {'j', 'o', 'b', '\0', 'x'};
  a.job_hash = 77;
  a.plan_hash = 88;
  a.facts = data_facts{{3, 32, 32}, 10, 50000, 10000};
  a.servers = {{1, "127.0.0.1", 5000}, {2, "127.0.0.1", 5001}};
  a.threads = 3;
  CHECK(!decoded_as<assignment_message>(frame_of(a)).clock.measured());
  a.clock = {1'790'000'000'000'001, 1'790'000'000'000'502, 1'790'000'000'900'000};
  const auto got = decoded_as<assignment_message>(frame_of(a));
  CHECK(got.clock.measured());
  CHECK(got.clock.join_sent == a.clock.join_sent);
  CHECK(got.clock.join_received == a.clock.join_received);
  CHECK(got.clock.sent == a.clock.sent);
  CHECK(got.threads == 3);
  CHECK(got.rank == 1);
  CHECK(got.node == 4);
  CHECK(got.ranks.empty());
  a.adopt = true;
  a.ranks = {9, 11};
  const auto taken = decoded_as<assignment_message>(frame_of(a));
  CHECK(taken.adopt);
  CHECK(taken.ranks == std::vector<std::uint32_t>{9, 11});
  a.adopt = false;
  a.ranks.clear();
  CHECK(got.job == a.job);
  CHECK(got.job_hash == 77);
  CHECK(got.plan_hash == 88);
  CHECK(got.facts.sample_shape == shape_t{3, 32, 32});
  CHECK(got.facts.classes == 10);
  CHECK(got.facts.train_examples == 50000);
  CHECK(got.facts.validation_examples == 10000);
  REQUIRE(got.servers.size() == 2);
  CHECK(got.servers[1].node == 2);
  CHECK(got.servers[1].port == 5001);

  CHECK(decoded_as<ready_message>(frame_of(ready_message{3})).node == 3);

  const auto control =
    decoded_as<control_message>(frame_of(control_message{9, 2, control_kind::validate, 5, 60000}));
  CHECK(control.request == 9);
  CHECK(control.rank == 2);
  CHECK(control.kind == control_kind::validate);
  CHECK(control.epoch == 5);

  report_message r;
  r.request = 9;
  r.report = phase_report{5, true, 1000, 900, 123.25, 1.5, 0.0};
  r.report.top_k = 5;
  r.report.top_k_correct = 990;
  const auto report = decoded_as<report_message>(frame_of(r));
  CHECK(report.request == 9);
  CHECK(report.report.epoch == 5);
  CHECK(report.report.validation);
  CHECK(report.report.samples == 1000);
  CHECK(report.report.correct == 900);
  CHECK(report.report.loss_sum == 123.25);
  CHECK(report.report.seconds == 1.5);
  CHECK(report.report.top_k == 5);
  CHECK(report.report.top_k_correct == 990);

  batch_report_message b;
  b.report = batch_report{1, 2, 3, 469, 128, 100, 45.5, 0.05f, 3, 120};
  const auto batch = decoded_as<batch_report_message>(frame_of(b)).report;
  CHECK(batch.rank == 1);
  CHECK(batch.index == 3);
  CHECK(batch.batches == 469);
  CHECK(batch.correct == 100);
  CHECK(batch.learning_rate == 0.05f);
  CHECK(batch.top_k == 3);
  CHECK(batch.top_k_correct == 120);
  b.report.values_pushed = 4096;
  b.report.values_sent = 17;
  const auto counted = decoded_as<batch_report_message>(frame_of(b)).report;
  CHECK(counted.values_pushed == 4096);
  CHECK(counted.values_sent == 17);
}

TEST_CASE("ready's port, shutdown's finish and traffic reports round-trip", "[cluster][frame]") {
  const auto ready = decoded_as<ready_message>(frame_of(ready_message{3, 40123, 2}));
  CHECK(ready.node == 3);
  CHECK(ready.port == 40123);
  CHECK(ready.threads == 2);
  const auto end =
    decoded_as<shutdown_message>(frame_of(shutdown_message{"the run finished", true}));
  CHECK(end.finished);
  CHECK(end.reason == "the run finished");
  CHECK_FALSE(
    decoded_as<shutdown_message>(frame_of(shutdown_message{"lost worker 1", false})).finished);
  // The lost node a goodbye names survives the trip; none reads -1.
  CHECK(end.lost_node == -1);
  CHECK(
    decoded_as<shutdown_message>(frame_of(shutdown_message{"lost server_0", false, 2})).lost_node
    == 2);

  CHECK(decoded_as<traffic_query_message>(frame_of(traffic_query_message{7})).epoch == 7);
  traffic_message t;
  t.epoch = 7;
  t.peers = {{"server_0", {1, 2, 3}, {4, 5}}, {"scheduler", {}, {9}}};
  const auto got = decoded_as<traffic_message>(frame_of(t));
  CHECK(got.epoch == 7);
  REQUIRE(got.peers.size() == 2);
  CHECK(got.peers[0].peer == "server_0");
  CHECK(got.peers[0].bytes_in == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(got.peers[0].bytes_out == std::vector<std::uint64_t>{4, 5});
  CHECK(got.peers[1].bytes_in.empty());
  CHECK(got.peers[1].bytes_out == std::vector<std::uint64_t>{9});
  CHECK(got.waits.empty());
  t.waits = {{"worker_1", 2.5, 40}, {"worker_0", 0.0, 0}};
  const auto waited = decoded_as<traffic_message>(frame_of(t));
  REQUIRE(waited.waits.size() == 2);
  CHECK(waited.waits[0].node == "worker_1");
  CHECK(waited.waits[0].seconds == 2.5);
  CHECK(waited.waits[0].steps == 40);
  CHECK(waited.waits[1].node == "worker_0");

  std::vector<char> out;
  traffic_message wide;
  wide.peers = {{"worker_0", std::vector<std::uint64_t>(peer_traffic::max_kinds + 1), {}}};
  CHECK_THROWS_AS(append_frame(wide, out), std::invalid_argument);
  traffic_message crowded;
  crowded.peers.resize(traffic_message::max_peers + 1);
  CHECK_THROWS_AS(append_frame(crowded, out), std::invalid_argument);
  traffic_message negative;
  negative.waits = {{"worker_1", -1.0, 3}};
  CHECK_THROWS_AS(append_frame(negative, out), std::invalid_argument);
  CHECK(out.empty());
}

TEST_CASE("the scheduler's messages are checked", "[cluster][frame]") {
  assignment_message a;
  a.facts = data_facts{{1, 28, 28}, 0, 60000, 10000};
  CHECK_THAT(refusal(frame_of(a)), Catch::Contains("assignment.facts.classes 0"));
  a.facts = data_facts{{}, 10, 60000, 10000};
  CHECK_THAT(refusal(frame_of(a)), Catch::Contains("sampleShape has 0 dimensions"));
  a.facts = data_facts{{1, 28, 28}, 10, -1, 10000};
  CHECK_THAT(refusal(frame_of(a)), Catch::Contains("negative example count"));
  a.facts = data_facts{{1, 28, 28}, 10, 60000, 10000};
  a.clock = {5, -1, 7};
  CHECK_THAT(refusal(frame_of(a)), Catch::Contains("assignment.clock has a negative stamp"));
  a.clock = {};
  a.term = 0;
  CHECK_THAT(refusal(frame_of(a)), Catch::Contains("assignment.term is 0 (terms begin at 1)"));
  CHECK_THAT(refusal(frame_of(fence_message{1, 0, "lost"})),
             Catch::Contains("fence.term is 0 (terms begin at 1)"));

  CHECK_THAT(refusal(frame_of(control_message{1, 0, control_kind::train, -2, 10})),
             Catch::Contains("control.epoch -2 is negative"));
  report_message r;
  r.report = phase_report{0, false, 10, 11, 1.0, 1.0, 0.5};
  CHECK_THAT(refusal(frame_of(r)), Catch::Contains("report counts 11 correct of 10"));
  r.report = phase_report{0, false, 10, 5, 1.0, -1.0, 0.5};
  CHECK_THAT(refusal(frame_of(r)), Catch::Contains("negative or non-finite time"));
  r.report = phase_report{0, false, 10, 5, 1.0, 1.0, 0.5};
  r.report.top_k = 3;
  r.report.top_k_correct = 11;
  CHECK_THAT(refusal(frame_of(r)), Catch::Contains("report counts 11 in the top 3 of 10"));
  r.report.top_k = 0;
  r.report.top_k_correct = 1; // counted without a k
  CHECK_THAT(refusal(frame_of(r)), Catch::Contains("report counts 1 in the top 0 of 10"));
  r.report.top_k = -2;
  r.report.top_k_correct = 0;
  CHECK_THAT(refusal(frame_of(r)), Catch::Contains("report.topK -2 is negative"));
  batch_report_message b;
  b.report = batch_report{0, 0, 1, 469, 128, 100, 1.0, 0.1f, 5, -1};
  CHECK_THAT(refusal(frame_of(b)), Catch::Contains("batchReport counts -1 in the top 5 of 128"));
  b.report = batch_report{0, 0, 469, 469, 128, 100, 1.0, 0.1f};
  CHECK_THAT(refusal(frame_of(b)), Catch::Contains("batchReport.index 469 is not in [0, 469)"));
  // Found by the fuzzer: no arithmetic on the peer's numbers, even in the error text.
  b.report = batch_report{0, 0, 0, std::numeric_limits<std::int64_t>::min(), 128, 100, 1.0, 0.1f};
  CHECK_THAT(refusal(frame_of(b)), Catch::Contains("is not in [0, -9223372036854775808)"));
  b.report = batch_report{0, 0, 1, 469, 128, 100, std::numeric_limits<double>::infinity(), 0.1f};
  CHECK_THAT(refusal(frame_of(b)), Catch::Contains("batchReport.lossSum is not finite"));
  b.report = batch_report{0, 0, 1, 469, 128, 100, 1.0, 0.1f};
  b.report.values_pushed = 10;
  b.report.values_sent = 11; // more sent than pushed
  CHECK_THAT(refusal(frame_of(b)),
             Catch::Contains("batchReport.valuesSent 11 is not in [0, valuesPushed 10]"));
  b.report.values_sent = -1;
  CHECK_THAT(refusal(frame_of(b)),
             Catch::Contains("batchReport.valuesSent -1 is not in [0, valuesPushed 10]"));

  join_message rejoin{node_kind::worker, "h", 0, 1, -1, 77};
  rejoin.rejoin = rejoin_message{1, 2, -2, -1, {}, {}};
  CHECK_THAT(refusal(frame_of(rejoin)), Catch::Contains("join.rejoin.epoch -2 is below -1"));
  rejoin.rejoin = rejoin_message{1, 2, 0, -7, {}, {}};
  CHECK_THAT(refusal(frame_of(rejoin)), Catch::Contains("join.rejoin.appliedStep -7 is below -1"));
  rejoin.rejoin = rejoin_message{1, 5000, 0, -1, {}, {}};
  CHECK_THAT(refusal(frame_of(rejoin)), Catch::Contains("join.rejoin.threads 5000 is above 4096"));
  join_message stamped{node_kind::worker, "h", 0, 1, -1, 77};
  stamped.sent_micros = -3;
  CHECK_THAT(refusal(frame_of(stamped)), Catch::Contains("join.sentMicros -3 is negative"));

  std::vector<char> out;
  rejoin.rejoin =
    rejoin_message{1, 2, 0, -1, std::vector<std::uint32_t>(rejoin_message::max_nodes + 1, 3), {}};
  CHECK_THROWS_AS(append_frame(rejoin, out), std::invalid_argument);
  assignment_message huge;
  huge.job.resize(assignment_message::max_job_bytes + 1);
  CHECK_THROWS_AS(append_frame(huge, out), std::invalid_argument);
  CHECK_THROWS_AS(append_frame(join_message{node_kind::worker, std::string(300, 'h'), 0, 0}, out),
                  std::invalid_argument);
  CHECK(out.empty());
}

TEST_CASE("troupe ctl's command, its answer and the drain round-trip, and are checked",
          "[cluster][frame]") {
  hello_message h;
  h.role = node_kind::ctl;
  h.name = "troupe ctl (pid 7)";
  CHECK(decoded_as<hello_message>(frame_of(h)).role == node_kind::ctl);
  const auto c =
    decoded_as<command_message>(frame_of(command_message{5, "drain", {"worker_1", "now"}, 2500}));
  CHECK(c.request == 5);
  CHECK(c.verb == "drain");
  REQUIRE(c.args.size() == 2);
  CHECK(c.args[0] == "worker_1");
  CHECK(c.args[1] == "now");
  CHECK(c.remaining_ms == 2500);
  CHECK(decoded_as<command_message>(frame_of(command_message{6, "status", {}, 10})).args.empty());
  const auto r = decoded_as<command_result_message>(
    frame_of(command_result_message{5, "asked worker 1 to leave", R"({"schema":1})"}));
  CHECK(r.request == 5);
  CHECK(r.text == "asked worker 1 to leave");
  CHECK(r.json == R"({"schema":1})");
  CHECK(decoded_as<drain_message>(frame_of(drain_message{"troupe ctl drain"})).reason
        == "troupe ctl drain");
  // Refused on the way in: no verb, no time left; on the way out: a verb past its limit, too
  // many arguments, a drain's reason past the text limit.
  CHECK_THAT(refusal(frame_of(command_message{1, "", {}, 10})),
             Catch::Contains("command.verb is empty"));
  CHECK_THAT(refusal(frame_of(command_message{1, "status", {}, 0})),
             Catch::Contains("command.remainingMs 0"));
  std::vector<char> out;
  CHECK_THROWS_WITH(append_frame(command_message{1, std::string(65, 'v'), {}, 10}, out),
                    Catch::Contains("a command's verb"));
  CHECK_THROWS_WITH(
    append_frame(command_message{1, "drain", std::vector<std::string>(65, "x"), 10}, out),
    Catch::Contains("a command has 65 arguments, at most 64"));
  CHECK_THROWS_WITH(append_frame(drain_message{std::string(5000, 'y')}, out),
                    Catch::Contains("a drain's reason"));
  CHECK(out.empty());
}

TEST_CASE("a shard change and its answer round-trip, and are checked", "[cluster][frame]") {
  const auto c = decoded_as<change_message>(
    frame_of(change_message{7, {shard_setting::momentum, 0.85, 938}, 4000}));
  CHECK(c.request == 7);
  CHECK(c.change.setting == shard_setting::momentum);
  CHECK(c.change.value == 0.85);
  CHECK(c.change.step == 938);
  CHECK(c.remaining_ms == 4000);
  CHECK(decoded_as<change_message>(frame_of(change_message{8, {shard_setting::wd, 0, 0}, 1}))
          .change.setting
        == shard_setting::wd);
  const auto d = decoded_as<changed_message>(frame_of(changed_message{7, 3}));
  CHECK(d.request == 7);
  CHECK(d.shards == 3);
  // Refused on the way in: a value that is no number, a step before the run, no time left.
  CHECK_THAT(refusal(frame_of(change_message{1, {shard_setting::lr, std::nan(""), 0}, 10})),
             Catch::Contains("change.value is not finite"));
  CHECK_THAT(refusal(frame_of(change_message{1, {shard_setting::lr, 0.1, -1}, 10})),
             Catch::Contains("change.step -1 is negative"));
  CHECK_THAT(refusal(frame_of(change_message{1, {shard_setting::lr, 0.1, 0}, 0})),
             Catch::Contains("change.remainingMs 0"));
}

TEST_CASE("a frame's bytes are its values plus a bounded overhead", "[cluster][frame]") {
  for (std::size_t keys : {1u, 2u, 15u, 60u}) {
    for (std::int64_t floats : {3, 9, 262144}) {
      push_message push;
      push.push.samples = 1;
      weights_message weights;
      for (std::size_t k = 0; k < keys; ++k) {
        push.push.keys.push_back(k);
        push.push.gradients.push_back(counting({floats}, 0));
      }
      weights.weights.keys = push.push.keys;
      weights.weights.weights = push.push.gradients;
      const auto values = keys * static_cast<std::size_t>(floats) * sizeof(float);
      for (const auto& frame : {frame_of(push), frame_of(weights)}) {
        INFO(keys << " keys of " << floats << " floats: " << frame.size() << " bytes");
        CHECK(frame.size() > values + frame_header_bytes);
        CHECK(frame.size() <= values + frame_overhead_bound(keys));
      }
    }
  }
}

TEST_CASE("an encoded frame points into aligned tensors instead of copying them",
          "[cluster][frame]") {
  const auto sent = test_push(); // one aligned [2, 3] tensor (24 bytes), one odd slice
  const auto frame = encode_frame(sent);
  REQUIRE(frame.pieces().size() >= 2); // the header with segment table, then segments
  CHECK(frame.kind() == wire_message(sent).index());
  std::size_t total = 0;
  int aligned_in_place = 0, slice_in_place = 0;
  for (const auto& piece : frame.pieces()) {
    total += piece.size;
    if (piece.data == reinterpret_cast<const char*>(sent.push.gradients[0].data()))
      ++aligned_in_place;
    if (piece.data == reinterpret_cast<const char*>(sent.push.gradients[1].data()))
      ++slice_in_place;
  }
  CHECK(aligned_in_place == 1); // the tensor's own bytes are a piece of the frame
  CHECK(slice_in_place == 0);   // 20 bytes at an odd offset: copied into the message
  CHECK(total == frame.bytes());
  // The pieces, laid end to end, are exactly append_frame's bytes and decode to the push.
  std::vector<char> joined;
  for (const auto& piece : frame.pieces())
    joined.insert(joined.end(), piece.data, piece.data + piece.size);
  REQUIRE(joined.size() == frame_of(sent).size());
  CHECK(joined == frame_of(sent));
  const auto got = decoded_as<push_message>(joined);
  REQUIRE(got.push.gradients.size() == 2);
  CHECK(same_values(got.push.gradients[0], sent.push.gradients[0]));
  CHECK(same_values(got.push.gradients[1], sent.push.gradients[1]));
}

TEST_CASE("an encoded frame keeps its tensors alive and unchanged until it is gone",
          "[cluster][frame]") {
  weights_message m;
  m.request = 5;
  m.shard = 1;
  m.weights.keys = {0};
  m.weights.weights = {counting({4}, 2.0f)};
  const auto* bytes = m.weights.weights[0].data();
  auto frame = encode_frame(m);
  // The frame holds a handle: a copy-on-write writer (a shard's update) sees the tensor shared
  // and writes elsewhere, so the bytes in flight cannot change under the socket's writer.
  CHECK_FALSE(m.weights.weights[0].unique());
  m = weights_message{};
  bool found = false;
  for (const auto& piece : frame.pieces())
    found = found || piece.data == reinterpret_cast<const char*>(bytes);
  CHECK(found);
  std::vector<char> joined;
  for (const auto& piece : frame.pieces())
    joined.insert(joined.end(), piece.data, piece.data + piece.size);
  const auto got = decoded_as<weights_message>(joined);
  REQUIRE(got.weights.weights.size() == 1);
  CHECK(same_values(got.weights.weights[0], counting({4}, 2.0f)));
}

TEST_CASE("requests carry the time left to their deadline, and the decoder checks it",
          "[cluster][frame]") {
  CHECK(decoded_as<pull_message>(frame_of(pull_message{9, 1, 2500})).remaining_ms == 2500);
  CHECK(decoded_as<control_message>(frame_of(control_message{9, 2, control_kind::train, 5, 70}))
          .remaining_ms
        == 70);
  // A request whose time is up, or one beyond any deadline, is refused naming the field.
  CHECK(refusal(frame_of(pull_message{1, 0, 0})).find("pull.remainingMs 0") != std::string::npos);
  auto push = test_push();
  push.remaining_ms = max_remaining_ms + 1;
  CHECK(refusal(frame_of(push)).find("push.remainingMs") != std::string::npos);
  CHECK(refusal(frame_of(control_message{1, 0, control_kind::validate, 3, 0}))
          .find("control.remainingMs 0")
        != std::string::npos);
  // An end of epoch is one-way: it carries no time.
  CHECK(refusal(frame_of(control_message{1, 0, control_kind::end_epoch, 3, 5})).find("end of epoch")
        != std::string::npos);
  CHECK(decoded_as<control_message>(frame_of(control_message{0, 0, control_kind::end_epoch, 3, 0}))
          .epoch
        == 3);
}

namespace {

// test_push() quantized for 2-bit at `t`: key 0 all +t, the slice mixed.
push_message two_bit_push(float t) {
  auto m = test_push();
  tensor a({2, 3}), b({5});
  a.fill(t);
  const float mixed[5] = {t, 0, -t, t, 0};
  std::memcpy(b.data(), mixed, sizeof mixed);
  m.push.gradients = {a, b};
  m.push.encoding = value_encoding::two_bit;
  m.push.scales = {t, t};
  return m;
}

// The first place `bytes` occur in `frame`, which must hold them exactly once.
std::size_t only_place(const std::vector<char>& frame, const std::vector<char>& bytes) {
  std::size_t found = frame.size(), count = 0;
  for (std::size_t i = 0; i + bytes.size() <= frame.size(); ++i)
    if (std::equal(bytes.begin(), bytes.end(), frame.begin() + static_cast<std::ptrdiff_t>(i))) {
      found = i;
      ++count;
    }
  REQUIRE(count == 1);
  return found;
}

} // namespace

TEST_CASE("compressed pushes and answers cross packed, and arrive bit for bit",
          "[cluster][frame]") {
  const auto sent = two_bit_push(0.25f);
  const auto frame = frame_of(sent);
  auto got = decoded_as<push_message>(frame);
  CHECK(got.push.encoding == value_encoding::two_bit);
  CHECK(got.push.scales == std::vector<float>{0.25f, 0.25f});
  REQUIRE(got.push.gradients.size() == 2);
  CHECK(same_values(got.push.gradients[0], sent.push.gradients[0]));
  CHECK(same_values(got.push.gradients[1], sent.push.gradients[1]));
  // 11 values in 2 bits each: 4 bytes packed instead of 44 as float32.
  CHECK(frame.size() + 40 <= frame_of(test_push()).size());

  weights_message w;
  w.shard = 1;
  w.weights.keys = {0};
  w.weights.weights = {tensor::from_values({4}, {0.5f, -1.25f, 3.0f, 0.0f})}; // all exact in fp16
  w.weights.encoding = value_encoding::fp16;
  auto back = decoded_as<weights_message>(frame_of(w));
  CHECK(back.weights.encoding == value_encoding::fp16);
  CHECK(back.weights.scales.empty());
  REQUIRE(back.weights.weights.size() == 1);
  CHECK(same_values(back.weights.weights[0], w.weights.weights[0]));
  w.weights.encoding = value_encoding::bf16;
  CHECK(
    same_values(decoded_as<weights_message>(frame_of(w)).weights.weights[0], w.weights.weights[0]));
}

// A channel unpacks compressed values into buffers of its pool (unpacked_from): the next frame's
// values land in the buffers the previous frame's tensors gave back, so a step's unpacked
// values fault no fresh pages in; buffers still held are never handed out twice.
TEST_CASE("compressed values are unpacked into a channel's reused buffers", "[cluster][frame]") {
  auto pool = std::make_shared<receive_pool>(1 << 20);
  const auto unpack_into = unpacked_from(pool);
  const auto sent = two_bit_push(0.25f);
  const auto frame = frame_of(sent);
  auto decode = [&] {
    auto result = decode_payload(payload_of(frame), test_keys(), unpack_into);
    INFO(result.error);
    REQUIRE(result.ok());
    auto push = std::get<push_message>(std::move(result.message)).push;
    REQUIRE(push.gradients.size() == 2);
    CHECK(same_values(push.gradients[0], sent.push.gradients[0]));
    CHECK(same_values(push.gradients[1], sent.push.gradients[1]));
    return push;
  };
  auto first = decode();
  const float* first_key0 = first.gradients[0].data();
  auto held = decode(); // the first still held: other buffers
  CHECK(held.gradients[0].data() != first_key0);
  CHECK(pool->idle_bytes() == 0);
  first = gradient_push{}; // its tensors go: 6 + 5 floats back to the pool
  CHECK(pool->idle_bytes() == 11 * sizeof(float));
  auto again = decode();
  CHECK(again.gradients[0].data() == first_key0);
  CHECK(pool->idle_bytes() == 0);
}

TEST_CASE("the encoder refuses values or scales its encoding cannot carry", "[cluster][frame]") {
  std::vector<char> out;
  auto unquantized = test_push();
  unquantized.push.encoding = value_encoding::fp16; // 1..6 are exact in fp16, the slice's 11.. too
  CHECK_NOTHROW(append_frame(unquantized, out));
  unquantized.push.gradients[0].data()[0] = 1.0f / 3.0f;
  out.clear();
  CHECK_THROWS_WITH(append_frame(unquantized, out),
                    Catch::Contains("not exactly representable in fp16"));
  auto scales = two_bit_push(0.5f);
  scales.push.scales.pop_back();
  CHECK_THROWS_WITH(append_frame(scales, out),
                    Catch::Contains("encoded 2bit has 1 scales, expected 2"));
  auto off_scale = two_bit_push(0.5f);
  off_scale.push.scales = {0.5f, 0.25f};
  CHECK_THROWS_WITH(
    append_frame(off_scale, out),
    Catch::Contains("tensor 1: value 0 (0.5) is not exactly representable in 2bit"));
}

TEST_CASE("the decoder refuses packed values that break their encoding", "[cluster][frame]") {
  const auto frame = frame_of(two_bit_push(0.5f));
  // Key 0's six +t are codes 1: bytes 0x55 then 0x05 (two values, then zero pad bits).
  const auto at = only_place(frame, {'\x55', '\x05'});
  auto unused_code = frame;
  unused_code[at] = '\x57';
  CHECK(refusal(unused_code).find("push value of key 0: 2bit value 0 has the unused code 3")
        != std::string::npos);
  auto pad = frame;
  pad[at + 1] = '\x45';
  CHECK(refusal(pad).find("push value of key 0: 2bit padding after value 5 is not zero")
        != std::string::npos);
  // Another plan's shapes: 4 values of 2 bits are 1 byte, not 2.
  const wire_keys other_plan{{{{2, 2}, {5}}, {{4}}}};
  CHECK(refusal(frame, other_plan).find("value of key 0 has 2 bytes, expected 1 ([2, 2] 2bit)")
        != std::string::npos);
  // A negative scale: the two scales are the frame's only 0.5f pair.
  auto negative = frame;
  const float half = 0.5f, minus = -0.5f;
  std::vector<char> pair(8);
  std::memcpy(pair.data(), &half, 4);
  std::memcpy(pair.data() + 4, &half, 4);
  const auto scale_at = only_place(frame, pair);
  std::memcpy(negative.data() + scale_at, &minus, 4);
  CHECK(refusal(negative).find("push scale 0 is not a finite number >= 0") != std::string::npos);
}

TEST_CASE("2-bit keys of several blocks carry a scale per block, checked against the plan's shapes",
          "[cluster][frame]") {
  // Shard 0's keys: 600 values (3 blocks: 256, 256, 88) and 5 (1 block).
  const wire_keys keys{{{{600}, {5}}}};
  auto m = test_push(); // keys 0 and 1 of shard 0, values set below
  tensor big({600}), small({5});
  const float scales[4] = {0.5f, 0.125f, 2.0f, 0.25f};
  for (std::int64_t i = 0; i < 600; ++i)
    big.data()[i] = i % 3 == 0 ? 0.0f : (i % 3 == 1 ? 1.0f : -1.0f) * scales[i / 256];
  small.fill(-0.25f);
  m.push.gradients = {big, small};
  m.push.encoding = value_encoding::two_bit;
  m.push.scales = {0.5f, 0.125f, 2.0f, 0.25f};
  const auto frame = frame_of(m);
  auto got = decoded_as<push_message>(frame, keys);
  CHECK(got.push.scales == m.push.scales);
  REQUIRE(got.push.gradients.size() == 2);
  CHECK(same_values(got.push.gradients[0], big));
  CHECK(same_values(got.push.gradients[1], small));
  // One scale short: the encoder refuses to send it, naming the count per block.
  auto short_of_one = m;
  short_of_one.push.scales.pop_back();
  std::vector<char> out;
  CHECK_THROWS_WITH(append_frame(short_of_one, out), Catch::Contains("has 3 scales, expected 4"));
  // A plan whose first key is one block: the frame's 4 scales are refused, counted.
  const wire_keys smaller{{{{200}, {5}}}};
  CHECK(refusal(frame, smaller)
          .find("push encoded 2bit carries 4 scales, expected 2 (one per 256 values of each key)")
        != std::string::npos);
  // A value of block 1 at block 0's scale does not pack.
  auto off_block = m;
  off_block.push.gradients[0] = big.clone();
  off_block.push.gradients[0].data()[257] = 0.5f;
  CHECK_THROWS_WITH(append_frame(off_block, out), Catch::Contains("tensor 0: value 257 (0.5)"));
}

TEST_CASE("every frame carries its sender's term, and fences cross with theirs",
          "[cluster][frame]") {
  std::vector<char> out;
  append_frame(heartbeat_message{3}, out, 42);
  auto stamped = decode_payload(payload_of(out), test_keys());
  REQUIRE(stamped.ok());
  CHECK(stamped.term == 42);
  auto unstamped = decode_payload(payload_of(frame_of(heartbeat_message{4})), test_keys());
  REQUIRE(unstamped.ok());
  CHECK(unstamped.term == 0); // a node not assigned yet, or the scheduler

  const auto fence =
    decoded_as<fence_message>(frame_of(fence_message{2, 9, "lost at 10:00: no frame for 3004 ms"}));
  CHECK(fence.node == 2);
  CHECK(fence.term == 9);
  CHECK(fence.reason == "lost at 10:00: no frame for 3004 ms");

  shutdown_message told{"fenced by worker_0: lost at 10:00"};
  told.fenced = true;
  const auto goodbye = decoded_as<shutdown_message>(frame_of(told));
  CHECK(goodbye.fenced);
  CHECK_FALSE(goodbye.finished);
  CHECK(goodbye.reason == told.reason);
  CHECK_FALSE(decoded_as<shutdown_message>(frame_of(shutdown_message{"done", true})).fenced);

  assignment_message a;
  a.facts = data_facts{{1, 28, 28}, 10, 60000, 10000};
  a.term = 17;
  CHECK(decoded_as<assignment_message>(frame_of(a)).term == 17);
  join_message join;
  join.rejoin = rejoin_message{};
  join.rejoin->term = 17;
  const auto rejoined = decoded_as<join_message>(frame_of(join));
  REQUIRE(rejoined.rejoin);
  CHECK(rejoined.rejoin->term == 17);
}
