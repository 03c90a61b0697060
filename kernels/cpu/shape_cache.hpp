// Internal: a tiny map from input shapes to an op's cached primitives.
//
// An op sees one or two batch sizes in practice (the training batch and a short last batch,
// perhaps an evaluation batch), so a linear scan over a handful of fixed-size keys beats any
// hashing, and lookups allocate nothing. The least recently used entry goes when it is full.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe::cpu {

using shape_key = std::array<std::int64_t, 12>;

/// Packs up to two shapes of rank <= 5 (with their ranks) into a key.
inline shape_key make_shape_key(const shape_t& a, const shape_t& b = {}) {
  if (a.size() > 5 || b.size() > 5)
    throw std::invalid_argument("shape_key: rank above 5 in " + shape_string(a) + " / "
                                + shape_string(b));
  shape_key key{};
  std::size_t i = 0;
  key[i++] = static_cast<std::int64_t>(a.size());
  for (auto d : a)
    key[i++] = d;
  key[i++] = static_cast<std::int64_t>(b.size());
  for (auto d : b)
    key[i++] = d;
  return key;
}

template <class Entry> class shape_cache {
public:
  static constexpr std::size_t capacity = 8;

  /// The entry for `key`, made by `make()` (returning std::unique_ptr<Entry>) on a miss.
  template <class Make> Entry& get(const shape_key& key, const Make& make) {
    ++clock_;
    for (auto& slot : slots_) {
      if (slot.key == key) {
        slot.last_use = clock_;
        return *slot.entry;
      }
    }
    if (slots_.size() >= capacity)
      evict_oldest();
    slots_.push_back(slot_t{key, make(), clock_});
    return *slots_.back().entry;
  }

  /// The entry for `key`, or null; never creates one.
  Entry* find(const shape_key& key) {
    for (auto& slot : slots_)
      if (slot.key == key)
        return slot.entry.get();
    return nullptr;
  }

  std::size_t size() const { return slots_.size(); }

private:
  struct slot_t {
    shape_key key;
    std::unique_ptr<Entry> entry;
    std::uint64_t last_use;
  };

  void evict_oldest() {
    std::size_t oldest = 0;
    for (std::size_t i = 1; i < slots_.size(); ++i)
      if (slots_[i].last_use < slots_[oldest].last_use)
        oldest = i;
    slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(oldest));
  }

  std::vector<slot_t> slots_;
  std::uint64_t clock_ = 0;
};

} // namespace troupe::cpu
