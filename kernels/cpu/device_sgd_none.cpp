// device_sgd.hpp in a build without CUDA: no tensor can be on a GPU, so no call gets here
// unless a caller forged one; refuse naming the build.
#include "kernels/device_sgd.hpp"

#include <stdexcept>

namespace troupe::device_sgd {

void update(const sgd_options&, float, const tensor&, const tensor&, tensor&, tensor&, bool) {
  throw std::runtime_error("sgd_update: tensors on a GPU, and this troupe was built without CUDA");
}

} // namespace troupe::device_sgd
