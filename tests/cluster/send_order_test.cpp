// The send order (send_order.hpp) on its own: no socket, no thread, the times given by the
// test. Frames are heartbeats labelled by their sequence number ("h7"), and weights frames of
// one big key labelled by their request ("w3"); a batch is read back by decoding its frames.
// Cases: fifo and by_rank, the batch budget, the fixed push sequence (order, waiting, patience,
// a repeat, a late push, the next cycle), a refused sequence, dropping, the pacing figures.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/cluster/frame_codec.hpp>

#include "cluster/send_order.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

using clock_type = send_order::clock;

// One key of 100,000 floats: a frame of it is bigger than a by_rank batch.
constexpr std::int64_t big_floats = 100'000;

wire_keys big_key() {
  wire_keys keys;
  keys.shards.resize(1);
  keys.shards[0].push_back(shape_t{big_floats});
  return keys;
}

encoded_frame heartbeat(std::uint64_t label) {
  return encode_frame(heartbeat_message{label});
}

encoded_frame big(std::uint64_t label) {
  weights_message m;
  m.request = label;
  m.shard = 0;
  m.weights.keys = {0};
  m.weights.weights = {tensor(shape_t{big_floats})};
  return encode_frame(std::move(m));
}

// "h<sequence>" or "w<request>", read back from the frame's bytes.
std::string label_of(const encoded_frame& frame) {
  std::vector<char> bytes;
  for (const auto& piece : frame.pieces())
    bytes.insert(bytes.end(), piece.data, piece.data + piece.size);
  auto payload =
    std::make_shared<std::vector<char>>(bytes.begin() + frame_header_bytes, bytes.end());
  auto decoded = decode_payload(payload, big_key());
  REQUIRE(decoded.ok());
  if (auto* h = std::get_if<heartbeat_message>(&decoded.message))
    return "h" + std::to_string(h->sequence);
  return "w" + std::to_string(std::get<weights_message>(decoded.message).request);
}

// The labels of the next batch taken at `now`.
std::vector<std::string> take(send_order& order, clock_type::time_point now = {}) {
  std::vector<encoded_frame> batch;
  order.take_batch(batch, now);
  std::vector<std::string> labels;
  for (const auto& frame : batch)
    labels.push_back(label_of(frame));
  return labels;
}

// A push of rank `rank` labelled "h<label>", queued as sequenced at `now`.
void push(send_order& order, std::uint64_t rank, std::uint64_t label,
          clock_type::time_point now = {}) {
  order.queue(heartbeat(label), rank, true, now);
}

using labels = std::vector<std::string>;

} // namespace

TEST_CASE("fifo takes every frame as queued in one batch, whatever its rank or sequence",
          "[cluster][send_order]") {
  send_order order(write_order::fifo);
  order.set_sequence({1, 2}, 1s); // fifo has no sequence: a sequenced push goes as queued
  CHECK_FALSE(order.ready());
  order.queue(heartbeat(1), 30, false, {});
  order.queue(heartbeat(2), 0, false, {});
  push(order, 2, 3);
  order.queue(heartbeat(4), 10, false, {});
  CHECK(order.ready());
  CHECK(take(order) == labels{"h1", "h2", "h3", "h4"});
  CHECK_FALSE(order.ready());
  CHECK(take(order).empty());
}

TEST_CASE("by_rank takes the lowest rank first, equal ranks as queued", "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  const std::vector<std::uint64_t> ranks = {30, 0, 10, 30, 0, 20, 10, 5};
  for (std::size_t i = 0; i < ranks.size(); ++i)
    order.queue(heartbeat(i + 1), ranks[i], false, {});
  CHECK(take(order) == labels{"h2", "h5", "h8", "h3", "h7", "h6", "h1", "h4"});
}

TEST_CASE("a by_rank batch holds at most its budget of bytes, and one frame bigger than it whole",
          "[cluster][send_order]") {
  REQUIRE(big(0).bytes() > ranked_batch_bytes);
  send_order order(write_order::by_rank);
  order.queue(heartbeat(1), 0, false, {});
  order.queue(big(2), 1, false, {});
  order.queue(big(3), 1, false, {});
  order.queue(heartbeat(4), 2, false, {});
  // The heartbeat and a big frame would pass the budget: the heartbeat goes alone.
  CHECK(take(order) == labels{"h1"});
  CHECK(take(order) == labels{"w2"}); // bigger than the budget: alone, whole
  CHECK(take(order) == labels{"w3"});
  CHECK(take(order) == labels{"h4"});
  // Small frames share a batch up to the budget.
  for (std::uint64_t i = 0; i < 3; ++i)
    order.queue(heartbeat(10 + i), 0, false, {});
  CHECK(take(order) == labels{"h10", "h11", "h12"});
}

TEST_CASE("sequenced pushes go in the sequence's order after every other frame",
          "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  order.set_sequence({5, 1, 2, 3, 4}, 60s);
  for (std::uint64_t rank = 5; rank >= 1; --rank) // backward's order
    push(order, rank, rank);
  order.queue(heartbeat(90), 0, false, {}); // a control frame
  order.queue(heartbeat(91), 3, false, {}); // a frame not sequenced: by rank
  push(order, 9, 92);                       // a rank the sequence does not list: by rank
  CHECK(take(order) == labels{"h90", "h91", "h92", "h5", "h1", "h2", "h3", "h4"});
  // The next cycle: the same order again.
  for (std::uint64_t rank = 5; rank >= 1; --rank)
    push(order, rank, 10 + rank);
  CHECK(take(order) == labels{"h15", "h11", "h12", "h13", "h14"});
  CHECK(order.skips() == 0);
}

TEST_CASE("the sequence's next push holds the later ones until it comes or patience passes",
          "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  order.set_sequence({1, 2, 3}, 100ms);
  const clock_type::time_point start{10s};
  CHECK_FALSE(order.patience_ends()); // nothing waits
  push(order, 3, 3, start);
  push(order, 2, 2, start + 5ms);
  CHECK_FALSE(order.ready());
  REQUIRE(order.patience_ends());
  CHECK(*order.patience_ends() == start + 100ms); // from the step's first push
  CHECK(take(order).empty());
  CHECK_FALSE(order.give_up_waiting(start + 99ms)); // not yet
  CHECK_FALSE(order.ready());
  push(order, 1, 1, start + 99ms); // it comes in time: the sequence goes on in order
  CHECK_FALSE(order.patience_ends());
  CHECK(take(order, start + 99ms) == labels{"h1", "h2", "h3"});
  CHECK(order.skips() == 0);
}

TEST_CASE("a push that does not come within the patience is given up on, and goes at once when it "
          "comes",
          "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  order.set_sequence({1, 2, 3}, 100ms);
  const clock_type::time_point start{10s};
  push(order, 3, 3, start);
  push(order, 2, 2, start);
  const auto given_up = order.give_up_waiting(start + 100ms);
  REQUIRE(given_up);
  CHECK(*given_up == 1);
  CHECK(order.skips() == 1);
  CHECK(take(order, start + 100ms) == labels{"h2", "h3"});
  push(order, 1, 1, start + 150ms); // late: it goes at once, as the next cycle's first
  CHECK(order.ready());
  CHECK(take(order, start + 150ms) == labels{"h1"});
  // That cycle goes on in order, and nothing was lost.
  push(order, 3, 6, start + 200ms);
  push(order, 2, 5, start + 200ms);
  CHECK(take(order, start + 200ms) == labels{"h5", "h6"});
  push(order, 1, 4, start + 250ms);
  CHECK(take(order, start + 250ms) == labels{"h4"});
  CHECK(order.skips() == 1);
}

TEST_CASE("the patience counts from the last push taken, and giving up passes every missing one",
          "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  order.set_sequence({1, 2, 3, 4}, 100ms);
  const clock_type::time_point start{10s};
  push(order, 1, 1, start);
  push(order, 4, 4, start);
  CHECK(take(order, start + 50ms) == labels{"h1"});
  REQUIRE(order.patience_ends());
  CHECK(*order.patience_ends() == start + 150ms); // from when h1 was taken
  CHECK_FALSE(order.give_up_waiting(start + 149ms));
  const auto given_up = order.give_up_waiting(start + 150ms);
  REQUIRE(given_up);
  CHECK(*given_up == 2); // the awaited one named; 3 is passed over too
  CHECK(take(order, start + 150ms) == labels{"h4"});
  // h4 completed the cycle: the missing pushes, when they come, are the next cycle's and wait
  // for its first.
  push(order, 3, 3, start + 160ms);
  push(order, 2, 2, start + 160ms);
  CHECK_FALSE(order.ready());
  push(order, 1, 1, start + 170ms);
  CHECK(take(order, start + 170ms) == labels{"h1", "h2", "h3"});
  CHECK(order.skips() == 1);
}

TEST_CASE("a second source's push of a rank the cycle took goes at once", "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  order.set_sequence({1, 2, 3}, 60s);
  push(order, 1, 1);
  push(order, 3, 3);
  CHECK(take(order) == labels{"h1"});
  push(order, 1, 4); // a repeat of rank 1
  CHECK(take(order) == labels{"h4"});
  CHECK_FALSE(order.ready()); // rank 3 still waits for rank 2
  push(order, 2, 2);
  CHECK(take(order) == labels{"h2", "h3"});
}

TEST_CASE("a sequence listing a rank twice is refused and the old one kept",
          "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  order.set_sequence({2, 1}, 60s);
  try {
    order.set_sequence({4, 2, 4}, 1s);
    FAIL("accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "a push sequence lists rank 4 twice");
  }
  push(order, 1, 1);
  CHECK_FALSE(order.ready()); // rank 2 still comes first
  push(order, 2, 2);
  CHECK(take(order) == labels{"h2", "h1"});
}

TEST_CASE("dropping takes every queued frame, sequenced or not", "[cluster][send_order]") {
  send_order order(write_order::by_rank);
  order.set_sequence({1, 2}, 60s);
  order.queue(heartbeat(1), 0, false, {});
  push(order, 2, 2);
  CHECK(order.drop_all().size() == 2);
  CHECK_FALSE(order.ready());
  CHECK_FALSE(order.patience_ends());
  CHECK(take(order).empty());
}

TEST_CASE("a paced connection holds a millisecond of its rate unsent, at least a batch",
          "[cluster][send_order][pacing]") {
  CHECK(paced_unsent_bytes(62'500'000) == ranked_batch_bytes); // 62,500 bytes a millisecond
  CHECK(paced_unsent_bytes(1'250'000'000) == 1'250'000);       // 10 Gbit/s
  CHECK(paced_unsent_bytes(ranked_batch_bytes * 1000) == ranked_batch_bytes);
  CHECK(paced_unsent_bytes(0) == ranked_batch_bytes);
}
