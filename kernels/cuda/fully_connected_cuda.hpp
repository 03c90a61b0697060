// Fully connected layer on cuBLAS, the CUDA twin of fully_connected_op
// (troupe/kernels/fully_connected.hpp): y = x * w^T + b with x [N, IN] (any rank >= 2,
// flattened after the batch axis), w [OUT, IN], b [OUT], all row-major; gradients written, not
// accumulated.
//
// Tensors are raw device pointers with the shapes of x and w beside them; calls are queued on
// the context's stream and return without waiting. Shapes are checked on the host before
// anything is queued (std::invalid_argument naming them).
//
// Thread-safety: one op object is used by one thread at a time, with contexts of one device
// (it keeps a vector of ones in that device's memory for the bias terms).
// Private to kernels/ (the CUDA backend).
#pragma once

#include <cstdint>

#include <troupe/kernels/fully_connected.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

class fully_connected_cuda {
public:
  /// [N, OUT] for x [N, ...] and w [OUT, IN], as fully_connected_op::output_shape; throws
  /// std::invalid_argument when prod(x[1:]) != IN or an extent is beyond cuBLAS's int.
  shape_t output_shape(const shape_t& x_shape, const shape_t& w_shape) const;

  /// y [N, OUT] = x [N, IN] * w^T [IN, OUT] + b [OUT] (b may be null).
  void forward(cuda_context& context, const shape_t& x_shape, const shape_t& w_shape,
               const float* x, const float* w, const float* b, float* y);

  /// From dy [N, OUT]: dx like x (skipped when null), dw [OUT, IN], db [OUT] (skipped when
  /// null). w is read only for dx.
  void backward(cuda_context& context, const shape_t& x_shape, const shape_t& w_shape,
                const float* x, const float* w, const float* dy, float* dx, float* dw, float* db);

private:
  /// At least `n` ones in device memory (grown on demand, filled in stream order).
  const float* ones(cuda_context& context, std::int64_t n);

  device_buffer ones_;
  std::int64_t ones_count_ = 0;
  int device_ = -1; // of the first context: ones_ lives there
};

} // namespace troupe::cuda
