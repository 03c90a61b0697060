// `troupe devices`: what this process can compute on: the CPU thread budget and, when built
// with CUDA, each GPU (or the reason there is none).
#include <iostream>
#include <thread>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include <troupe/kernels/device_info.hpp>

namespace troupe {

int devices_command(const std::vector<std::string>& args) {
  flag_set f("devices", "Lists the compute devices: CPU hardware threads and CUDA GPUs.");
  if (!f.parse(args)) {
    std::cout << f.help();
    return 0;
  }
  std::cout << "cpu: " << std::thread::hardware_concurrency() << " hardware threads\n";
  auto report = query_devices();
  if (report.cuda_compiled)
    std::cout << "cuda: built with " << report.cuda_libraries << '\n';
  for (const auto& gpu : report.gpus)
    std::cout << "gpu " << gpu.index << ": " << gpu.name << ", " << gpu.memory_bytes / (1024 * 1024)
              << " MiB, compute capability " << gpu.compute_capability_major << '.'
              << gpu.compute_capability_minor << '\n';
  if (report.gpus.empty())
    std::cout << "gpu: none (" << report.why_no_gpu << ")\n";
  return 0;
}

} // namespace troupe
