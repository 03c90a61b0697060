// Small, fully specified random-number helpers shared by the io layer.
//
// Batches and synthetic data must come out bit-identical on every platform and for every
// thread count, so nothing here goes through std::uniform_int_distribution, std::shuffle or
// std::normal_distribution, whose outputs the standard leaves to the implementation. Streams
// are keyed by tuples like (seed, epoch, position) through splitmix64, which makes any one
// example's randomness computable on its own, in any order, on any thread.
//
// Thread-safety: free functions on values; a generator object belongs to one thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

namespace troupe {

/// One step of splitmix64 (Steele, Lea, Flood 2014): a bijective 64-bit mixer whose outputs
/// pass BigCrush, so nearby keys (epoch 3, epoch 4) give unrelated streams.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Folds a tuple of keys into one seed; the order of the keys matters.
inline std::uint64_t mix_seed(std::initializer_list<std::uint64_t> keys) {
  std::uint64_t h = 0x243f6a8885a308d3ULL;
  for (auto key : keys)
    h = splitmix64(h ^ key);
  return h;
}

/// A tiny counter-based generator for the few draws one example needs (crop offsets, a coin
/// for mirroring, noise): cheaper to set up per example than a Mersenne Twister.
class splitmix_stream {
public:
  explicit splitmix_stream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t operator()() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

private:
  std::uint64_t state_;
};

/// Uniform integer in [0, bound) for bound > 0, by rejection so that no value is favoured.
template <class Generator> std::uint64_t uniform_below(Generator& gen, std::uint64_t bound) {
  // Values below `threshold` would make the low residues more likely; 2^64 mod bound of them.
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t r = gen();
    if (r >= threshold)
      return r % bound;
  }
}

/// Uniform double in [0, 1) from the top 53 bits.
inline double unit_interval(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

/// Fisher-Yates with a given Mersenne Twister, written out because std::shuffle's sequence
/// is implementation-defined and workers on different machines must agree on the order.
template <class T> void fisher_yates(std::vector<T>& values, std::mt19937_64& gen) {
  for (std::size_t i = values.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(uniform_below(gen, i));
    std::swap(values[i - 1], values[j]);
  }
}

} // namespace troupe
