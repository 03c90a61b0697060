// Host-side argument checks the CUDA ops share: they run before anything is queued, so a bad
// call throws std::invalid_argument naming the op and the argument and the device is untouched.
// Private to kernels/.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace troupe::cuda {

inline void require_count(const char* op, std::int64_t n) {
  if (n < 0)
    throw std::invalid_argument(std::string(op) + ": element count " + std::to_string(n)
                                + " is negative");
}

/// `pointer` must be set when it stands for `n` > 0 elements.
inline void require_memory(const char* op, const char* name, const void* pointer, std::int64_t n) {
  if (n > 0 && pointer == nullptr)
    throw std::invalid_argument(std::string(op) + ": " + name + " is null for " + std::to_string(n)
                                + " elements");
}

} // namespace troupe::cuda
