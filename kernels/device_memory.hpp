// Device memory behind tensors: allocation on a GPU, copies between host and device, filling.
// The CUDA build implements it in kernels/cuda/device_memory.cu; a build without CUDA in
// kernels/cpu/device_memory_none.cpp, where every call throws naming the missing build.
//
// Copies here are synchronous (they return when the bytes have landed): they serve tensor's
// own clone/copy_from/to_host/to_gpu. Per-step transfers go on a compute actor's stream from
// pinned buffers instead.
//
// Private to kernels/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <troupe/kernels/tensor.hpp>

namespace troupe::device_memory {

/// `count` floats on GPU `device`, zero-filled when `zero`; freed with the last handle.
std::shared_ptr<float> allocate(int device, std::int64_t count, bool zero);
/// Copies `bytes` from `src` (on `from`) to `dst` (on `to`); the GPU side is `device`.
void copy(void* dst, device_kind to, const void* src, device_kind from, std::size_t bytes,
          int device);
/// Sets `count` floats at `first` on GPU `device` to `value`.
void fill(float* first, std::int64_t count, float value, int device);

} // namespace troupe::device_memory
