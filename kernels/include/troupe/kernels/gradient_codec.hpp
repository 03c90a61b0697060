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
//     residual = v - sent. fp16/bf16 round to nearest even (fp16 saturates at +-65504); 2-bit
//     is MXNet's: +t where v >= t, -t where v <= -t, else 0, t the route's threshold.
//   answers (deltas against what the receivers hold): d = weights - held; sent = Q(d);
//     held += sent. `weights - held` is the server-side residual: what was not sent yet, sent
//     later. 2-bit answers round each element to the nearest of {-s, 0, +s}, s fitted to the
//     tensor's d (Lloyd's iteration from the mean |d|: s is the mean |d| of what is sent;
//     weights move by learning-rate-sized steps, which a fixed gradient threshold would
//     swamp), and s travels with the values.
// Exactness: sent + residual == v in float arithmetic whenever v - sent is representable,
// which holds for fp16/bf16 (Sterbenz: sent is within a factor 2 of v) and for 2-bit while
// |v| < 2^24 ulp(t) (t = 0.5: |v| < 8388608).
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

/// What one route compresses: its pushes, and its answers as deltas. `threshold` is the 2-bit
/// push threshold (MXNet's default 0.5).
struct compression_spec {
  value_encoding pushes = value_encoding::none;
  value_encoding answers = value_encoding::none;
  float threshold = 0.5f;

  bool active() const { return pushes != value_encoding::none || answers != value_encoding::none; }
  bool operator==(const compression_spec& o) const {
    return pushes == o.pushes && answers == o.answers && threshold == o.threshold;
  }
  bool operator!=(const compression_spec& o) const { return !(*this == o); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compression_spec& x) {
  return f(x.pushes, x.answers, x.threshold);
}

/// Parses what `--compression` and a route's `compress = "..."` take: `none`, `fp16`, `bf16`,
/// `2bit`, `2bit:T` (T > 0, finite) compress both directions; `push:C` only the pushes. On
/// failure returns none and sets `why` to a sentence naming the text.
std::optional<compression_spec> parse_compression(const std::string& text, std::string& why);
/// The spec as parse_compression reads it ("2bit:0.25", "push:fp16", "none").
std::string to_string(const compression_spec& spec);

/// Push side: v = in + residual, sent = Q(v), residual = v - sent, for n values. `sent` may
/// alias `in`; `residual` is updated in place.
void quantize_push(value_encoding encoding, float threshold, const float* in, float* residual,
                   float* sent, std::size_t n);

/// Answer side: d = target - held, sent = Q(d), held += sent, for n values; returns the 2-bit
/// scale s used (0 for the other encodings, and for a d of all zeros). Throws
/// std::domain_error when the 2-bit scale is not finite (the weights diverged).
float quantize_answer(value_encoding encoding, const float* target, float* held, float* sent,
                      std::size_t n);

/// Bytes that n values take on the wire in `encoding` (2-bit: 4 values per byte, rounded up).
std::size_t encoded_bytes(value_encoding encoding, std::size_t n);

/// Packs n values into encoded_bytes(encoding, n) bytes at `out`. Every value must be one the
/// encoding represents exactly (for 2-bit: -scale, 0 or +scale); throws std::invalid_argument
/// naming the first that is not (a quantizer was skipped: sending it would change the value).
void encode_values(value_encoding encoding, float scale, const float* values, std::size_t n,
                   unsigned char* out);

/// Unpacks `bytes` bytes into n values. Throws std::invalid_argument when the length is not
/// encoded_bytes(encoding, n), when a 2-bit code is the unused one or a pad bit is set, or
/// when a 2-bit scale is not a finite number >= 0.
void decode_values(value_encoding encoding, float scale, const unsigned char* in, std::size_t bytes,
                   float* values, std::size_t n);

} // namespace troupe
