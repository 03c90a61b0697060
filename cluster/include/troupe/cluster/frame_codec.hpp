// Encoding and checked decoding of the frames nodes exchange (cluster/schema/wire.capnp,
// docs/protocol.md).
//
// A frame is an 8-byte header (the magic "TRPW", then the payload length as a little-endian
// uint32) and a payload: one Cap'n Proto message. The header lets a receiver refuse garbage
// and oversized frames before it allocates anything, and lets it read each payload into a
// buffer of exactly its size, where the decoder then reads it in place.
//
// Copies: encode_frame copies no tensor bytes: its pieces point into the tensors (8-byte
// aligned, whole words; smaller odd-sized values are copied into the message), and the frame
// keeps them alive until written (a connection writes the pieces with one writev).
// append_frame copies the pieces into a buffer (tests, fuzz seeds). decode_payload copies
// none: tensors are views into the payload buffer, which they keep alive; values of a
// compressed encoding are unpacked into buffers of their own (a channel's reused ones).
//
// Decoding trusts nothing: every message is checked (version, enum values, sizes, shard and key
// indices, value byte counts against the receiver's key table, finite numbers) and a message
// that fails any check is refused with a text naming the field. Cap'n Proto's own bounds
// errors on a malformed payload become the same kind of refusal.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <troupe/cluster/wire_messages.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

constexpr std::size_t frame_header_bytes = 8;
/// The default cap on one frame's payload; a connection refuses larger frames.
constexpr std::size_t default_max_frame_bytes = std::size_t{1} << 30;

/// The most a push or weights frame of `keys` keys adds to its values' bytes: the header, the
/// segment table, the message's structs and pointers, and padding of each value to 8 bytes.
/// Traffic per step is values + this per frame (tests/cluster: frame_codec_test, channel_test).
constexpr std::size_t frame_overhead_bound(std::size_t keys) {
  return 136 + 32 * keys;
}

/// One contiguous piece of an encoded frame.
struct frame_piece {
  const char* data = nullptr;
  std::size_t size = 0;
};

/// A frame ready to be written: its pieces, in order, are the frame header with Cap'n Proto's
/// segment table, then the message's segments, whose tensor values point into the message's
/// own tensors. The frame owns the message, so those bytes stay alive (and, tensors being
/// copy-on-write, unchanged) until the frame is destroyed. Move-only.
class encoded_frame {
public:
  encoded_frame();
  encoded_frame(encoded_frame&&) noexcept;
  encoded_frame& operator=(encoded_frame&&) noexcept;
  ~encoded_frame();

  const std::vector<frame_piece>& pieces() const { return pieces_; }
  /// Header and payload bytes: what the frame adds to a connection's traffic.
  std::size_t bytes() const { return bytes_; }
  /// The message kind (wire_message's index), for traffic counts.
  std::size_t kind() const { return kind_; }

private:
  friend encoded_frame encode_frame(wire_message message, std::uint64_t term);
  struct owned; // the message, its builder and the header bytes
  std::unique_ptr<owned> owned_;
  std::vector<frame_piece> pieces_;
  std::size_t bytes_ = 0;
  std::size_t kind_ = 0;
};

/// Encodes `message` as one frame (header and payload) without copying its tensors, stamped
/// with the sender's `term` (node_fences.hpp; 0: none yet). Throws std::invalid_argument for a
/// message no decoder would accept (a value whose byte count exceeds a Data field, a name or
/// text over its limit).
encoded_frame encode_frame(wire_message message, std::uint64_t term = 0);

/// Appends `message` as one frame (header and payload) to `out` (encode_frame's pieces,
/// copied); throws as encode_frame does.
void append_frame(const wire_message& message, std::vector<char>& out, std::uint64_t term = 0);

/// The payload length a frame header announces, or an error text: a wrong magic ("not a
/// Troupe frame"), a length that is not a multiple of 8, zero, or above `max_payload`.
struct frame_header_result {
  std::size_t payload_bytes = 0;
  std::string error; ///< empty on success
};
frame_header_result read_frame_header(const char* header, std::size_t max_payload);

/// A decoded message, or why the payload was refused.
struct decode_result {
  wire_message message;
  std::uint64_t term = 0; ///< the sender's term, as its frame says
  std::string error;      ///< empty on success
  bool ok() const { return error.empty(); }
};

/// Where decode_payload unpacks the values of a compressed encoding (fp16, bf16, 2bit): a
/// float32 CPU tensor of the shape asked, whose contents it overwrites. Empty: a new tensor
/// each time (tensor::uninitialized).
using unpacked_buffers = std::function<tensor(const shape_t&)>;

/// Decodes one payload. `payload` must be 8-byte aligned (a std::vector's storage is); tensors
/// in the result are views into it, or, in a compressed encoding, tensors from `unpack_into`.
/// Pushes and weights are checked against `keys`.
decode_result decode_payload(std::shared_ptr<std::vector<char>> payload, const wire_keys& keys,
                             const unpacked_buffers& unpack_into = {});

/// The shape of every shard's keys in `plan` (a whole key keeps its parameter's shape, a slice
/// is one-dimensional), as decode_payload checks them.
wire_keys wire_keys_of(const placement_plan& plan);

} // namespace troupe
