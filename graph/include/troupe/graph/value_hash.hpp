// A stable 64-bit hash of any value that has a CAF-0.17-style `inspect` overload, computed
// without CAF: job_hash(job) is how processes check that they were handed the same
// training_job, and the `inspect` overloads it walks are the ones CAF serializes with, so what
// is hashed is exactly what is sent.
//
// Encoding, fed byte by byte to 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime
// 0x100000001b3):
//   - fields in the order their `inspect` lists them (declaration order), nested structs
//     through their own `inspect`, with no separators or names;
//   - bool: one byte, 0 or 1;
//   - integers: sizeof(T) bytes, two's complement, little-endian;
//   - float, double: the little-endian bytes of the IEEE-754 bit pattern (so 0.0 and -0.0
//     differ, and NaNs by payload);
//   - enums: their underlying integer, as above;
//   - std::string: the length as a uint64, then the bytes; std::vector: the length as a
//     uint64, then each element.
// Every type's encoding is self-delimiting, so two different values of one type feed different
// byte streams and only FNV collisions remain. Nothing depends on addresses, std::hash, the
// host's byte order or the run, so the value is the same in every process. It changes when a
// field is added, removed or reordered, which is intended: such jobs are not interchangeable.
//
// value_hasher understands only the types above; CAF annotations (caf::meta::type_name) are
// not among them, since graph knows nothing of CAF.
//
// Thread-safety: pure functions; a value_hasher is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace troupe {

struct training_job;

/// 64-bit FNV-1a of `size` bytes, continuing from `state` (the offset basis to start). The one
/// FNV in Troupe: value_hasher, placement plan hashes and parameter seeds all use it.
constexpr std::uint64_t fnv1a_offset_basis = 0xcbf29ce484222325ULL;
inline std::uint64_t fnv1a_64(const unsigned char* bytes, std::size_t size,
                              std::uint64_t state = fnv1a_offset_basis) {
  for (std::size_t i = 0; i < size; ++i) {
    state ^= bytes[i];
    state *= 0x100000001b3ULL;
  }
  return state;
}
inline std::uint64_t fnv1a_64(const std::string& bytes) {
  return fnv1a_64(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

/// An inspector (in the sense of CAF 0.17's `inspect`) that only reads: it feeds each value it
/// is applied to into a running FNV-1a hash, encoded as described above.
class value_hasher {
public:
  using result_type = void;
  static constexpr bool reads_state = true;
  static constexpr bool writes_state = false;

  template <class... Ts> void operator()(const Ts&... xs) { (apply(xs), ...); }

  /// The hash of everything applied so far (the FNV offset basis before the first value).
  std::uint64_t value() const { return state_; }

private:
  template <class> struct is_vector : std::false_type {};
  template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};

  void feed(const unsigned char* bytes, std::size_t size) {
    state_ = fnv1a_64(bytes, size, state_);
  }

  /// The low `size` bytes of `bits`, least significant first.
  void little_endian(std::uint64_t bits, std::size_t size) {
    unsigned char bytes[8];
    for (std::size_t i = 0; i < size; ++i)
      bytes[i] = static_cast<unsigned char>(bits >> (8 * i));
    feed(bytes, size);
  }

  void length(std::size_t size) { little_endian(static_cast<std::uint64_t>(size), 8); }

  template <class T> void apply(const T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      little_endian(x ? 1 : 0, 1);
    } else if constexpr (std::is_enum_v<T>) {
      apply(static_cast<std::underlying_type_t<T>>(x));
    } else if constexpr (std::is_integral_v<T>) {
      static_assert(sizeof(T) <= 8, "value_hasher: integers of at most 64 bits");
      little_endian(static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(x)), sizeof(T));
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      static_assert(std::numeric_limits<T>::is_iec559, "value_hasher: IEEE-754 floats only");
      using bits_type = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      bits_type bits;
      std::memcpy(&bits, &x, sizeof bits);
      little_endian(bits, sizeof bits);
    } else if constexpr (std::is_same_v<T, std::string>) {
      length(x.size());
      feed(reinterpret_cast<const unsigned char*>(x.data()), x.size());
    } else if constexpr (is_vector<T>::value) {
      length(x.size());
      for (const typename T::value_type& element : x) // also binds vector<bool>'s proxies
        apply(element);
    } else {
      // A struct: its inspect (found by argument-dependent lookup) lists the fields. Inspect
      // takes T& because loading inspectors write; this one only reads.
      inspect(*this, const_cast<T&>(x));
    }
  }

  std::uint64_t state_ = fnv1a_offset_basis;
};

/// The stable hash of any value value_hasher understands (see the top of this file).
template <class T> std::uint64_t value_hash(const T& x) {
  value_hasher hasher;
  hasher(x);
  return hasher.value();
}

/// value_hash of a whole training job: equal jobs hash equal in every process and run.
std::uint64_t job_hash(const training_job& job);

} // namespace troupe
