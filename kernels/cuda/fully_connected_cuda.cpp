// Fully connected layer as cuBLAS calls: one SGEMM per product, cublasSger for the bias and
// cublasSgemv against a vector of ones for its gradient, all on the context's stream.
//
// Layouts. Our tensors are row-major; cuBLAS is column-major. A row-major [R, C] matrix is, byte
// for byte, the column-major [C, R] matrix, i.e. its transpose, with leading dimension C. So
// with X = x^T (IN x N, ld IN), W = w^T (IN x OUT, ld IN) and Y = y^T (OUT x N, ld OUT) as
// cuBLAS sees our buffers, each row-major product becomes its transpose:
//   y  = x w^T   ->  Y  = W^T X     gemm(T, N, m=OUT, n=N,   k=IN)
//   dx = dy w    ->  DX = W DY      gemm(N, N, m=IN,  n=N,   k=OUT)
//   dw = dy^T x  ->  DW = X DY^T    gemm(N, T, m=IN,  n=OUT, k=N)
//   y += 1 b^T   ->  Y += b 1^T     ger(m=OUT, n=N)
//   db = dy^T 1  ->  db = DY 1      gemv(N, m=OUT, n=N)
// No data is transposed or copied. Math: the context's handle is in CUBLAS_DEFAULT_MATH, so
// float32 GEMMs stay float32 (no TF32), matching the CPU op within float32 tolerance.
#include "kernels/cuda/fully_connected_cuda.hpp"

#include <climits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace troupe::cuda {

namespace {

void require_pointer(const void* p, const char* what) {
  if (p == nullptr)
    throw std::invalid_argument(std::string("fully_connected_cuda: ") + what + " is null");
}

// The three extents every call needs, as cuBLAS's ints.
struct fc_dims {
  int n, in, out;
};

} // namespace

shape_t fully_connected_cuda::output_shape(const shape_t& x, const shape_t& w) const {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("fully_connected_cuda: input " + shape_string(x) + " and weights "
                                + shape_string(w) + " do not fit: " + why);
  };
  if (x.size() < 2 || w.size() != 2)
    fail("need x of rank >= 2 and w [OUT, IN]");
  if (x[0] < 1 || w[0] < 1)
    fail("empty batch or no outputs");
  std::int64_t in = shape_numel(x) / x[0];
  if (in != w[1] || in < 1)
    fail(std::to_string(in) + " features per row, weights expect " + std::to_string(w[1]));
  if (x[0] > INT_MAX || in > INT_MAX || w[0] > INT_MAX)
    fail("cuBLAS takes extents up to INT_MAX");
  return {x[0], w[0]};
}

const float* fully_connected_cuda::ones(cuda_context& context, std::int64_t n) {
  if (device_ < 0)
    device_ = context.device();
  if (context.device() != device_)
    throw std::logic_error("fully_connected_cuda: used on gpu:" + std::to_string(context.device())
                           + " after gpu:" + std::to_string(device_));
  if (ones_count_ < n) {
    // Queued calls may still read the old vector: let them finish before it is freed. Growing
    // happens once per larger batch size, so the waits do not recur.
    context.synchronize();
    device_buffer grown(static_cast<std::size_t>(n) * sizeof(float));
    const std::vector<float> host(static_cast<std::size_t>(n), 1.0f);
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(grown.get(), host.data(), grown.bytes(),
                                      cudaMemcpyHostToDevice, context.stream()));
    context.synchronize(); // `host` goes out of scope
    ones_ = std::move(grown);
    ones_count_ = n;
  }
  return ones_.as<float>();
}

void fully_connected_cuda::forward(cuda_context& context, const shape_t& x_shape,
                                   const shape_t& w_shape, const float* x, const float* w,
                                   const float* b, float* y) {
  output_shape(x_shape, w_shape);
  require_pointer(x, "x");
  require_pointer(w, "w");
  require_pointer(y, "y");
  const fc_dims d{static_cast<int>(x_shape[0]), static_cast<int>(w_shape[1]),
                  static_cast<int>(w_shape[0])};
  const cublasHandle_t h = context.cublas();
  const float one = 1.0f, zero = 0.0f;
  // Y (OUT x N) = W^T (OUT x IN) * X (IN x N).
  TROUPE_CUDA_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, d.out, d.n, d.in, &one, w, d.in, x,
                                d.in, &zero, y, d.out));
  if (b != nullptr) {
    // Y += b 1^T: a rank-1 update adding b[o] to every column (sample) of Y.
    const float* all_ones = ones(context, d.n);
    TROUPE_CUDA_CHECK(cublasSger(h, d.out, d.n, &one, b, 1, all_ones, 1, y, d.out));
  }
}

void fully_connected_cuda::backward(cuda_context& context, const shape_t& x_shape,
                                    const shape_t& w_shape, const float* x, const float* w,
                                    const float* dy, float* dx, float* dw, float* db) {
  output_shape(x_shape, w_shape);
  require_pointer(x, "x");
  require_pointer(dy, "dy");
  require_pointer(dw, "dw");
  if (dx != nullptr)
    require_pointer(w, "w (needed for dx)");
  const fc_dims d{static_cast<int>(x_shape[0]), static_cast<int>(w_shape[1]),
                  static_cast<int>(w_shape[0])};
  const cublasHandle_t h = context.cublas();
  const float one = 1.0f, zero = 0.0f;
  // DW (IN x OUT) = X (IN x N) * DY^T (N x OUT).
  TROUPE_CUDA_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, d.in, d.out, d.n, &one, x, d.in, dy,
                                d.out, &zero, dw, d.in));
  if (db != nullptr) {
    // db (OUT) = DY (OUT x N) * 1 (N): the sum of dy over the batch.
    const float* all_ones = ones(context, d.n);
    TROUPE_CUDA_CHECK(
      cublasSgemv(h, CUBLAS_OP_N, d.out, d.n, &one, dy, d.out, all_ones, 1, &zero, db, 1));
  }
  if (dx != nullptr) {
    // DX (IN x N) = W (IN x OUT) * DY (OUT x N).
    TROUPE_CUDA_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, d.in, d.n, d.out, &one, w, d.in, dy,
                                  d.out, &zero, dx, d.in));
  }
}

} // namespace troupe::cuda
