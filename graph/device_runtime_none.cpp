// device_runtime.hpp in a build without CUDA: a model can only run on the CPU.
#include "graph/device_runtime.hpp"

#include <stdexcept>

namespace troupe {

std::unique_ptr<device_runtime>
make_device_runtime(const compute_device& device, const std::string& model_name,
                    const std::vector<std::pair<std::string, layer*>>&) {
  throw std::runtime_error("model '" + model_name + "': running on " + to_string(device)
                           + " needs a GPU, and this troupe was built without CUDA");
}

} // namespace troupe
