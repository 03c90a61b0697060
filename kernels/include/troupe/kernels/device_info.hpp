// What compute devices this process can use: the CPU budget, and CUDA GPUs when Troupe was
// built with CUDA (TROUPE_CUDA=AUTO found nvcc and cuDNN, or ON). Without a GPU or a driver
// the GPU list is empty and `why_no_gpu` says why, so callers never need to guess.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct gpu_device {
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

struct device_report {
  bool cuda_compiled = false; ///< built with CUDA, cuDNN and cuBLAS
  std::string cuda_libraries; ///< "CUDA runtime 13000, cuDNN 91900" when compiled
  std::vector<gpu_device> gpus;
  std::string why_no_gpu; ///< set when gpus is empty
};

/// Queries the CUDA runtime (when compiled in). Never throws for a missing GPU or driver.
device_report query_devices();

} // namespace troupe
