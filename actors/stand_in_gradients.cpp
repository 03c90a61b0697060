// Stand-in gradients: views of one pseudo-random pool (see stand_in_gradients.hpp).
#include <troupe/actors/stand_in_gradients.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace troupe {

namespace {

// SplitMix64's finalizer: a well-mixed 64-bit value from any 64-bit input.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

stand_in_gradients::stand_in_gradients(std::vector<shape_t> shapes, std::uint64_t seed, int rank)
    : shapes_(std::move(shapes)), seed_(seed), rank_(rank) {
  std::int64_t largest = 0;
  for (const auto& s : shapes_)
    largest = std::max(largest, shape_numel(s));
  pool_ = tensor::uninitialized({largest + window});
  float* v = pool_.data();
  std::uint64_t state = mix(seed ^ 0x5354414e44494eULL); // the pool depends on the seed only
  for (std::int64_t i = 0; i < largest + window; ++i) {
    state = mix(state);
    // 24 random bits -> [-1, 1) -> [-1e-3, 1e-3): a gradient's order of magnitude
    v[i] = (static_cast<float>(state >> 40) / 8388608.0f - 1.0f) * 1e-3f;
  }
}

std::int64_t stand_in_gradients::offset(std::size_t slot, std::int64_t step) const {
  auto h = mix(seed_);
  h = mix(h ^ static_cast<std::uint64_t>(rank_));
  h = mix(h ^ static_cast<std::uint64_t>(step));
  h = mix(h ^ static_cast<std::uint64_t>(slot));
  constexpr auto starts = static_cast<std::uint64_t>(window / alignment);
  return static_cast<std::int64_t>(h % starts) * alignment;
}

tensor stand_in_gradients::gradient(std::size_t slot, std::int64_t step) const {
  if (slot >= shapes_.size())
    throw std::out_of_range("stand-in gradients: slot " + std::to_string(slot) + " of "
                            + std::to_string(shapes_.size()) + " parameters");
  const auto& shape = shapes_[slot];
  return pool_.flat_slice(offset(slot, step), shape_numel(shape)).reshaped(shape);
}

} // namespace troupe
