// Gradient compression: the value encodings a route can use (fp16, bf16, MXNet's 2-bit), the
// quantizers that pick what is sent, and the packing of sent values into wire bytes.
//
// Two halves, kept apart on purpose. Quantizing decides the values (floats that the encoding
// represents exactly) and runs where the values are produced, in every run, one process or
// many; packing turns those floats into 2 bytes or 2 bits each and back, losslessly, and runs
// only where a message crosses a process boundary. So a one-process run and a cluster run
// install bit-identical weights: the wire never rounds anything.
//
//   pushes (error feedback at the sender): v = gradient + residual; sent = Q(v);
//     residual = v - sent. fp16/bf16 round to nearest even (fp16 saturates at +-65504). 2-bit
//     comes two ways: MXNet's threshold (`2bit:T`): +t where v >= t, -t where v <= -t, else 0;
//     or fitted (`2bit:fit`): each block of two_bit_block values rounds to the nearest of
//     {-s, 0, +s}, s fitted to that block's v (below). A fixed threshold clips what is larger
//     (sent as t, the rest waits) and sends what is smaller rarely and coarsely; a fitted scale
//     follows each block's size, which is why it trains closer to no compression.
//   answers (deltas against what the receivers hold): d = weights - held; sent = Q(d);
//     held += sent. `weights - held` is the server-side residual: what was not sent yet, sent
//     later. 2-bit answers are always fitted per block (weights move by learning-rate-sized
//     steps, which a gradient threshold would swamp).
//   fitting: Lloyd's iteration from the block's mean |x|, three rounds (s is the mean |x| of
//     the values it sends, those above s/2), then cut to 16 significant bits. The scales
//     travel with the values, one per block.
// Exactness: sent + residual == v in float arithmetic whenever v - sent is representable,
// which holds for fp16/bf16 (Sterbenz: sent is within a factor 2 of v), for threshold 2-bit
// while |v| <= 2 t (Sterbenz), or t is a power of two and |v| < 2^24 t, and for fitted 2-bit
// always: |v| <= 256 s in a block of 256 (s is the mean of the values sent, the largest among
// them), and a 16-bit s is a multiple of ulp(v) for every |v| < 2^9 s.
//
// Thread-safety: pure functions over caller-owned buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

enum class value_encoding : std::uint8_t { none = 0, fp16 = 1, bf16 = 2, two_bit = 3 };

/// "none", "fp16", "bf16", "2bit".
const char* to_string(value_encoding encoding);

/// Values per 2-bit scale: a tensor's values in blocks of this many (the last may be shorter),
/// each block with its own scale on the wire.
constexpr std::size_t two_bit_block = 256;

/// The scales n values take in 2-bit: one per block, ceil(n / two_bit_block).
constexpr std::size_t two_bit_scales(std::size_t n) {
  return (n + two_bit_block - 1) / two_bit_block;
}

/// What one route compresses: its pushes, and its answers as deltas. 2-bit pushes use
/// `threshold` (MXNet's, default 0.5) unless `fitted`, which fits a scale to every block.
struct compression_spec {
  value_encoding pushes = value_encoding::none;
  value_encoding answers = value_encoding::none;
  float threshold = 0.5f;
  bool fitted = false;

  bool active() const { return pushes != value_encoding::none || answers != value_encoding::none; }
  bool operator==(const compression_spec& o) const {
    return pushes == o.pushes && answers == o.answers && threshold == o.threshold
           && fitted == o.fitted;
  }
  bool operator!=(const compression_spec& o) const { return !(*this == o); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compression_spec& x) {
  return f(x.pushes, x.answers, x.threshold, x.fitted);
}

/// Parses what `--compression` and a route's `compress = "..."` take: `none`, `fp16`, `bf16`,
/// `2bit`, `2bit:T` (T > 0, finite), `2bit:fit` compress both directions; `push:C` only the
/// pushes. On failure returns none and sets `why` to a sentence naming the text.
std::optional<compression_spec> parse_compression(const std::string& text, std::string& why);
/// The spec as parse_compression reads it ("2bit:0.25", "push:2bit:fit", "push:fp16", "none").
std::string to_string(const compression_spec& spec);

/// Push side: v = in + residual, sent = Q(v), residual = v - sent, for n values, quantized as
/// `spec.pushes` says. `sent` may alias `in`; `residual` is updated in place. For 2-bit,
/// `scales` receives two_bit_scales(n) scales (the threshold in each, or the fitted ones);
/// otherwise it is not touched (may be null).
void quantize_push(const compression_spec& spec, const float* in, float* residual, float* sent,
                   float* scales, std::size_t n);

/// Answer side: d = target - held, sent = Q(d), held += sent, for n values. For 2-bit,
/// `scales` receives the two_bit_scales(n) fitted scales (0 for a block of d all zero);
/// otherwise it is not touched (may be null). Throws std::domain_error when a 2-bit scale is
/// not finite (the weights diverged).
void quantize_answer(value_encoding encoding, const float* target, float* held, float* sent,
                     float* scales, std::size_t n);

/// Bytes that n values take on the wire in `encoding` (2-bit: 4 values per byte, rounded up;
/// their scales travel apart).
std::size_t encoded_bytes(value_encoding encoding, std::size_t n);

/// Packs n values into encoded_bytes(encoding, n) bytes at `out`. Every value must be one the
/// encoding represents exactly (for 2-bit: -scale, 0 or +scale of its block, `scales` holding
/// two_bit_scales(n)); throws std::invalid_argument naming the first that is not (a quantizer
/// was skipped: sending it would change the value).
void encode_values(value_encoding encoding, const float* scales, const float* values, std::size_t n,
                   unsigned char* out);

/// Unpacks `bytes` bytes into n values (2-bit: `scales` holds two_bit_scales(n)). Throws
/// std::invalid_argument when the length is not encoded_bytes(encoding, n), when a 2-bit code
/// is the unused one or a pad bit is set, or when a 2-bit scale is not a finite number >= 0.
void decode_values(value_encoding encoding, const float* scales, const unsigned char* in,
                   std::size_t bytes, float* values, std::size_t n);

} // namespace troupe
