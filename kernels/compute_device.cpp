// See compute_device.hpp.
#include <troupe/kernels/compute_device.hpp>

#include <atomic>
#include <cctype>
#include <stdexcept>

namespace troupe {

namespace {

bool all_digits(const std::string& text) {
  if (text.empty() || text.size() > 4)
    return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

std::string gpu_list(const device_report& here) {
  std::string list;
  for (const auto& gpu : here.gpus)
    list += (list.empty() ? "" : ", ") + std::string("gpu:") + std::to_string(gpu.index) + " ("
            + gpu.name + ")";
  return list;
}

} // namespace

compute_device parse_compute_device(const std::string& text) {
  if (text == "cpu")
    return compute_device{};
  for (const char* prefix : {"gpu:", "cuda:"}) {
    const std::string p = prefix;
    if (text.compare(0, p.size(), p) == 0 && all_digits(text.substr(p.size())))
      return compute_device{device_kind::cuda, std::stoi(text.substr(p.size()))};
  }
  throw std::invalid_argument("device '" + text
                              + "' is not cpu or gpu:N (N the GPU's index, e.g. gpu:0)");
}

std::vector<compute_device> parse_compute_devices(const std::string& text) {
  std::vector<compute_device> devices;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    const auto item =
      text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    try {
      devices.push_back(parse_compute_device(item));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("devices '" + text + "', item "
                                  + std::to_string(devices.size() + 1) + ": " + e.what());
    }
    if (comma == std::string::npos)
      return devices;
    start = comma + 1;
  }
}

namespace {
std::atomic<convolution_algorithms> chosen_convolution_algorithms{convolution_algorithms::exact};
} // namespace

void set_convolution_algorithms(convolution_algorithms choice) {
  chosen_convolution_algorithms = choice;
}

convolution_algorithms current_convolution_algorithms() {
  return chosen_convolution_algorithms;
}

convolution_algorithms parse_convolution_algorithms(const std::string& text) {
  if (text == "exact")
    return convolution_algorithms::exact;
  if (text == "fastest")
    return convolution_algorithms::fastest;
  throw std::invalid_argument("'" + text + "' is not one of exact, fastest");
}

std::string to_string(const compute_device& device) {
  return device.kind == device_kind::cpu ? "cpu" : "gpu:" + std::to_string(device.index);
}

void require_devices(const std::vector<compute_device>& wanted, const device_report& here) {
  for (const auto& device : wanted) {
    if (device.kind == device_kind::cpu)
      continue;
    if (!here.cuda_compiled)
      throw std::runtime_error(
        "device " + to_string(device)
        + " is not available: this troupe was built "
          "without CUDA (TROUPE_CUDA=OFF, or no nvcc and cuDNN at build time)");
    if (device.index >= static_cast<int>(here.gpus.size()))
      throw std::runtime_error(
        "device " + to_string(device) + " is not available: this machine has "
        + (here.gpus.empty() ? "no GPU (" + here.why_no_gpu + ")"
                             : std::to_string(here.gpus.size()) + " GPU(s): " + gpu_list(here)));
  }
}

} // namespace troupe
