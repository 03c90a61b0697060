// decode_payload (see frame_codec.hpp): reads one Cap'n Proto payload and checks every field
// before anything of it reaches an actor. A check that fails throws `refused` with the field's
// name; Cap'n Proto's own errors on malformed bytes (bad pointers, a segment table that does
// not add up, reads past the end) are caught the same way, so a caller sees one error text.
#include <troupe/cluster/frame_codec.hpp>

#include <cmath>
#include <exception>
#include <stdexcept>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include "cluster/frame_decoding.hpp"
#include "schema/wire.capnp.h"

namespace troupe {

namespace frame_decoding {

node_kind role_of(wire::Role role) {
  switch (role) {
  case wire::Role::SCHEDULER:
    return node_kind::scheduler;
  case wire::Role::SERVER:
    return node_kind::server;
  case wire::Role::WORKER:
    return node_kind::worker;
  case wire::Role::CTL:
    return node_kind::ctl;
  }
  refuse("hello.role " + std::to_string(static_cast<unsigned>(role)) + " is not a role");
}

errc code_of(wire::ErrorCode code) {
  switch (code) {
  case wire::ErrorCode::BAD_REQUEST:
    return errc::bad_request;
  case wire::ErrorCode::BAD_DATA:
    return errc::bad_data;
  case wire::ErrorCode::PEER_DOWN:
    return errc::peer_down;
  case wire::ErrorCode::TIMEOUT:
    return errc::timeout;
  case wire::ErrorCode::INTERNAL:
    return errc::internal;
  }
  refuse("failure.code " + std::to_string(static_cast<unsigned>(code)) + " is not an error code");
}

const std::vector<shape_t>& shard_keys(const wire_keys& keys, std::uint32_t shard,
                                       const char* what) {
  if (shard >= keys.shards.size())
    refuse(std::string(what) + ".shard " + std::to_string(shard) + " is not a shard of the plan ("
           + std::to_string(keys.shards.size()) + " shards)");
  return keys.shards[shard];
}

// The encoding a frame names, and its scales (each finite, >= 0; how many read_tensors checks).
value_encoding read_encoding(wire::Encoding in, capnp::List<float>::Reader scales, const char* what,
                             std::vector<float>& scales_out) {
  value_encoding e;
  switch (in) {
  case wire::Encoding::FLOAT32:
    e = value_encoding::none;
    break;
  case wire::Encoding::FP16:
    e = value_encoding::fp16;
    break;
  case wire::Encoding::BF16:
    e = value_encoding::bf16;
    break;
  case wire::Encoding::TWO_BIT:
    e = value_encoding::two_bit;
    break;
  default:
    refuse(std::string(what) + ".encoding " + std::to_string(static_cast<unsigned>(in))
           + " is not an encoding");
  }
  if (e != value_encoding::two_bit && scales.size() != 0)
    refuse(std::string(what) + " encoded " + to_string(e) + " carries "
           + std::to_string(scales.size()) + " scales, expected 0");
  for (unsigned i = 0; i < scales.size(); ++i) {
    if (!std::isfinite(scales[i]) || scales[i] < 0)
      refuse(std::string(what) + " scale " + std::to_string(i) + " is not a finite number >= 0");
    scales_out.push_back(scales[i]);
  }
  return e;
}

// Keys (ascending, each a key of the shard) and their values, each exactly its key's size:
// float32 as views of the payload, the rest unpacked into tensors from `unpack_into` (2-bit:
// the scales of each key's blocks in order, all of them used).
void read_tensors(const std::shared_ptr<std::vector<char>>& payload,
                  const unpacked_buffers& unpack_into, const std::vector<shape_t>& shapes,
                  capnp::List<std::uint32_t>::Reader keys, capnp::List<capnp::Data>::Reader values,
                  value_encoding encoding, const std::vector<float>& scales, const char* what,
                  std::vector<std::size_t>& keys_out, std::vector<tensor>& values_out) {
  if (keys.size() == 0)
    refuse(std::string(what) + " lists no keys");
  if (keys.size() != values.size())
    refuse(std::string(what) + " lists " + std::to_string(keys.size()) + " keys and "
           + std::to_string(values.size()) + " values");
  if (encoding == value_encoding::two_bit) {
    std::size_t want = 0;
    for (unsigned i = 0; i < keys.size(); ++i)
      if (keys[i] < shapes.size()) // a key outside the shard is refused below, by name
        want += two_bit_scales(static_cast<std::size_t>(shape_numel(shapes[keys[i]])));
    if (scales.size() != want)
      refuse(std::string(what) + " encoded 2bit carries " + std::to_string(scales.size())
             + " scales, expected " + std::to_string(want) + " (one per "
             + std::to_string(two_bit_block) + " values of each key)");
  }
  keys_out.reserve(keys.size());
  values_out.reserve(keys.size());
  std::shared_ptr<void> owner = payload;
  std::size_t first_scale = 0;
  for (unsigned i = 0; i < keys.size(); ++i) {
    const std::uint32_t key = keys[i];
    if (key >= shapes.size())
      refuse(std::string(what) + " key " + std::to_string(key) + " is not a key of its shard ("
             + std::to_string(shapes.size()) + " keys)");
    if (i > 0 && key <= keys_out.back())
      refuse(std::string(what) + " keys are not ascending: " + std::to_string(key) + " after "
             + std::to_string(keys_out.back()));
    const auto data = values[i];
    const auto numel = static_cast<std::size_t>(shape_numel(shapes[key]));
    const auto expected = encoded_bytes(encoding, numel);
    if (data.size() != expected)
      refuse(std::string(what) + " value of key " + std::to_string(key) + " has "
             + std::to_string(data.size()) + " bytes, expected " + std::to_string(expected) + " ("
             + shape_string(shapes[key]) + " "
             + (encoding == value_encoding::none ? "float32" : to_string(encoding)) + ")");
    keys_out.push_back(key);
    if (encoding == value_encoding::none) {
      auto* first = reinterpret_cast<float*>(const_cast<capnp::byte*>(data.begin()));
      values_out.push_back(tensor::view_of(owner, first, shapes[key]));
      continue;
    }
    auto unpacked = unpack_into ? unpack_into(shapes[key]) : tensor::uninitialized(shapes[key]);
    const float* key_scales = scales.data() + first_scale;
    if (encoding == value_encoding::two_bit)
      first_scale += two_bit_scales(numel);
    try {
      decode_values(encoding, key_scales, data.begin(), data.size(), unpacked.data(), numel);
    } catch (const std::invalid_argument& e) {
      refuse(std::string(what) + " value of key " + std::to_string(key) + ": " + e.what());
    }
    values_out.push_back(std::move(unpacked));
  }
}

// A request's time left: at least 1 ms (a request written is still awaited), at most
// max_remaining_ms.
std::uint64_t remaining_of(std::uint64_t ms, const char* what) {
  if (ms < 1 || ms > max_remaining_ms)
    refuse(std::string(what) + ".remainingMs " + std::to_string(ms) + " is outside 1.."
           + std::to_string(max_remaining_ms));
  return ms;
}

push_message read_push(const std::shared_ptr<std::vector<char>>& payload,
                       const unpacked_buffers& unpack_into, const wire_keys& keys,
                       wire::Push::Reader in) {
  push_message m; // a Replicate is read as a Push too: its checks are the same
  m.request = in.getRequest();
  m.shard = in.getShard();
  const auto& shapes = shard_keys(keys, m.shard, "push");
  auto& push = m.push;
  push.step = in.getStep();
  push.epoch_position = in.getEpochPosition();
  push.source = in.getSource();
  push.samples = in.getSamples();
  m.remaining_ms = remaining_of(in.getRemainingMs(), "push");
  if (push.step < 0)
    refuse("push.step " + std::to_string(push.step) + " is negative");
  if (!std::isfinite(push.epoch_position) || push.epoch_position < 0)
    refuse("push.epochPosition " + std::to_string(push.epoch_position)
           + " is not a finite position >= 0");
  if (push.source < 0)
    refuse("push.source " + std::to_string(push.source) + " is negative");
  if (push.samples < 1)
    refuse("push.samples " + std::to_string(push.samples) + " is not positive");
  push.encoding = read_encoding(in.getEncoding(), in.getScales(), "push", push.scales);
  read_tensors(payload, unpack_into, shapes, in.getKeys(), in.getValues(), push.encoding,
               push.scales, "push", push.keys, push.gradients);
  return m;
}

weights_message read_weights(const std::shared_ptr<std::vector<char>>& payload,
                             const unpacked_buffers& unpack_into, const wire_keys& keys,
                             wire::Weights::Reader in) {
  weights_message m;
  m.request = in.getRequest();
  m.shard = in.getShard();
  const auto& shapes = shard_keys(keys, m.shard, "weights");
  m.weights.updates = in.getUpdates();
  m.weights.learning_rate = in.getLearningRate();
  m.weights.before_step = in.getBeforeStep();
  if (m.weights.before_step < -1)
    refuse("weights.beforeStep " + std::to_string(m.weights.before_step) + " is below -1");
  if (m.weights.updates < 0)
    refuse("weights.updates " + std::to_string(m.weights.updates) + " is negative");
  if (!std::isfinite(m.weights.learning_rate))
    refuse("weights.learningRate is not finite");
  m.weights.encoding = read_encoding(in.getEncoding(), in.getScales(), "weights", m.weights.scales);
  read_tensors(payload, unpack_into, shapes, in.getKeys(), in.getValues(), m.weights.encoding,
               m.weights.scales, "weights", m.weights.keys, m.weights.weights);
  return m;
}

wire_message read_body(const std::shared_ptr<std::vector<char>>& payload,
                       const unpacked_buffers& unpack_into, const wire_keys& keys,
                       wire::Frame::Body::Reader body) {
  switch (body.which()) {
  case wire::Frame::Body::HELLO: {
    auto in = body.getHello();
    hello_message m;
    m.role = role_of(in.getRole());
    m.name = text_of(in.getName(), hello_message::max_name_bytes, "hello.name");
    m.challenge = fixed_bytes<nonce_bytes>(in.getNonce(), "hello.nonce");
    m.plan_hash = in.getPlanHash();
    return m;
  }
  case wire::Frame::Body::PROOF:
    return proof_message{fixed_bytes<mac_bytes>(body.getProof().getMac(), "proof.mac")};
  case wire::Frame::Body::PUSH:
    return read_push(payload, unpack_into, keys, body.getPush());
  case wire::Frame::Body::PULL: {
    auto in = body.getPull();
    shard_keys(keys, in.getShard(), "pull");
    require(in.getBeforeStep() >= -1,
            "pull.beforeStep " + std::to_string(in.getBeforeStep()) + " is below -1");
    require(in.getSource() >= 0, "pull.source " + std::to_string(in.getSource()) + " is negative");
    return pull_message{
      in.getRequest(), in.getShard(),      remaining_of(in.getRemainingMs(), "pull"),
      in.getRewind(),  in.getBeforeStep(), in.getSource()};
  }
  case wire::Frame::Body::WEIGHTS:
    return read_weights(payload, unpack_into, keys, body.getWeights());
  case wire::Frame::Body::FAILURE: {
    auto in = body.getFailure();
    return failure_message{
      in.getRequest(), code_of(in.getCode()),
      text_of(in.getMessage(), failure_message::max_text_bytes, "failure.message")};
  }
  case wire::Frame::Body::HEARTBEAT:
    return heartbeat_message{body.getHeartbeat().getSequence()};
  case wire::Frame::Body::SHUTDOWN: {
    auto in = body.getShutdown();
    require(in.getLostNode() >= -1,
            "shutdown.lostNode " + std::to_string(in.getLostNode()) + " is below -1");
    return shutdown_message{
      text_of(in.getReason(), failure_message::max_text_bytes, "shutdown.reason"), in.getFinished(),
      in.getLostNode(), in.getFenced()};
  }
  case wire::Frame::Body::JOIN:
    return read_join(body.getJoin());
  case wire::Frame::Body::ASSIGNMENT:
    return read_assignment(body.getAssignment());
  case wire::Frame::Body::READY:
    return ready_message{body.getReady().getNode(), body.getReady().getPort(),
                         body.getReady().getThreads()};
  case wire::Frame::Body::CONTROL:
    return read_control(body.getControl());
  case wire::Frame::Body::REPORT:
    return read_report(body.getReport());
  case wire::Frame::Body::BATCH_REPORT:
    return read_batch_report(body.getBatchReport());
  case wire::Frame::Body::TRAFFIC_QUERY:
    return traffic_query_message{body.getTrafficQuery().getEpoch()};
  case wire::Frame::Body::TRAFFIC:
    return read_traffic(body.getTraffic());
  case wire::Frame::Body::CHECKPOINT:
    return read_checkpoint_request(body.getCheckpoint());
  case wire::Frame::Body::CHECKPOINT_DONE:
    return read_checkpoint_done(body.getCheckpointDone());
  case wire::Frame::Body::ADOPT:
    return adopt_message{body.getAdopt().getNode(),
                         read_ranks(body.getAdopt().getRanks(), "adopt")};
  case wire::Frame::Body::REPLICATE: {
    auto m = read_push(payload, unpack_into, keys, body.getReplicate());
    return replicate_message{std::move(m)};
  }
  case wire::Frame::Body::REPLICATED:
    return replicated_message{body.getReplicated().getRequest(), body.getReplicated().getUpdates()};
  case wire::Frame::Body::PROMOTE:
    return promote_message{body.getPromote().getNode(), body.getPromote().getServer()};
  case wire::Frame::Body::FENCE: {
    auto in = body.getFence();
    require(in.getTerm() >= 1, "fence.term is 0 (terms begin at 1)");
    return fence_message{in.getNode(), in.getTerm(),
                         text_of(in.getReason(), failure_message::max_text_bytes, "fence.reason")};
  }
  case wire::Frame::Body::LEAVE:
    return leave_message{
      text_of(body.getLeave().getReason(), failure_message::max_text_bytes, "leave.reason")};
  case wire::Frame::Body::RELEASE:
    return release_message{
      body.getRelease().getGranted(),
      text_of(body.getRelease().getReason(), failure_message::max_text_bytes, "release.reason")};
  case wire::Frame::Body::CEDE:
    return cede_message{body.getCede().getNode(), read_ranks(body.getCede().getRanks(), "cede")};
  case wire::Frame::Body::COMMAND:
    return read_command(body.getCommand());
  case wire::Frame::Body::COMMAND_RESULT:
    return read_command_result(body.getCommandResult());
  case wire::Frame::Body::CHANGE:
    return read_change(body.getChange());
  case wire::Frame::Body::CHANGED:
    return changed_message{body.getChanged().getRequest(), body.getChanged().getShards()};
  case wire::Frame::Body::DRAIN:
    return drain_message{
      text_of(body.getDrain().getReason(), failure_message::max_text_bytes, "drain.reason")};
  }
  refuse("frame body " + std::to_string(static_cast<unsigned>(body.which()))
         + " is not a message kind");
}

} // namespace frame_decoding

using namespace frame_decoding;

decode_result decode_payload(std::shared_ptr<std::vector<char>> payload, const wire_keys& keys,
                             const unpacked_buffers& unpack_into) {
  decode_result result;
  try {
    if (!payload || payload->empty() || payload->size() % sizeof(capnp::word) != 0)
      refuse("payload of " + std::to_string(payload ? payload->size() : 0)
             + " bytes is not a positive multiple of 8");
    if (reinterpret_cast<std::uintptr_t>(payload->data()) % alignof(capnp::word) != 0)
      refuse("payload buffer is not 8-byte aligned");
    const kj::ArrayPtr<const capnp::word> words(
      reinterpret_cast<const capnp::word*>(payload->data()), payload->size() / sizeof(capnp::word));
    capnp::ReaderOptions options;
    // Each field is read once, so a well-formed payload traverses about its own size; the
    // slack covers pointers and headers, and a payload built to make readers loop runs out.
    options.traversalLimitInWords = 2 * words.size() + 1024;
    options.nestingLimit = 16;
    capnp::FlatArrayMessageReader reader(words, options);
    if (reader.getEnd() != words.end())
      refuse("payload has " + std::to_string((words.end() - reader.getEnd()) * sizeof(capnp::word))
             + " bytes after its message");
    auto frame = reader.getRoot<wire::Frame>();
    if (frame.getVersion() != wire::PROTOCOL_VERSION)
      refuse("protocol version " + std::to_string(frame.getVersion()) + ", this node speaks "
             + std::to_string(wire::PROTOCOL_VERSION));
    result.term = frame.getTerm();
    result.message = read_body(payload, unpack_into, keys, frame.getBody());
  } catch (const refused& e) {
    result.error = e.what();
  } catch (const std::exception& e) {
    // Cap'n Proto's kj::Exception (thrown as kj::ExceptionImpl, a std::exception).
    result.error = std::string("malformed payload: ") + e.what();
  }
  return result;
}

} // namespace troupe
