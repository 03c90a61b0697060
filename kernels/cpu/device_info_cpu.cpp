// Build without CUDA: there is nothing to ask, and the report says so.
#include <troupe/kernels/device_info.hpp>

namespace troupe {

device_report query_devices() {
  device_report report;
  report.why_no_gpu =
    "built without CUDA (configure with -DTROUPE_CUDA=ON or AUTO and nvcc + cuDNN present)";
  return report;
}

} // namespace troupe
