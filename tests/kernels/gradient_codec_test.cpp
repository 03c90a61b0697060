// The gradient codec: spec parsing, error feedback (sent + residual is the input, exactly),
// answer deltas (held follows the target), lossless packing of quantized values in every
// encoding, and the decoder's refusals (wrong length, unused code, pad bits, bad scale,
// values that were never quantized).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <tbb/global_control.h>

#include <troupe/kernels/gradient_codec.hpp>

using namespace troupe;

namespace {

// Gradient-like values spanning many magnitudes, with exact zeros and both signs.
std::vector<float> mixed_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 12);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = i % 17 == 0 ? 0.0f : normal(rng) * std::ldexp(1.0f, exponent(rng));
  return v;
}

const value_encoding all_lossy[] = {value_encoding::fp16, value_encoding::bf16,
                                    value_encoding::two_bit};

// A push spec: `e` both ways, 2-bit at threshold t or fitted.
compression_spec spec_of(value_encoding e, float t = 0.5f, bool fitted = false) {
  compression_spec spec;
  spec.pushes = spec.answers = e;
  spec.threshold = t;
  spec.fitted = fitted;
  return spec;
}

// Every lossy push quantizer: fp16, bf16, 2-bit at threshold 0.5, 2-bit fitted.
std::vector<compression_spec> lossy_pushes() {
  return {spec_of(value_encoding::fp16), spec_of(value_encoding::bf16),
          spec_of(value_encoding::two_bit), spec_of(value_encoding::two_bit, 0.5f, true)};
}

// The scales a 2-bit quantizer of n values writes (none for the other encodings).
std::vector<float> scales_for(value_encoding e, std::size_t n) {
  return std::vector<float>(e == value_encoding::two_bit ? two_bit_scales(n) : 0, -1.0f);
}

} // namespace

TEST_CASE("parse_compression reads every form and names what is wrong", "[gradient_codec]") {
  std::string why;
  auto two = parse_compression("2bit", why); // MXNet's default: pushes only, scaled
  REQUIRE(two);
  CHECK(two->pushes == value_encoding::two_bit);
  CHECK(two->answers == value_encoding::none);
  CHECK(two->fitted);
  CHECK(to_string(*two) == "push:2bit:fit");
  auto fixed = parse_compression("2bit:0.5", why);
  REQUIRE(fixed);
  CHECK(fixed->answers == value_encoding::two_bit);
  CHECK_FALSE(fixed->fitted);
  CHECK(fixed->threshold == 0.5f);
  auto push = parse_compression("push:2bit:0.25", why);
  REQUIRE(push);
  CHECK(push->pushes == value_encoding::two_bit);
  CHECK(push->answers == value_encoding::none);
  CHECK(push->threshold == 0.25f);
  CHECK(to_string(*push) == "push:2bit:0.25");
  auto half = parse_compression("fp16", why);
  REQUIRE(half);
  CHECK(half->answers == value_encoding::fp16);
  CHECK(to_string(*half) == "fp16");
  CHECK_FALSE(push->fitted);
  auto fit = parse_compression("push:2bit:fit", why);
  REQUIRE(fit);
  CHECK(fit->pushes == value_encoding::two_bit);
  CHECK(fit->answers == value_encoding::none);
  CHECK(fit->fitted);
  CHECK(to_string(*fit) == "push:2bit:fit");
  auto both_fit = parse_compression("2bit:fit", why);
  REQUIRE(both_fit);
  CHECK(both_fit->answers == value_encoding::two_bit);
  CHECK(to_string(*both_fit) == "2bit:fit");
  CHECK(*both_fit != *two);
  auto none = parse_compression("none", why);
  REQUIRE(none);
  CHECK_FALSE(none->active());
  for (const char* bad : {"3bit", "fp16:2", "2bit:0", "2bit:-1", "2bit:x", "2bit:", "push:none",
                          "2bit:inf", "fp16:fit", "2bit:fits", "2bit:fit:0.5"}) {
    INFO(bad);
    why.clear();
    CHECK_FALSE(parse_compression(bad, why));
    CHECK(why.find(bad) != std::string::npos);
  }
}

TEST_CASE("push quantizers keep what they did not send: sent + residual equals the input exactly",
          "[gradient_codec]") {
  const std::size_t n = 4099; // 16 whole blocks and a short one
  for (const auto& spec : lossy_pushes()) {
    INFO(to_string(spec));
    auto grad = mixed_values(n, 7);
    auto residual = mixed_values(n, 8);
    for (auto& r : residual)
      r *= 0.01f;
    std::vector<float> input(n), sent(n), res = residual;
    auto scales = scales_for(spec.pushes, n);
    for (std::size_t i = 0; i < n; ++i)
      input[i] = grad[i] + residual[i];
    quantize_push(spec, grad.data(), res.data(), sent.data(), scales.data(), n);
    REQUIRE(sent.size() == n);
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) {
      INFO("value " << i << ": " << input[i]);
      REQUIRE(sent[i] + res[i] == input[i]);
      nonzero += sent[i] != 0 ? 1 : 0;
    }
    if (spec.pushes != value_encoding::two_bit) {
      CHECK(nonzero > n / 10); // something was sent
      continue;
    }
    REQUIRE(scales.size() == 17);
    // Each block sends something: MXNet's threshold the values above it (many, at these
    // magnitudes); a fitted block at least its largest value (its scale is never above it).
    for (std::size_t block = 0; block < 17; ++block) {
      std::size_t sent_here = 0;
      for (std::size_t i = block * two_bit_block; i < std::min(n, (block + 1) * two_bit_block); ++i)
        sent_here += sent[i] != 0 ? 1 : 0;
      INFO("block " << block);
      CHECK(sent_here > 0);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const float s = scales[i / two_bit_block];
      REQUIRE((sent[i] == 0 || sent[i] == s || sent[i] == -s));
    }
    if (!spec.fitted)
      for (float s : scales)
        REQUIRE(s == 0.5f);
  }
}

TEST_CASE("a fitted 2-bit scale follows each block's size, a threshold does not",
          "[gradient_codec]") {
  // Block 0 holds values of about 1e-3, block 1 of about 10, block 2 only zeros.
  const std::size_t n = 3 * two_bit_block;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> grad(n, 0.0f);
  for (std::size_t i = 0; i < two_bit_block; ++i) {
    grad[i] = 1e-3f * normal(rng);
    grad[two_bit_block + i] = 10.0f * normal(rng);
  }
  auto share_sent = [&](const std::vector<float>& sent, std::size_t block) {
    std::size_t k = 0;
    for (std::size_t i = block * two_bit_block; i < (block + 1) * two_bit_block; ++i)
      k += sent[i] != 0 ? 1 : 0;
    return static_cast<double>(k) / two_bit_block;
  };
  std::vector<float> residual(n, 0.0f), sent(n), scales(3);
  quantize_push(spec_of(value_encoding::two_bit, 0.5f, true), grad.data(), residual.data(),
                sent.data(), scales.data(), n);
  CHECK(scales[0] > 3e-4f);
  CHECK(scales[0] < 5e-3f);
  CHECK(scales[1] > 3.0f);
  CHECK(scales[1] < 50.0f);
  CHECK(scales[2] == 0.0f);
  CHECK(share_sent(sent, 0) > 0.25); // about half of a normal block goes, every step
  CHECK(share_sent(sent, 1) > 0.25);
  CHECK(share_sent(sent, 2) == 0.0);
  double left = 0; // what the large block keeps back: less than its scale per value
  for (std::size_t i = two_bit_block; i < 2 * two_bit_block; ++i)
    left = std::max(left, static_cast<double>(std::fabs(residual[i])));
  CHECK(left < 2 * scales[1]);
  // MXNet's threshold of 0.5 sends nothing of block 0 and clips block 1 to 0.5 a value.
  std::fill(residual.begin(), residual.end(), 0.0f);
  quantize_push(spec_of(value_encoding::two_bit, 0.5f), grad.data(), residual.data(), sent.data(),
                scales.data(), n);
  CHECK(share_sent(sent, 0) == 0.0);
  double kept = 0;
  for (std::size_t i = two_bit_block; i < 2 * two_bit_block; ++i)
    kept = std::max(kept, static_cast<double>(std::fabs(residual[i])));
  CHECK(kept > 5.0);
}

namespace {

// The fitted scale by its definition (gradient_codec.hpp), one value at a time: Lloyd's
// iteration from the block's mean |x|, three rounds, each sum in 8 lanes (value i into lane
// i % 8, in order; the lanes added in order), then cut to 16 significant bits.
float scale_by_definition(const float* x, std::size_t n) {
  auto sum = [&](auto f) {
    float lane[8] = {};
    for (std::size_t i = 0; i < n; ++i)
      lane[i % 8] += f(x[i]);
    float total = 0;
    for (float v : lane)
      total += v;
    return total;
  };
  float s = sum([](float v) { return std::fabs(v); }) / static_cast<float>(n);
  for (int round = 0; round < 3 && s > 0; ++round) {
    const float half = s / 2;
    const float above = sum([half](float v) { return std::fabs(v) > half ? std::fabs(v) : 0.0f; });
    const float count = sum([half](float v) { return std::fabs(v) > half ? 1.0f : 0.0f; });
    s = count > 0 ? above / count : s;
  }
  std::uint32_t bits;
  std::memcpy(&bits, &s, 4);
  bits &= ~std::uint32_t{0xff};
  std::memcpy(&s, &bits, 4);
  return s;
}

} // namespace

// The codec fits its scales in fused vector passes: the same bits as the definition, for
// whole blocks and a short last one, over gradients of every magnitude.
TEST_CASE("fitted 2-bit scales are the definition's numbers, bit for bit", "[gradient_codec]") {
  for (std::size_t n : {std::size_t{5}, std::size_t{256}, std::size_t{300}, std::size_t{4099}}) {
    INFO("n=" << n);
    const auto grad = mixed_values(n, static_cast<unsigned>(n));
    std::vector<float> residual(n, 0.0f), sent(n), scales(two_bit_scales(n), -1.0f);
    quantize_push(spec_of(value_encoding::two_bit, 0.5f, true), grad.data(), residual.data(),
                  sent.data(), scales.data(), n);
    REQUIRE(scales.size() == (n + two_bit_block - 1) / two_bit_block);
    for (std::size_t b = 0; b < scales.size(); ++b) {
      const std::size_t first = b * two_bit_block, count = std::min(two_bit_block, n - first);
      const float expected = scale_by_definition(grad.data() + first, count);
      CHECK(expected > 0);
      CHECK(std::memcmp(&scales[b], &expected, 4) == 0);
    }
  }
  // A value exactly at half the scale is not sent: |x| of 1 and 3 fit 3 (mean 2, half 1), not 2.
  const std::vector<float> ties = {1, -3, -1, 3, 1, 3, -1, -3, 1, -3, -1, 3, 1, 3, -1, -3};
  std::vector<float> residual(ties.size(), 0.0f), sent(ties.size()), scale(1);
  quantize_push(spec_of(value_encoding::two_bit, 0.5f, true), ties.data(), residual.data(),
                sent.data(), scale.data(), ties.size());
  CHECK(scale_by_definition(ties.data(), ties.size()) == 3.0f);
  CHECK(scale[0] == 3.0f);
}

TEST_CASE("2-bit error feedback sends, over steps, what a constant gradient adds up to",
          "[gradient_codec]") {
  // A gradient of 0.2 below a threshold of 0.5: nothing goes until the residual passes 0.5.
  std::vector<float> g{0.2f, -0.2f, 0.0f}, residual(3, 0.0f), sent(3);
  std::vector<float> total(3, 0.0f);
  std::vector<float> first;
  std::vector<float> scales(1);
  for (int step = 0; step < 10; ++step) {
    quantize_push(spec_of(value_encoding::two_bit), g.data(), residual.data(), sent.data(),
                  scales.data(), 3);
    if (step == 0)
      first = sent;
    for (int i = 0; i < 3; ++i)
      total[i] += sent[i];
  }
  CHECK(first == std::vector<float>{0, 0, 0});
  // 10 steps of 0.2 are 2.0: four sends of 0.5, residual ~0.
  CHECK(total[0] == 2.0f);
  CHECK(total[1] == -2.0f);
  CHECK(total[2] == 0.0f);
  CHECK(std::fabs(residual[0]) < 1e-5f);
}

TEST_CASE("answer deltas move what receivers hold toward the weights", "[gradient_codec]") {
  const std::size_t n = 1000;
  for (auto e : all_lossy) {
    INFO(to_string(e));
    auto target = mixed_values(n, 3);
    for (auto& v : target)
      v = std::tanh(v); // weights-sized
    std::vector<float> held(n, 0.0f), sent(n);
    double first_gap = 0, last_gap = 0;
    for (std::size_t i = 0; i < n; ++i)
      first_gap += std::fabs(target[i] - held[i]);
    for (int step = 0; step < 40; ++step) {
      std::vector<float> before = held;
      auto scales = scales_for(e, n);
      quantize_answer(e, target.data(), held.data(), sent.data(), scales.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        REQUIRE(held[i] == before[i] + sent[i]); // held is what a receiver computes
      if (e == value_encoding::two_bit) {
        REQUIRE(scales.size() == 4);
        for (std::size_t i = 0; i < n; ++i) {
          const float s = scales[i / two_bit_block];
          REQUIRE(s >= 0);
          REQUIRE((sent[i] == 0 || sent[i] == s || sent[i] == -s));
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      last_gap += std::fabs(target[i] - held[i]);
    CHECK(last_gap < first_gap * 0.05);
  }
}

TEST_CASE("quantized values cross the wire bit for bit in every encoding", "[gradient_codec]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{1001}}) {
    for (auto spec : lossy_pushes()) {
      INFO(to_string(spec) << " n=" << n);
      const auto e = spec.pushes;
      spec.threshold = 0.25f;
      auto grad = mixed_values(n, 11);
      std::vector<float> residual(n, 0.0f), sent(n);
      auto scales = scales_for(e, n);
      quantize_push(spec, grad.data(), residual.data(), sent.data(), scales.data(), n);
      std::vector<unsigned char> bytes(encoded_bytes(e, n));
      encode_values(e, scales.data(), sent.data(), n, bytes.data());
      std::vector<float> back(n, 99.0f);
      decode_values(e, scales.data(), bytes.data(), bytes.size(), back.data(), n);
      REQUIRE(back.size() == sent.size());
      CHECK(std::memcmp(back.data(), sent.data(), n * 4) == 0);
    }
  }
  std::vector<float> plain = mixed_values(5, 12), back(5);
  std::vector<unsigned char> bytes(encoded_bytes(value_encoding::none, 5));
  encode_values(value_encoding::none, nullptr, plain.data(), 5, bytes.data());
  decode_values(value_encoding::none, nullptr, bytes.data(), bytes.size(), back.data(), 5);
  CHECK(std::memcmp(back.data(), plain.data(), 5 * 4) == 0);
  CHECK(encoded_bytes(value_encoding::two_bit, 1001) == 251);
  CHECK(two_bit_scales(1001) == 4);
  CHECK(two_bit_scales(256) == 1);
  CHECK(two_bit_scales(0) == 0);
  CHECK(encoded_bytes(value_encoding::fp16, 1001) == 2002);
}

// The 2-bit packing, byte by byte against its definition (value i's code at bits 2*(i%4) of
// byte i/4; 1 is +scale, 2 is -scale), at lengths around the 8 values the AVX2 path packs at
// once and across blocks of different scales; -0 packs as 0. Unpacking gives the values back.
TEST_CASE("2-bit codes sit at bits 2*(i%4) of byte i/4 at every length and block",
          "[gradient_codec]") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> code(0, 2);
  for (std::size_t n :
       {std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{15}, std::size_t{16},
        std::size_t{17}, std::size_t{255}, std::size_t{256}, std::size_t{263}, std::size_t{1000}}) {
    INFO("n=" << n);
    std::vector<float> scales(two_bit_scales(n));
    for (std::size_t b = 0; b < scales.size(); ++b)
      scales[b] = 0.25f * static_cast<float>(b + 1);
    std::vector<float> values(n);
    std::vector<unsigned char> expected(encoded_bytes(value_encoding::two_bit, n), 0);
    for (std::size_t i = 0; i < n; ++i) {
      const int c = code(rng);
      const float s = scales[i / two_bit_block];
      values[i] = c == 1 ? s : (c == 2 ? -s : (i % 3 == 0 ? -0.0f : 0.0f));
      expected[i / 4] = static_cast<unsigned char>(expected[i / 4] | (c << (2 * (i % 4))));
    }
    std::vector<unsigned char> packed(expected.size(), 0xff);
    encode_values(value_encoding::two_bit, scales.data(), values.data(), n, packed.data());
    REQUIRE(packed.size() == expected.size());
    CHECK(packed == expected);
    std::vector<float> back(n, 99.0f);
    decode_values(value_encoding::two_bit, scales.data(), packed.data(), packed.size(), back.data(),
                  n);
    REQUIRE(back.size() == values.size());
    for (std::size_t i = 0; i < n; ++i)
      CHECK(back[i] == values[i]); // -0 comes back as 0, which compares equal
  }
}

// Refusals inside the first 8 values and past them, where the AVX2 path sees them: a value of
// another scale, a NaN, the unused code.
TEST_CASE("2-bit refusals are found wherever in a block they sit", "[gradient_codec]") {
  const std::size_t n = 40;
  const float scale = 0.5f;
  for (std::size_t at : {std::size_t{2}, std::size_t{13}, std::size_t{38}}) {
    INFO("at=" << at);
    std::vector<float> values(n, 0.0f);
    values[1] = scale;
    std::vector<unsigned char> packed(encoded_bytes(value_encoding::two_bit, n));
    values[at] = 0.25f;
    CHECK_THROWS_WITH(
      encode_values(value_encoding::two_bit, &scale, values.data(), n, packed.data()),
      Catch::Contains("value " + std::to_string(at) + " (0.25)"));
    values[at] = std::nanf("");
    CHECK_THROWS_WITH(
      encode_values(value_encoding::two_bit, &scale, values.data(), n, packed.data()),
      Catch::Contains("value " + std::to_string(at) + " (nan)"));
    std::vector<unsigned char> codes(packed.size(), 0);
    codes[at / 4] = static_cast<unsigned char>(3u << (2 * (at % 4)));
    std::vector<float> back(n);
    CHECK_THROWS_WITH(
      decode_values(value_encoding::two_bit, &scale, codes.data(), codes.size(), back.data(), n),
      Catch::Contains("2bit value " + std::to_string(at) + " has the unused code 3"));
  }
}

TEST_CASE("the encoder refuses values its encoding does not hold", "[gradient_codec]") {
  unsigned char out[16];
  const float third = 1.0f / 3.0f;
  CHECK_THROWS_WITH(encode_values(value_encoding::fp16, nullptr, &third, 1, out),
                    Catch::Contains("not exactly representable in fp16"));
  CHECK_THROWS_WITH(encode_values(value_encoding::bf16, nullptr, &third, 1, out),
                    Catch::Contains("not exactly representable in bf16"));
  const float v[2] = {0.5f, 0.25f};
  const float half = 0.5f;
  CHECK_THROWS_WITH(encode_values(value_encoding::two_bit, &half, v, 2, out),
                    Catch::Contains("value 1 (0.25)"));
  // Each block answers to its own scale: 0.5 is block 0's, not block 1's.
  std::vector<float> blocks(two_bit_block + 2, 0.0f);
  blocks[0] = 0.5f;
  blocks[two_bit_block] = -0.25f;
  blocks[two_bit_block + 1] = 0.5f;
  const float scales[2] = {0.5f, 0.25f};
  std::vector<unsigned char> packed(encoded_bytes(value_encoding::two_bit, blocks.size()));
  CHECK_THROWS_WITH(
    encode_values(value_encoding::two_bit, scales, blocks.data(), blocks.size(), packed.data()),
    Catch::Contains("value " + std::to_string(two_bit_block + 1) + " (0.5)"));
  const float zero_scales[2] = {0.5f, 0.0f}; // a block of scale 0 holds only zeros
  blocks[two_bit_block + 1] = 0.0f;
  CHECK_THROWS_WITH(encode_values(value_encoding::two_bit, zero_scales, blocks.data(),
                                  blocks.size(), packed.data()),
                    Catch::Contains("value " + std::to_string(two_bit_block) + " (-0.25)"));
}

TEST_CASE("the decoder refuses wrong lengths, the unused code, pad bits and bad scales",
          "[gradient_codec]") {
  std::vector<float> out(5);
  const float half = 0.5f;
  const unsigned char ok[2] = {0x19, 0x00}; // codes 1,2,1,0 then 0
  CHECK_NOTHROW(decode_values(value_encoding::two_bit, &half, ok, 2, out.data(), 5));
  CHECK(out == std::vector<float>{0.5f, -0.5f, 0.5f, 0.0f, 0.0f});
  CHECK_THROWS_WITH(decode_values(value_encoding::two_bit, &half, ok, 1, out.data(), 5),
                    Catch::Contains("1 bytes for 5 values in 2bit, which take 2"));
  const unsigned char unused[2] = {0x03, 0x00};
  CHECK_THROWS_WITH(decode_values(value_encoding::two_bit, &half, unused, 2, out.data(), 5),
                    Catch::Contains("unused code 3"));
  const unsigned char padded[2] = {0x00, 0x04};
  CHECK_THROWS_WITH(decode_values(value_encoding::two_bit, &half, padded, 2, out.data(), 5),
                    Catch::Contains("padding"));
  const float nan = std::nanf(""), negative = -1.0f;
  CHECK_THROWS_WITH(decode_values(value_encoding::two_bit, &nan, ok, 2, out.data(), 5),
                    Catch::Contains("2bit scale"));
  CHECK_THROWS_WITH(decode_values(value_encoding::two_bit, &negative, ok, 2, out.data(), 5),
                    Catch::Contains("2bit scale"));
  // The second block's scale is the bad one: named by where its values start.
  std::vector<unsigned char> two_blocks(encoded_bytes(value_encoding::two_bit, two_bit_block + 1),
                                        0);
  std::vector<float> wide(two_bit_block + 1);
  const float scales[2] = {0.5f, std::numeric_limits<float>::infinity()};
  CHECK_THROWS_WITH(
    decode_values(value_encoding::two_bit, scales, two_blocks.data(), two_blocks.size(),
                  wide.data(), wide.size()),
    Catch::Contains("2bit scale of values " + std::to_string(two_bit_block) + ".. is inf"));
  const unsigned char half_bytes[4] = {0, 0, 0, 0};
  CHECK_THROWS_WITH(decode_values(value_encoding::fp16, nullptr, half_bytes, 4, out.data(), 5),
                    Catch::Contains("4 bytes for 5 values in fp16"));
  CHECK_THROWS_WITH(
    decode_values(static_cast<value_encoding>(9), nullptr, half_bytes, 4, out.data(), 1),
    Catch::Contains("unknown value encoding 9"));
}

// The codec works over chunks of values in parallel: over several chunks (not a multiple of 4
// values either), every result is the same bits on one thread as on many: pushes, residuals,
// answers, held weights, the 2-bit scales and the packed bytes; and a refused value in a later
// chunk is named, the first one.
TEST_CASE("results over many chunks are the same bits on one thread as on many",
          "[gradient_codec]") {
  const std::size_t n = 5 * 65536 + 7;
  auto run = [&](compression_spec spec) {
    const auto e = spec.pushes;
    auto grad = mixed_values(n, 21);
    auto target = mixed_values(n, 22);
    for (auto& v : target)
      v = std::tanh(v);
    std::vector<float> residual(n, 0.0f), sent(n), held(n, 0.0f), answer(n);
    auto push_scales = scales_for(e, n), answer_scales = scales_for(e, n);
    std::vector<float> out;
    for (int step = 0; step < 3; ++step) {
      quantize_push(spec, grad.data(), residual.data(), sent.data(), push_scales.data(), n);
      quantize_answer(e, target.data(), held.data(), answer.data(), answer_scales.data(), n);
    }
    std::vector<unsigned char> bytes(encoded_bytes(e, n));
    encode_values(e, answer_scales.data(), answer.data(), n, bytes.data());
    std::vector<float> back(n);
    decode_values(e, answer_scales.data(), bytes.data(), bytes.size(), back.data(), n);
    REQUIRE(std::memcmp(back.data(), answer.data(), n * 4) == 0);
    for (const auto* part : {&sent, &residual, &held, &push_scales, &answer_scales})
      out.insert(out.end(), part->begin(), part->end());
    return std::make_pair(out, bytes);
  };
  for (auto spec : lossy_pushes()) {
    INFO(to_string(spec));
    spec.threshold = 0.01f;
    std::pair<std::vector<float>, std::vector<unsigned char>> one, many;
    {
      tbb::global_control single(tbb::global_control::max_allowed_parallelism, 1);
      one = run(spec);
    }
    {
      tbb::global_control several(tbb::global_control::max_allowed_parallelism, 4);
      many = run(spec);
    }
    const std::size_t scales = spec.pushes == value_encoding::two_bit ? 2 * two_bit_scales(n) : 0;
    REQUIRE(one.first.size() == 3 * n + scales);
    REQUIRE(one.first.size() == many.first.size());
    CHECK(std::memcmp(one.first.data(), many.first.data(), one.first.size() * 4) == 0);
    REQUIRE(one.second.size() == many.second.size());
    CHECK(one.second == many.second);
    if (spec.pushes == value_encoding::two_bit)
      CHECK(one.first.back() > 0);
  }
  std::vector<float> quantized(n, 0.0f);
  quantized[4 * 65536 + 3] = 0.3f; // not +-0.5: refused, named
  quantized[n - 1] = 0.2f;
  std::vector<float> halves(two_bit_scales(n), 0.5f);
  std::vector<unsigned char> bytes(encoded_bytes(value_encoding::two_bit, n));
  CHECK_THROWS_WITH(
    encode_values(value_encoding::two_bit, halves.data(), quantized.data(), n, bytes.data()),
    Catch::Contains("value " + std::to_string(4 * 65536 + 3) + " (0.3)"));
  std::vector<unsigned char> codes(encoded_bytes(value_encoding::two_bit, n), 0);
  codes[3 * 16384 + 1] = 0x30; // value 3 * 65536 + 6 has the unused code
  std::vector<float> back(n);
  CHECK_THROWS_WITH(
    decode_values(value_encoding::two_bit, halves.data(), codes.data(), codes.size(), back.data(),
                  n),
    Catch::Contains("2bit value " + std::to_string(3 * 65536 + 6) + " has the unused code 3"));
}

TEST_CASE("fp16 rounding is IEEE's round to nearest even, subnormals and saturation included",
          "[gradient_codec]") {
  // Every half value decodes and re-encodes to itself.
  std::size_t checked = 0;
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    if ((bits & 0x7c00u) == 0x7c00u)
      continue; // inf and NaN
    const auto h = static_cast<std::uint16_t>(bits);
    float v = 0;
    decode_values(value_encoding::fp16, nullptr, reinterpret_cast<const unsigned char*>(&h), 2, &v,
                  1);
    std::uint16_t back = 0;
    encode_values(value_encoding::fp16, nullptr, &v, 1, reinterpret_cast<unsigned char*>(&back));
    REQUIRE(back == h);
    ++checked;
  }
  CHECK(checked == 63488);
  auto rounded = [](float v) {
    float residual = 0, sent = 0;
    quantize_push(spec_of(value_encoding::fp16), &v, &residual, &sent, nullptr, 1);
    return sent;
  };
  CHECK(rounded(65504.0f) == 65504.0f);
  CHECK(rounded(1e9f) == 65504.0f); // saturates, the rest kept in the residual
  CHECK(rounded(-1e9f) == -65504.0f);
  CHECK(rounded(std::ldexp(1.0f, -24)) == std::ldexp(1.0f, -24));     // the smallest subnormal
  CHECK(rounded(std::ldexp(1.0f, -25)) == 0.0f);                      // a tie: to even, 0
  CHECK(rounded(3 * std::ldexp(1.0f, -25)) == std::ldexp(1.0f, -23)); // a tie: to even, 2 units
  CHECK(rounded(1.0f + std::ldexp(1.0f, -11)) == 1.0f);               // a tie below: to even
  CHECK(rounded(1.0f + 3 * std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -9));
#if defined(__FLT16_MAX__) && !defined(__clang__)
  // Against the compiler's own half type, where it has one.
  auto values = mixed_values(100000, 21);
  for (float v : values) {
    if (std::fabs(v) > 65504.0f)
      continue;
    REQUIRE(rounded(v) == static_cast<float>(static_cast<_Float16>(v)));
  }
#endif
}
