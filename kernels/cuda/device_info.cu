// CUDA build of query_devices: asks the runtime for each GPU's properties and reports the
// linked cuDNN version. A machine without a driver or GPU gives an empty list and the
// runtime's own error text.
#include <troupe/kernels/device_info.hpp>

#include <cuda_runtime.h>
#include <cudnn.h>

namespace troupe {

device_report query_devices() {
  device_report report;
  report.cuda_compiled = true;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  report.cuda_libraries =
    "CUDA runtime " + std::to_string(runtime) + ", cuDNN " + std::to_string(cudnnGetVersion());
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    report.why_no_gpu = std::string("CUDA: ") + cudaGetErrorString(status);
    cudaGetLastError(); // clear the sticky error so later calls start clean
    return report;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, i) != cudaSuccess)
      continue;
    report.gpus.push_back(gpu_device{
      i, props.name, static_cast<std::uint64_t>(props.totalGlobalMem), props.major, props.minor});
  }
  if (report.gpus.empty())
    report.why_no_gpu = "CUDA: no device reported its properties";
  return report;
}

} // namespace troupe
