#include "apps/weights_digest.hpp"

#include <cstdio>

namespace troupe {

namespace {

constexpr std::uint64_t fnv_offset = 14695981039346656037ull;
constexpr std::uint64_t fnv_prime = 1099511628211ull;

void mix(std::uint64_t& h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= fnv_prime;
  }
}

std::uint64_t value_bytes(const training_result& result) {
  std::uint64_t bytes = 0;
  for (const auto& w : result.final_weights)
    bytes += w.bytes();
  return bytes;
}

} // namespace

std::uint64_t weights_digest(const training_result& result) {
  std::uint64_t h = fnv_offset;
  for (std::size_t i = 0; i < result.final_weights.size(); ++i) {
    if (i < result.parameter_names.size())
      mix(h, result.parameter_names[i].data(), result.parameter_names[i].size());
    const auto& w = result.final_weights[i];
    for (auto extent : w.shape())
      mix(h, &extent, sizeof extent);
    mix(h, w.data(), w.bytes());
  }
  return h;
}

std::string weights_digest_line(const training_result& result) {
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx",
                static_cast<unsigned long long>(weights_digest(result)));
  return "Final weights: " + std::to_string(result.final_weights.size()) + " tensors, "
         + std::to_string(value_bytes(result)) + " bytes, digest " + digest;
}

int finished_run_status(const training_result& result, std::ostream& err) {
  if (!result.final_weights.empty())
    return 0;
  err << "error: the run ended without final weights\n" << std::flush;
  return 1;
}

} // namespace troupe
