// Which device a compute actor runs on: the CPU, or one GPU by index. Written "cpu" or
// "gpu:N" in flags (`--devices gpu:0,gpu:1`) and configs (`devices = [gpu:0, gpu:1]`);
// "cuda:N" is read as "gpu:N".
//
// A run asks for its devices before anything starts: a GPU this machine does not have (or a
// build without CUDA) is an error naming the device and what the machine has.
#pragma once

#include <string>
#include <vector>

#include <troupe/kernels/device_info.hpp>
#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct compute_device {
  device_kind kind = device_kind::cpu;
  int index = 0; ///< the GPU's index (0 for the CPU)

  bool operator==(const compute_device& other) const {
    return kind == other.kind && index == other.index;
  }
  bool operator!=(const compute_device& other) const { return !(*this == other); }
};

/// Fields in declaration order, for CAF's serializers and graph's value_hash.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compute_device& x) {
  return f(x.kind, x.index);
}

/// "cpu", "gpu:N" or "cuda:N" (N a non-negative integer); throws std::invalid_argument naming
/// the text and the accepted forms.
compute_device parse_compute_device(const std::string& text);
/// A comma-separated list of devices ("gpu:0,gpu:1"); throws as parse_compute_device, naming
/// the item's position. An empty text is an error.
std::vector<compute_device> parse_compute_devices(const std::string& text);

/// "cpu" or "gpu:N".
std::string to_string(const compute_device& device);

/// Which cuDNN convolution algorithms a GPU model may take (`--cudnn-algorithms`).
/// exact: never FFT or non-fused Winograd, whose results are ~1e-3 off float32's (measured on an
/// H100: docs/gpu.md); fastest: whichever cudnnFind times fastest, as PyTorch's cudnn.benchmark
/// takes (VGG-16 and Inception-BN 11-42% faster on an H100). Process-wide: set it before a model
/// moves to a GPU; convolutions built later take it. A CPU-only build keeps it and ignores it.
enum class convolution_algorithms { exact, fastest };
void set_convolution_algorithms(convolution_algorithms choice);
convolution_algorithms current_convolution_algorithms();
/// "exact" or "fastest"; throws std::invalid_argument naming the text and the accepted words.
convolution_algorithms parse_convolution_algorithms(const std::string& text);

/// Throws std::runtime_error when a device of `wanted` is not on this machine: a GPU index
/// beyond the report's list, any GPU in a build without CUDA; the message names the device
/// and lists what there is (or why there is no GPU).
void require_devices(const std::vector<compute_device>& wanted, const device_report& here);

} // namespace troupe
