// Frames to and from Cap'n Proto (see frame_codec.hpp). Encoding references a tensor's bytes
// from the message builder where Cap'n Proto allows it (8-byte aligned, a whole number of
// words), so a frame's pieces point into the tensors themselves. Decoding reads every field once,
// checks it, and turns each Data field into a tensor view of the payload buffer.
#include <troupe/cluster/frame_codec.hpp>

#include <cmath>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <type_traits>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/io.h>

#include "cluster/frame_body_writer.hpp"
#include "schema/wire.capnp.h"

static_assert(
  __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
  "the wire carries little-endian float32 and headers; a big-endian build needs byte swaps");

namespace troupe {

namespace {

constexpr char magic[4] = {'T', 'R', 'P', 'W'};
void put_u32(std::vector<char>& out, std::uint32_t value) {
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  out.insert(out.end(), bytes, bytes + 4);
}

} // namespace

std::uint32_t wire_protocol_version() {
  return wire::PROTOCOL_VERSION;
}

const char* kind_name(std::size_t index) {
  static constexpr const char* names[] = {
    "hello",     "proof",        "push",           "pull",       "weights",    "failure",
    "heartbeat", "shutdown",     "join",           "assignment", "ready",      "control",
    "report",    "batch report", "traffic query",  "traffic",    "checkpoint", "checkpoint done",
    "adopt",     "replicate",    "replicated",     "promote",    "leave",      "release",
    "cede",      "command",      "command result", "drain",      "change",     "changed",
    "fence"};
  static_assert(std::size(names) == wire_kinds);
  return index < wire_kinds ? names[index] : "unknown";
}

const char* kind_name(const wire_message& message) {
  return kind_name(message.index());
}

struct encoded_frame::owned {
  wire_message message;
  capnp::MallocMessageBuilder builder;
  // The frame header, then the segment table (its count, each segment's size in words,
  // padded to a whole word), as Cap'n Proto's stream format lays them out.
  std::vector<char> head;
};

encoded_frame::encoded_frame() = default;
encoded_frame::encoded_frame(encoded_frame&&) noexcept = default;
encoded_frame& encoded_frame::operator=(encoded_frame&&) noexcept = default;
encoded_frame::~encoded_frame() = default;

encoded_frame encode_frame(wire_message message, std::uint64_t term) {
  encoded_frame frame;
  frame.owned_ = std::make_unique<encoded_frame::owned>();
  auto& own = *frame.owned_;
  own.message = std::move(message);
  frame.kind_ = own.message.index();
  auto root = own.builder.initRoot<wire::Frame>();
  root.setVersion(wire::PROTOCOL_VERSION);
  root.setTerm(term);
  write_frame_body(own.builder, root.initBody(), own.message);
  const auto segments = own.builder.getSegmentsForOutput();
  const std::size_t table_words = (segments.size() + 2) / 2; // count + sizes, in uint32s
  std::size_t payload = table_words * sizeof(capnp::word);
  for (const auto& segment : segments)
    payload += segment.size() * sizeof(capnp::word);
  if (payload > UINT32_MAX)
    throw std::invalid_argument("frame: a message of " + std::to_string(payload)
                                + " bytes exceeds a frame (4 GiB); slice its keys");
  own.head.reserve(frame_header_bytes + table_words * sizeof(capnp::word));
  own.head.insert(own.head.end(), magic, magic + 4);
  put_u32(own.head, static_cast<std::uint32_t>(payload));
  put_u32(own.head, static_cast<std::uint32_t>(segments.size() - 1));
  for (const auto& segment : segments)
    put_u32(own.head, static_cast<std::uint32_t>(segment.size()));
  if (segments.size() % 2 == 0)
    put_u32(own.head, 0);
  frame.pieces_.reserve(segments.size() + 1);
  frame.pieces_.push_back({own.head.data(), own.head.size()});
  for (const auto& segment : segments)
    frame.pieces_.push_back(
      {reinterpret_cast<const char*>(segment.begin()), segment.size() * sizeof(capnp::word)});
  frame.bytes_ = frame_header_bytes + payload;
  return frame;
}

void append_frame(const wire_message& message, std::vector<char>& out, std::uint64_t term) {
  const auto frame = encode_frame(message, term);
  for (const auto& piece : frame.pieces())
    out.insert(out.end(), piece.data, piece.data + piece.size);
}

frame_header_result read_frame_header(const char* header, std::size_t max_payload) {
  frame_header_result result;
  if (std::memcmp(header, magic, 4) != 0) {
    result.error = "not a Troupe frame (the first bytes are not the magic \"TRPW\")";
    return result;
  }
  std::uint32_t length = 0;
  std::memcpy(&length, header + 4, 4);
  if (length == 0 || length % 8 != 0)
    result.error = "frame length " + std::to_string(length) + " is not a positive multiple of 8";
  else if (length > max_payload)
    result.error = "frame of " + std::to_string(length) + " bytes is over the limit of "
                   + std::to_string(max_payload);
  else
    result.payload_bytes = length;
  return result;
}

wire_keys wire_keys_of(const placement_plan& plan) {
  wire_keys keys;
  keys.shards.resize(plan.keys.shards.size());
  for (const auto& key : plan.key_table) {
    auto& shard = keys.shards.at(key.shard);
    if (shard.size() <= key.index)
      shard.resize(key.index + 1);
    shard[key.index] =
      key.slice.whole ? plan.parameters.at(key.slice.slot).shape : shape_t{key.slice.length};
  }
  return keys;
}

} // namespace troupe
