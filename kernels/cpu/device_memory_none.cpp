// device_memory.hpp in a build without CUDA: there is no GPU memory to use.
#include "kernels/device_memory.hpp"

#include <stdexcept>

namespace troupe::device_memory {

namespace {

[[noreturn]] void no_cuda(const char* what) {
  throw std::runtime_error(std::string("tensor: ") + what
                           + " needs a GPU, and this troupe was built without CUDA");
}

} // namespace

std::shared_ptr<float> allocate(int, std::int64_t, bool) {
  no_cuda("GPU memory");
}
void copy(void*, device_kind, const void*, device_kind, std::size_t, int) {
  no_cuda("a copy to or from a GPU");
}
void fill(float*, std::int64_t, float, int) {
  no_cuda("filling GPU memory");
}

} // namespace troupe::device_memory
