// Gradient summation as one grid-stride pass that reads up to `inputs_per_launch` buffers per
// element and writes the total once: K gradients cost K reads and one write, against 2K reads
// and K writes for K - 1 pairwise additions. The buffer pointers travel in the kernel's
// parameters (no device-side table to upload); more inputs than fit take further launches, each
// starting from the total so far, which keeps the left-to-right order of the additions.
#include "kernels/cuda/sum_cuda.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace troupe::cuda {

namespace {

constexpr int inputs_per_launch = 8;

struct input_table {
  const float* buffers[inputs_per_launch];
  int count;
};

__global__ void sum_kernel(input_table inputs, float* out, std::int64_t n) {
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) {
    float total = inputs.buffers[0][i];
    // Unrolled with constant indices, so the table stays in parameter space (a loop to
    // inputs.count would copy it to local memory to index it).
#pragma unroll
    for (int k = 1; k < inputs_per_launch; ++k)
      if (k < inputs.count)
        total += inputs.buffers[k][i];
    out[i] = total;
  }
}

} // namespace

void sum_buffers(cuda_context& context, const std::vector<const float*>& inputs, float* out,
                 std::int64_t n) {
  if (inputs.empty())
    throw std::invalid_argument("sum_buffers: no inputs");
  if (n < 0)
    throw std::invalid_argument("sum_buffers: element count " + std::to_string(n) + " is negative");
  if (n > 0 && out == nullptr)
    throw std::invalid_argument("sum_buffers: out is null for " + std::to_string(n) + " elements");
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (n > 0 && inputs[k] == nullptr)
      throw std::invalid_argument("sum_buffers: input " + std::to_string(k) + " is null for "
                                  + std::to_string(n) + " elements");
    // Inputs past the first launch's eight are read after it wrote out; one rule for any K.
    if (k > 0 && n > 0 && inputs[k] == out)
      throw std::invalid_argument("sum_buffers: out is input " + std::to_string(k)
                                  + "; it may only be input 0");
  }
  if (n == 0)
    return;
  // The first launch takes inputs [0, 8); each later one the total so far and 7 more.
  std::size_t next = 0;
  while (next < inputs.size()) {
    input_table table{};
    if (next > 0)
      table.buffers[table.count++] = out;
    while (table.count < inputs_per_launch && next < inputs.size())
      table.buffers[table.count++] = inputs[next++];
    sum_kernel<<<grid_for(n), block_threads, 0, context.stream()>>>(table, out, n);
    TROUPE_CUDA_CHECK(cudaGetLastError());
  }
}

void sum_into(cuda_context& context, const float* x, float* out, std::int64_t n) {
  if (n < 0)
    throw std::invalid_argument("sum_into: element count " + std::to_string(n) + " is negative");
  if (n > 0 && out == nullptr)
    throw std::invalid_argument("sum_into: out is null for " + std::to_string(n) + " elements");
  if (n > 0 && x == nullptr)
    throw std::invalid_argument("sum_into: x is null for " + std::to_string(n) + " elements");
  sum_buffers(context, {out, x}, out, n);
}

} // namespace troupe::cuda
