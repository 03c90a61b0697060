// MXNet's RecordIO container (dmlc-core recordio), the framing of `.rec` files: writing.
//
// A file is a sequence of 4-byte aligned frames, all integers little-endian:
//
//   uint32 magic 0xced7230a | uint32 lrecord | payload (length bytes) | zero padding to 4
//
// lrecord's upper 3 bits are the continuation flag (0 whole record, 1 first part, 2 middle
// part, 3 last part), its lower 29 bits the length of this frame's payload. A writer cuts a
// record wherever its payload holds the magic at a 4-byte aligned offset and drops those four
// bytes; a reader joins the parts and puts the magic back between each two. So a frame never
// carries the magic at an aligned offset, which is what lets a reader that lost its place find
// the next record by searching for it. Only the last part is padded (the others have aligned
// lengths by construction). docs/data.md has the whole specification.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace troupe::recordio {

constexpr std::uint32_t magic = 0xced7230aU;
/// Largest payload a frame (and a record) can hold: the 29 bits of lrecord's length.
constexpr std::uint32_t max_length = (1U << 29) - 1;
constexpr std::size_t header_bytes = 8;

/// lrecord's continuation flag.
enum class frame_kind : std::uint32_t { whole = 0, first = 1, middle = 2, last = 3 };

inline std::uint32_t encode_lrecord(frame_kind kind, std::uint32_t length) {
  return (static_cast<std::uint32_t>(kind) << 29) | length;
}
inline frame_kind kind_of(std::uint32_t lrecord) {
  return frame_kind(lrecord >> 29);
}
inline std::uint32_t length_of(std::uint32_t lrecord) {
  return lrecord & max_length;
}
/// `length` rounded up to a multiple of 4.
inline std::uint64_t padded(std::uint64_t length) {
  return (length + 3) & ~std::uint64_t{3};
}

/// Appends `payload` framed as dmlc-core's RecordIOWriter frames it: one whole frame, or parts
/// cut at each aligned magic. Throws std::invalid_argument for a payload above max_length.
void append_record(std::vector<std::uint8_t>& out, const std::uint8_t* payload, std::size_t size);

/// Little-endian loads and stores, independent of the host's byte order and alignment.
inline std::uint32_t load_u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16
         | std::uint32_t(p[3]) << 24;
}
inline void store_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = std::uint8_t(v >> (8 * i));
}

} // namespace troupe::recordio
