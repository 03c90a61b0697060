// Quantizers and packers of troupe/kernels/gradient_codec.hpp. Loops over fixed chunks of
// values, the chunks in parallel (oneTBB); fp16 through F16C where the build has it (bit
// arithmetic otherwise), bf16 by bit arithmetic, 2-bit codes packed and unpacked eight at a
// time through AVX2 where the build has it (one at a time otherwise). 2-bit scales are fitted
// block by block, each block inside one chunk, so every result is the same number with any
// number of threads (what BSP's determinism across runs and processes needs). A refused value
// is looked for again in order, so the error names the first one whichever thread saw one.
#include <troupe/kernels/gradient_codec.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <tbb/parallel_for.h>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace troupe {

namespace {

constexpr float fp16_max = 65504.0f;

// Values per chunk: 256 KiB of floats, a multiple of 4 (2-bit codes fill whole bytes), of the
// 2-bit scale blocks and of the fp16 blocks below. A tensor of one chunk or less runs on the
// calling thread.
constexpr std::size_t chunk_values = std::size_t{1} << 16;
static_assert(chunk_values % two_bit_block == 0, "a 2-bit block never straddles two chunks");

std::size_t chunks_of(std::size_t n) {
  return (n + chunk_values - 1) / chunk_values;
}

// f(begin, end) for every chunk of [0, n), in parallel.
template <typename F> void for_chunks(std::size_t n, const F& f) {
  const auto chunks = chunks_of(n);
  if (chunks <= 1) {
    if (n > 0)
      f(std::size_t{0}, n);
    return;
  }
  tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
    f(c * chunk_values, std::min(n, (c + 1) * chunk_values));
  });
}

// IEEE half conversions by bit arithmetic, round to nearest even: every compiler and target
// gives the same bits (_Float16 is not everywhere, e.g. clang 14 on x86).
std::uint16_t fp16_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) // inf, NaN (kept quiet)
    return static_cast<std::uint16_t>(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (magnitude >= 0x477ff000u) // rounds beyond 65504
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) { // below 2^-14: a subnormal half (or zero), in units of 2^-24
    float scaled;
    std::memcpy(&scaled, &magnitude, 4);
    return static_cast<std::uint16_t>(
      sign | static_cast<std::uint32_t>(std::nearbyint(scaled * 16777216.0f)));
  }
  const std::uint32_t mantissa = magnitude & 0x7fffffu;
  std::uint32_t h = ((((magnitude >> 23) - 127 + 15) << 10) | (mantissa >> 13));
  const std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the right rounding too
  return static_cast<std::uint16_t>(sign | h);
}

float from_fp16_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  std::uint32_t x;
  if (exponent == 0) {
    const float v = static_cast<float>(mantissa) * (1.0f / 16777216.0f); // exact
    std::memcpy(&x, &v, 4);
    x |= sign;
  } else if (exponent == 31) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else {
    x = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Bulk conversions: F16C's 8-wide instructions where the build has them (the kernels' x86-64-v3
// baseline), which round the same way (to nearest even, subnormals kept); the bit arithmetic
// above for the rest, and everywhere else.
void to_fp16(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i)
    out[i] = fp16_bits(in[i]);
}

void from_fp16(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i)
    out[i] = from_fp16_bits(in[i]);
}

// out[i] = in[i] rounded to fp16 (saturating at +-65504), in blocks on the stack.
void round_fp16_block(const float* in, float* out, std::size_t n) {
  constexpr std::size_t block = 512;
  float clamped[block];
  std::uint16_t half[block];
  for (std::size_t at = 0; at < n; at += block) {
    const std::size_t m = std::min(block, n - at);
    for (std::size_t i = 0; i < m; ++i) {
      const float v = in[at + i];
      clamped[i] = v > fp16_max ? fp16_max : (v < -fp16_max ? -fp16_max : v); // NaN passes
    }
    to_fp16(clamped, half, m);
    from_fp16(half, out + at, m);
  }
}

// Written as selects, not branches, so the loops over it vectorize.
std::uint16_t bf16_bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; // to nearest even
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;                    // NaN stays a NaN
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

float from_bf16_bits(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

float round_bf16(float v) {
  return from_bf16_bits(bf16_bits(v));
}

// The shortest decimal that reads back as `v` (0.01f prints as 0.01, not 0.00999999978).
std::string value_text(float v) {
  for (int digits = 1; digits <= 9; ++digits) {
    std::ostringstream out;
    out.precision(digits);
    out << v;
    if (std::strtof(out.str().c_str(), nullptr) == v || digits == 9)
      return out.str();
  }
  return {};
}

#ifdef __AVX2__
// Bit k of a byte moved to bit 2k: eight values' "is +scale" (or "is -scale") bits, as a
// movemask gives them, spread to the places of their 2-bit codes in two bytes.
constexpr std::array<std::uint16_t, 256> spread_bits = [] {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte)
    for (unsigned k = 0; k < 8; ++k)
      table[byte] = static_cast<std::uint16_t>(table[byte] | (((byte >> k) & 1u) << (2 * k)));
  return table;
}();

// Packs values [i, e) of one block, 8 at a time, into out (whole bytes: i a multiple of 4);
// returns where it stopped (the last fewer than 8 are the caller's). `bad` gets a bit for a
// value that is none of 0, +plus, -plus (a NaN included), as the scalar code_of does.
std::size_t pack_two_bit_8(const float* values, float plus, std::size_t i, std::size_t e,
                           unsigned char* out, unsigned& bad) {
  const __m256 positive = _mm256_set1_ps(plus), negative = _mm256_set1_ps(-plus),
               zero = _mm256_setzero_ps();
  for (; i + 8 <= e; i += 8) {
    const __m256 v = _mm256_loadu_ps(values + i);
    const auto p =
      static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, positive, _CMP_EQ_OQ)));
    const auto m =
      static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, negative, _CMP_EQ_OQ)));
    const auto nonzero =
      static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_NEQ_UQ)));
    bad |= nonzero & ~(p | m);
    const unsigned codes = spread_bits[p] | (static_cast<unsigned>(spread_bits[m]) << 1);
    out[i / 4] = static_cast<unsigned char>(codes);
    out[i / 4 + 1] = static_cast<unsigned char>(codes >> 8);
  }
  return i;
}

// Unpacks values [i, e) of one block of scale s, 8 at a time (two bytes: a lane's code is its
// 2 bits, the index into {0, s, -s, 0}); returns where it stopped. `threes` gets a bit for the
// unused code 3.
std::size_t unpack_two_bit_8(const unsigned char* in, float s, std::size_t i, std::size_t e,
                             float* values, unsigned& threes) {
  const __m256 table = _mm256_setr_ps(0.0f, s, -s, 0.0f, 0.0f, s, -s, 0.0f);
  const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), three = _mm256_set1_epi32(3);
  __m256i unused = _mm256_setzero_si256();
  for (; i + 8 <= e; i += 8) {
    std::uint16_t bits;
    std::memcpy(&bits, in + i / 4, 2);
    const __m256i codes =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(bits), shifts), three);
    unused = _mm256_or_si256(unused, _mm256_cmpeq_epi32(codes, three));
    _mm256_storeu_ps(values + i, _mm256_permutevar_ps(table, codes));
  }
  threes |= static_cast<unsigned>(!_mm256_testz_si256(unused, unused));
  return i;
}
#endif

[[noreturn]] void not_representable(value_encoding encoding, std::size_t i, float v) {
  throw std::invalid_argument(std::string("value ") + std::to_string(i) + " (" + value_text(v)
                              + ") is not exactly representable in " + to_string(encoding)
                              + ": it was not quantized for this encoding");
}

} // namespace

const char* to_string(value_encoding encoding) {
  switch (encoding) {
  case value_encoding::none:
    return "none";
  case value_encoding::fp16:
    return "fp16";
  case value_encoding::bf16:
    return "bf16";
  case value_encoding::two_bit:
    return "2bit";
  }
  return "unknown";
}

std::optional<compression_spec> parse_compression(const std::string& text, std::string& why) {
  compression_spec spec;
  std::string rest = text;
  bool push_only = false;
  if (rest.rfind("push:", 0) == 0) {
    push_only = true;
    rest = rest.substr(5);
  }
  value_encoding e;
  const auto colon = rest.find(':');
  const std::string name = rest.substr(0, colon);
  if (name == "none")
    e = value_encoding::none;
  else if (name == "fp16")
    e = value_encoding::fp16;
  else if (name == "bf16")
    e = value_encoding::bf16;
  else if (name == "2bit")
    e = value_encoding::two_bit;
  else {
    why = "unknown compression '" + text
          + "' (none, fp16, bf16, 2bit, 2bit:THRESHOLD, 2bit:fit; push:C for pushes only)";
    return std::nullopt;
  }
  const std::string t = colon == std::string::npos ? "" : rest.substr(colon + 1);
  if (colon != std::string::npos && e != value_encoding::two_bit) {
    why = "compression '" + text + "': only 2bit takes a threshold";
    return std::nullopt;
  }
  if (colon != std::string::npos && t == "fit") {
    spec.fitted = true;
  } else if (colon != std::string::npos) {
    char* end = nullptr;
    const float value = t.empty() ? 0.0f : std::strtof(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(value) || value <= 0) {
      why = "compression '" + text
            + "': the 2bit threshold must be a finite number above 0 (or fit), got '" + t + "'";
      return std::nullopt;
    }
    spec.threshold = value;
  }
  if (push_only && e == value_encoding::none) {
    why = "compression '" + text + "': push:none compresses nothing; write none";
    return std::nullopt;
  }
  // Bare 2bit is MXNet's 2-bit as its users meet it, the pushes compressed and the weights
  // pulled whole, with the threshold scaled to the gradients (a scale fitted to each block):
  // a fixed 0.5 swamps an MLP's gradients and the run learns nothing, and compressed answers
  // cost a point of accuracy that a default should not.
  const bool mxnet_default = e == value_encoding::two_bit && colon == std::string::npos;
  if (mxnet_default)
    spec.fitted = true;
  spec.pushes = e;
  spec.answers = push_only || mxnet_default ? value_encoding::none : e;
  return spec;
}

std::string to_string(const compression_spec& spec) {
  const auto e = spec.pushes;
  std::string text = to_string(e);
  if (e == value_encoding::two_bit && spec.fitted)
    text += ":fit";
  else if (e == value_encoding::two_bit && spec.threshold != 0.5f)
    text += ":" + value_text(spec.threshold);
  if (e != value_encoding::none && spec.answers == value_encoding::none)
    return "push:" + text;
  return text;
}

namespace {

// The ternary scale that fits the block x[0, n) (n <= two_bit_block) best: Lloyd's iteration
// from the mean |x|, three rounds (s becomes the mean |x| of the values it sends, those above
// s/2), cut to 16 significant bits (gradient_codec.hpp: what makes fitted error feedback
// exact). A scale as small as the mean alone lets the largest values fall further behind.
float fitted_scale(const float* x, std::size_t n) {
  // Sums in 8 lanes, lane l adding the values at l, l + 8, ... in order, the lanes then added
  // in order: the result is the same number on every run and with or without AVX2 (which fuses
  // each round's two sums into one pass; the compiler vectorized only one sum a pass).
  constexpr std::size_t lanes = 8;
  const std::size_t whole = n - n % lanes;
  auto total_of = [](const float* lane) {
    float total = 0;
    for (std::size_t l = 0; l < lanes; ++l)
      total += lane[l];
    return total;
  };
  float lane[lanes] = {};
#ifdef __AVX2__
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 sum = _mm256_setzero_ps();
  for (std::size_t i = 0; i < whole; i += lanes)
    sum = _mm256_add_ps(sum, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  _mm256_storeu_ps(lane, sum);
#else
  for (std::size_t i = 0; i < whole; i += lanes)
    for (std::size_t l = 0; l < lanes; ++l)
      lane[l] += std::fabs(x[i + l]);
#endif
  for (std::size_t i = whole; i < n; ++i)
    lane[i % lanes] += std::fabs(x[i]);
  float s = total_of(lane) / static_cast<float>(n);
  for (int round = 0; round < 3 && s > 0; ++round) {
    const float half = s / 2;
    float above[lanes] = {}, count[lanes] = {};
#ifdef __AVX2__
    const __m256 limit = _mm256_set1_ps(half), one = _mm256_set1_ps(1.0f);
    __m256 above_sum = _mm256_setzero_ps(), count_sum = _mm256_setzero_ps();
    for (std::size_t i = 0; i < whole; i += lanes) {
      const __m256 magnitude = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i));
      const __m256 sent = _mm256_cmp_ps(magnitude, limit, _CMP_GT_OQ); // a NaN is not
      above_sum = _mm256_add_ps(above_sum, _mm256_and_ps(sent, magnitude));
      count_sum = _mm256_add_ps(count_sum, _mm256_and_ps(sent, one));
    }
    _mm256_storeu_ps(above, above_sum);
    _mm256_storeu_ps(count, count_sum);
#else
    for (std::size_t i = 0; i < whole; i += lanes)
      for (std::size_t l = 0; l < lanes; ++l)
        above[l] += std::fabs(x[i + l]) > half ? std::fabs(x[i + l]) : 0.0f;
    for (std::size_t i = 0; i < whole; i += lanes)
      for (std::size_t l = 0; l < lanes; ++l)
        count[l] += std::fabs(x[i + l]) > half ? 1.0f : 0.0f;
#endif
    for (std::size_t i = whole; i < n; ++i) {
      above[i % lanes] += std::fabs(x[i]) > half ? std::fabs(x[i]) : 0.0f;
      count[i % lanes] += std::fabs(x[i]) > half ? 1.0f : 0.0f;
    }
    const float above_total = total_of(above), count_total = total_of(count);
    s = count_total > 0 ? above_total / count_total : s;
  }
  if (!std::isfinite(s))
    throw std::domain_error("a 2bit scale is not finite: the values are not finite numbers");
  std::uint32_t bits;
  std::memcpy(&bits, &s, 4);
  bits &= ~std::uint32_t{0xff};
  std::memcpy(&s, &bits, 4);
  return s;
}

// sent = the nearest of {-s, 0, +s} to each x, in blocks of two_bit_block from `begin` (a
// multiple of it), s fitted to each block and written to scales[block]. Returns through
// `sent` only; the callers keep their residuals.
void round_fitted(const float* x, float* sent, float* scales, std::size_t begin, std::size_t end) {
  for (std::size_t b = begin; b < end; b += two_bit_block) {
    const std::size_t e = std::min(end, b + two_bit_block);
    const float s = fitted_scale(x + b, e - b), half = s / 2;
    scales[b / two_bit_block] = s;
    for (std::size_t i = b; i < e; ++i)
      sent[i] = (x[i] > half ? s : 0.0f) + (x[i] < -half ? -s : 0.0f);
  }
}

} // namespace

void quantize_push(const compression_spec& spec, const float* in, float* residual, float* sent,
                   float* scales, std::size_t n) {
  const float threshold = spec.threshold;
  if (spec.pushes == value_encoding::two_bit && !spec.fitted)
    std::fill(scales, scales + two_bit_scales(n), threshold);
  for_chunks(n, [&](std::size_t b, std::size_t e) {
    switch (spec.pushes) {
    case value_encoding::none:
      for (std::size_t i = b; i < e; ++i) {
        sent[i] = in[i] + residual[i];
        residual[i] = 0;
      }
      return;
    case value_encoding::fp16:
      // v goes into residual first, then residual = v - Q(v): sent may alias in.
      for (std::size_t i = b; i < e; ++i)
        residual[i] += in[i];
      round_fp16_block(residual + b, sent + b, e - b);
      for (std::size_t i = b; i < e; ++i)
        residual[i] -= sent[i];
      return;
    case value_encoding::bf16:
      for (std::size_t i = b; i < e; ++i) {
        const float v = in[i] + residual[i];
        const float q = round_bf16(v);
        residual[i] = v - q;
        sent[i] = q;
      }
      return;
    case value_encoding::two_bit:
      if (spec.fitted) {
        // v into residual, sent fitted to it, residual = v - sent (sent may alias in)
        for (std::size_t i = b; i < e; ++i)
          residual[i] += in[i];
        round_fitted(residual, sent, scales, b, e);
        for (std::size_t i = b; i < e; ++i)
          residual[i] -= sent[i];
        return;
      }
      for (std::size_t i = b; i < e; ++i) {
        const float v = in[i] + residual[i];
        // two selects (threshold > 0: at most one is not 0), which vectorize where nested
        // conditions would branch on every value
        const float q = (v >= threshold ? threshold : 0.0f) + (v <= -threshold ? -threshold : 0.0f);
        residual[i] = v - q;
        sent[i] = q;
      }
      return;
    }
  });
}

void quantize_answer(value_encoding encoding, const float* target, float* held, float* sent,
                     float* scales, std::size_t n) {
  for_chunks(n, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i)
      sent[i] = target[i] - held[i];
    switch (encoding) {
    case value_encoding::none:
      break;
    case value_encoding::fp16:
      round_fp16_block(sent + b, sent + b, e - b);
      break;
    case value_encoding::bf16:
      for (std::size_t i = b; i < e; ++i)
        sent[i] = round_bf16(sent[i]);
      break;
    case value_encoding::two_bit:
      round_fitted(sent, sent, scales, b, e); // block by block: each block read before written
      break;
    }
    for (std::size_t i = b; i < e; ++i)
      held[i] += sent[i];
  });
}

std::size_t encoded_bytes(value_encoding encoding, std::size_t n) {
  switch (encoding) {
  case value_encoding::none:
    return n * 4;
  case value_encoding::fp16:
  case value_encoding::bf16:
    return n * 2;
  case value_encoding::two_bit:
    return (n + 3) / 4;
  }
  throw std::invalid_argument("unknown value encoding "
                              + std::to_string(static_cast<int>(encoding)));
}

// 2-bit codes: 0 is 0, 1 is +scale, 2 is -scale; 3 is never written.
void encode_values(value_encoding encoding, const float* scales, const float* values, std::size_t n,
                   unsigned char* out) {
  std::atomic<bool> refused{false}; // some value is not representable: found again in order below
  switch (encoding) {
  case value_encoding::none:
    std::memcpy(out, values, n * 4);
    return;
  case value_encoding::fp16:
    for_chunks(n, [&](std::size_t b, std::size_t e) {
      constexpr std::size_t block = 512;
      std::uint16_t half[block];
      float back[block];
      bool bad = false;
      for (std::size_t at = b; at < e; at += block) {
        const std::size_t m = std::min(block, e - at);
        to_fp16(values + at, half, m);
        from_fp16(half, back, m);
        for (std::size_t i = 0; i < m; ++i)
          bad |= back[i] != values[at + i] && !std::isnan(values[at + i]);
        std::memcpy(out + 2 * at, half, 2 * m);
      }
      if (bad)
        refused = true;
    });
    if (refused)
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        float back;
        to_fp16(values + i, &h, 1);
        from_fp16(&h, &back, 1);
        if (back != values[i] && !std::isnan(values[i]))
          not_representable(encoding, i, values[i]);
      }
    return;
  case value_encoding::bf16:
    for_chunks(n, [&](std::size_t b, std::size_t e) {
      bool bad = false;
      for (std::size_t i = b; i < e; ++i) {
        const auto h = bf16_bits(values[i]);
        bad |= from_bf16_bits(h) != values[i] && !std::isnan(values[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      if (bad)
        refused = true;
    });
    if (refused)
      for (std::size_t i = 0; i < n; ++i)
        if (from_bf16_bits(bf16_bits(values[i])) != values[i] && !std::isnan(values[i]))
          not_representable(encoding, i, values[i]);
    return;
  case value_encoding::two_bit: {
    // Codes without branches; a value that is none of 0, +scale, -scale of its block is
    // looked for only once one was seen. A block's scale of 0 matches no value but 0.
    auto plus_of = [scales](std::size_t block) {
      const float s = scales[block];
      return s > 0 ? s : std::numeric_limits<float>::quiet_NaN();
    };
    auto code_of = [](float v, float plus, unsigned& bad) {
      const unsigned code =
        static_cast<unsigned>(v == plus) | (static_cast<unsigned>(v == -plus) << 1);
      bad |= static_cast<unsigned>(code == 0 && v != 0);
      return code;
    };
    // chunks and blocks of values are whole bytes (multiples of 4); the last byte may hold
    // fewer than 4, the rest of it zero
    for_chunks(n, [&](std::size_t b, std::size_t e) {
      unsigned bad = 0;
      for (std::size_t block_begin = b; block_begin < e; block_begin += two_bit_block) {
        const std::size_t block_end = std::min(e, block_begin + two_bit_block);
        const float plus = plus_of(block_begin / two_bit_block);
        std::size_t i = block_begin;
#ifdef __AVX2__
        i = pack_two_bit_8(values, plus, i, block_end, out, bad);
#endif
        for (; i + 4 <= block_end; i += 4) {
          const float* v = values + i;
          out[i / 4] = static_cast<unsigned char>(
            code_of(v[0], plus, bad) | (code_of(v[1], plus, bad) << 2)
            | (code_of(v[2], plus, bad) << 4) | (code_of(v[3], plus, bad) << 6));
        }
        if (i < block_end) {
          unsigned last = 0;
          for (; i < block_end; ++i)
            last |= code_of(values[i], plus, bad) << (2 * (i % 4));
          out[(block_end - 1) / 4] = static_cast<unsigned char>(last);
        }
      }
      if (bad)
        refused = true;
    });
    if (refused)
      for (std::size_t i = 0; i < n; ++i) {
        const float plus = plus_of(i / two_bit_block);
        if (values[i] != 0 && values[i] != plus && values[i] != -plus)
          not_representable(encoding, i, values[i]);
      }
    return;
  }
  }
  throw std::invalid_argument("unknown value encoding "
                              + std::to_string(static_cast<int>(encoding)));
}

void decode_values(value_encoding encoding, const float* scales, const unsigned char* in,
                   std::size_t bytes, float* values, std::size_t n) {
  const std::size_t want = encoded_bytes(encoding, n);
  if (bytes != want)
    throw std::invalid_argument(std::to_string(bytes) + " bytes for " + std::to_string(n)
                                + " values in " + to_string(encoding) + ", which take "
                                + std::to_string(want));
  switch (encoding) {
  case value_encoding::none:
    std::memcpy(values, in, n * 4);
    return;
  case value_encoding::fp16:
    for_chunks(n, [&](std::size_t b, std::size_t e) {
      constexpr std::size_t block = 512;
      std::uint16_t half[block];
      for (std::size_t at = b; at < e; at += block) {
        const std::size_t m = std::min(block, e - at);
        std::memcpy(half, in + 2 * at, 2 * m);
        from_fp16(half, values + at, m);
      }
    });
    return;
  case value_encoding::bf16:
    for_chunks(n, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        std::uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        values[i] = from_bf16_bits(h);
      }
    });
    return;
  case value_encoding::two_bit: {
    for (std::size_t block = 0; block < two_bit_scales(n); ++block)
      if (!std::isfinite(scales[block]) || scales[block] < 0)
        throw std::invalid_argument(
          "the 2bit scale of values " + std::to_string(block * two_bit_block) + ".. is "
          + value_text(scales[block]) + " (must be a finite number >= 0)");
    std::atomic<bool> unused_code{false};
    for_chunks(n, [&](std::size_t b, std::size_t e) {
      unsigned threes = 0;
      for (std::size_t block_begin = b; block_begin < e; block_begin += two_bit_block) {
        const float scale = scales[block_begin / two_bit_block];
        const float table[4] = {0.0f, scale, -scale, 0.0f};
        const std::size_t block_end = std::min(e, block_begin + two_bit_block);
        std::size_t i = block_begin;
#ifdef __AVX2__
        i = unpack_two_bit_8(in, scale, i, block_end, values, threes);
#endif
        for (; i < block_end; ++i) {
          const unsigned code = (in[i / 4] >> (2 * (i % 4))) & 3u;
          threes |= static_cast<unsigned>(code == 3);
          values[i] = table[code];
        }
      }
      if (threes)
        unused_code = true;
    });
    if (unused_code)
      for (std::size_t i = 0; i < n; ++i)
        if (((in[i / 4] >> (2 * (i % 4))) & 3u) == 3)
          throw std::invalid_argument("2bit value " + std::to_string(i) + " has the unused code 3");
    if (n % 4 != 0 && (in[n / 4] >> (2 * (n % 4))) != 0)
      throw std::invalid_argument("2bit padding after value " + std::to_string(n - 1)
                                  + " is not zero");
    return;
  }
  }
  throw std::invalid_argument("unknown value encoding "
                              + std::to_string(static_cast<int>(encoding)));
}

} // namespace troupe
