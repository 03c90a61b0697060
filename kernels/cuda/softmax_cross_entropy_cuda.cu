// Fused softmax + cross-entropy with one warp per row: the lanes stride over the row's classes,
// find the arg-max (which gives both the maximum to subtract and the prediction), sum the
// exponentials, and normalise; lane 0 writes the row's loss, log(sum) - (x[label] - max), in
// double, and a status byte (wrong, correct, or label out of range). A warp per row suits the
// class counts we train (10 to a few thousand); warp shuffles need no shared memory or barrier.
//
// The loss sum is a second pass: one block adds the per-row losses in a fixed order (strided
// partial sums, then a tree), so it is the same every run and within double rounding of the
// CPU's row-order sum. The same pass counts the correct rows and finds the first bad label, and
// the three numbers come back to the host in one copy.
#include "kernels/cuda/softmax_cross_entropy_cuda.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace troupe::cuda {

namespace {

constexpr int warp_size = 32;
constexpr int rows_per_block = block_threads / warp_size;
constexpr unsigned full_warp = 0xffffffffu;

enum row_status : std::uint8_t { row_wrong = 0, row_correct = 1, row_bad_label = 2 };

constexpr unsigned long long no_bad_row = ~0ull;

struct rows_summary {
  double loss_sum;
  unsigned long long correct;
  unsigned long long first_bad_row; // no_bad_row when every label is in range
};

// Per-row results in the context's workspace: the summary, then rows losses, then rows status
// bytes (the losses start 8-byte aligned: the summary's size is a multiple of 8).
struct row_scratch {
  rows_summary* summary;
  double* loss;
  std::uint8_t* status;
};

row_scratch scratch_for(cuda_context& context, std::int64_t rows) {
  const auto count = static_cast<std::size_t>(rows);
  auto* base = static_cast<char*>(
    context.workspace(sizeof(rows_summary) + count * (sizeof(double) + sizeof(std::uint8_t))));
  return {reinterpret_cast<rows_summary*>(base),
          reinterpret_cast<double*>(base + sizeof(rows_summary)),
          reinterpret_cast<std::uint8_t*>(base + sizeof(rows_summary) + count * sizeof(double))};
}

// The warp's row, and the step to its next one: rows_per_block warps per block, grid-strided.
__device__ std::int64_t first_row() {
  return std::int64_t{blockIdx.x} * rows_per_block + threadIdx.x / warp_size;
}
__device__ std::int64_t row_step() {
  return std::int64_t{gridDim.x} * rows_per_block;
}

// The row's arg-max as std::max_element finds it: the first maximum. NaN compares false both
// ways, so std::max_element never moves to a NaN but never leaves a NaN first element; both
// are reproduced. Every lane returns the same index. Needs k >= 1 and all 32 lanes.
__device__ std::int64_t warp_arg_max(const float* row, std::int64_t k, int lane) {
  constexpr std::int64_t none = -1;
  float best = 0.0f;
  std::int64_t at = none;
  for (std::int64_t j = lane; j < k; j += warp_size) {
    const float v = row[j];
    if (!isnan(v) && (at == none || best < v)) {
      best = v;
      at = j;
    }
  }
  // Larger value first, then lower index: a total order, so every lane ends on the same pick.
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(full_warp, best, offset);
    const std::int64_t other_at = __shfl_xor_sync(full_warp, at, offset);
    if (other_at != none && (at == none || best < other || (best == other && other_at < at))) {
      best = other;
      at = other_at;
    }
  }
  return isnan(row[0]) || at == none ? 0 : at;
}

// Butterfly sum: a + b == b + a in floating point, so every lane holds the same total.
__device__ float warp_sum(float value) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    value += __shfl_xor_sync(full_warp, value, offset);
  return value;
}

__device__ bool label_outside(std::int32_t label, std::int64_t k) {
  return label < 0 || label >= k;
}

__global__ void softmax_forward_kernel(const float* logits, const std::int32_t* labels,
                                       std::int64_t rows, std::int64_t k, float* probabilities,
                                       double* row_loss, std::uint8_t* status) {
  const int lane = threadIdx.x % warp_size;
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    const std::int32_t label = labels[r];
    if (label_outside(label, k)) { // the same for the whole warp: no lane is left behind
      if (lane == 0) {
        status[r] = row_bad_label;
        row_loss[r] = 0.0;
      }
      continue;
    }
    const float* x = logits + r * k;
    float* p = probabilities + r * k;
    const std::int64_t at = warp_arg_max(x, k, lane);
    const float top = x[at];
    float sum = 0.0f;
    for (std::int64_t j = lane; j < k; j += warp_size) {
      const float e = expf(x[j] - top);
      p[j] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (std::int64_t j = lane; j < k; j += warp_size)
      p[j] *= inv; // the element this lane wrote above
    if (lane == 0) {
      status[r] = at == label ? row_correct : row_wrong;
      row_loss[r] = log(static_cast<double>(sum)) - (static_cast<double>(x[label]) - top);
    }
  }
}

__global__ void count_correct_kernel(const float* logits, const std::int32_t* labels,
                                     std::int64_t rows, std::int64_t k, std::uint8_t* status) {
  const int lane = threadIdx.x % warp_size;
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    const std::int32_t label = labels[r];
    if (label_outside(label, k)) {
      if (lane == 0)
        status[r] = row_bad_label;
      continue;
    }
    const std::int64_t at = warp_arg_max(logits + r * k, k, lane);
    if (lane == 0)
      status[r] = at == label ? row_correct : row_wrong;
  }
}

// The label's rank as label_in_top_k counts it (softmax_cross_entropy.hpp): logits above its
// own, plus equal ones at a lower index; each lane counts its stride, a butterfly adds them up.
__global__ void count_top_k_kernel(const float* logits, const std::int32_t* labels,
                                   std::int64_t rows, std::int64_t k, std::int64_t top_k,
                                   std::uint8_t* status) {
  const int lane = threadIdx.x % warp_size;
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    const std::int32_t label = labels[r];
    if (label_outside(label, k)) {
      if (lane == 0)
        status[r] = row_bad_label;
      continue;
    }
    const float* x = logits + r * k;
    const float own = x[label];
    unsigned long long rank = 0;
    for (std::int64_t j = lane; j < k; j += warp_size)
      rank += x[j] > own || (x[j] == own && j < label) ? 1 : 0;
    for (int offset = warp_size / 2; offset > 0; offset /= 2)
      rank += __shfl_xor_sync(full_warp, rank, offset);
    if (lane == 0)
      status[r] = rank < static_cast<unsigned long long>(top_k) ? row_correct : row_wrong;
  }
}

// d = p * (1/N), then d[label] -= 1/N: two roundings, as the CPU op (__fmul_rn is never fused
// with the subtraction into one multiply-add).
__global__ void softmax_backward_kernel(const float* probabilities, const std::int32_t* labels,
                                        std::int64_t rows, std::int64_t k, float inv_rows,
                                        float* dlogits, std::uint8_t* status) {
  const int lane = threadIdx.x % warp_size;
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    const std::int32_t label = labels[r];
    const bool bad = label_outside(label, k);
    if (lane == 0)
      status[r] = bad ? row_bad_label : row_wrong;
    if (bad)
      continue;
    for (std::int64_t j = lane; j < k; j += warp_size) {
      const float d = __fmul_rn(probabilities[r * k + j], inv_rows);
      dlogits[r * k + j] = j == label ? d - inv_rows : d;
    }
  }
}

// One block of block_threads: strided partial sums per thread, then a tree in shared memory.
// The order depends on nothing but `rows`, so the double loss sum is the same every run.
__global__ void summarize_rows_kernel(const double* row_loss, const std::uint8_t* status,
                                      std::int64_t rows, rows_summary* summary) {
  __shared__ double loss[block_threads];
  __shared__ unsigned long long correct[block_threads], bad[block_threads];
  const int t = threadIdx.x;
  double l = 0.0;
  unsigned long long c = 0, b = no_bad_row;
  for (std::int64_t r = t; r < rows; r += block_threads) {
    if (row_loss != nullptr)
      l += row_loss[r];
    c += status[r] == row_correct;
    if (status[r] == row_bad_label && b == no_bad_row)
      b = static_cast<unsigned long long>(r); // rows ascend: the thread's first is its lowest
  }
  loss[t] = l;
  correct[t] = c;
  bad[t] = b;
  __syncthreads();
  for (int half = block_threads / 2; half > 0; half /= 2) {
    if (t < half) {
      loss[t] += loss[t + half];
      correct[t] += correct[t + half];
      bad[t] = bad[t + half] < bad[t] ? bad[t + half] : bad[t];
    }
    __syncthreads();
  }
  if (t == 0)
    *summary = rows_summary{loss[0], correct[0], bad[0]};
}

// Queues the summary pass, waits for it, and throws for the first row with a bad label.
rows_summary summarize(const char* op, cuda_context& context, const row_scratch& scratch,
                       bool with_loss, const std::int32_t* labels, std::int64_t rows,
                       std::int64_t classes) {
  summarize_rows_kernel<<<1, block_threads, 0, context.stream()>>>(
    with_loss ? scratch.loss : nullptr, scratch.status, rows, scratch.summary);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  rows_summary summary{};
  TROUPE_CUDA_CHECK(cudaMemcpyAsync(&summary, scratch.summary, sizeof summary,
                                    cudaMemcpyDeviceToHost, context.stream()));
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(context.stream()));
  if (summary.first_bad_row != no_bad_row) {
    std::int32_t label = 0;
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(&label, labels + summary.first_bad_row, sizeof label,
                                      cudaMemcpyDeviceToHost, context.stream()));
    TROUPE_CUDA_CHECK(cudaStreamSynchronize(context.stream()));
    throw std::out_of_range(std::string(op) + ": label " + std::to_string(label) + " in row "
                            + std::to_string(summary.first_bad_row) + " is outside [0, "
                            + std::to_string(classes) + ")");
  }
  return summary;
}

void check_arguments(const char* op, const char* matrix_name, const void* matrix,
                     const std::int32_t* labels, std::int64_t rows, std::int64_t classes) {
  if (rows < 0 || classes < 0)
    throw std::invalid_argument(std::string(op) + ": " + matrix_name + " [" + std::to_string(rows)
                                + ", " + std::to_string(classes) + "] has a negative extent");
  if (rows * classes > 0 && matrix == nullptr)
    throw std::invalid_argument(std::string(op) + ": " + matrix_name + " is null for ["
                                + std::to_string(rows) + ", " + std::to_string(classes) + "]");
  if (rows > 0 && labels == nullptr)
    throw std::invalid_argument(std::string(op) + ": labels is null for " + std::to_string(rows)
                                + " rows");
}

unsigned grid_for_rows(std::int64_t rows) {
  return grid_for(static_cast<std::size_t>(rows) * warp_size); // one warp per row
}

} // namespace

loss_result softmax_cross_entropy_forward(cuda_context& context, const float* logits,
                                          const std::int32_t* labels, std::int64_t rows,
                                          std::int64_t classes, float* probabilities) {
  const char* op = "softmax_cross_entropy_forward";
  check_arguments(op, "logits", logits, labels, rows, classes);
  if (rows * classes > 0 && probabilities == nullptr)
    throw std::invalid_argument(std::string(op) + ": probabilities is null");
  loss_result result;
  result.count = rows;
  if (rows == 0)
    return result;
  const row_scratch scratch = scratch_for(context, rows);
  softmax_forward_kernel<<<grid_for_rows(rows), block_threads, 0, context.stream()>>>(
    logits, labels, rows, classes, probabilities, scratch.loss, scratch.status);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  const rows_summary summary = summarize(op, context, scratch, true, labels, rows, classes);
  result.loss_sum = summary.loss_sum;
  result.correct = static_cast<std::int64_t>(summary.correct);
  return result;
}

void softmax_cross_entropy_backward(cuda_context& context, const float* probabilities,
                                    const std::int32_t* labels, std::int64_t rows,
                                    std::int64_t classes, float* dlogits) {
  const char* op = "softmax_cross_entropy_backward";
  check_arguments(op, "probabilities", probabilities, labels, rows, classes);
  if (rows * classes > 0 && dlogits == nullptr)
    throw std::invalid_argument(std::string(op) + ": dlogits is null");
  if (rows == 0)
    return;
  const row_scratch scratch = scratch_for(context, rows);
  softmax_backward_kernel<<<grid_for_rows(rows), block_threads, 0, context.stream()>>>(
    probabilities, labels, rows, classes, 1.0f / static_cast<float>(rows), dlogits, scratch.status);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  summarize(op, context, scratch, false, labels, rows, classes);
}

std::int64_t count_correct(cuda_context& context, const float* logits, const std::int32_t* labels,
                           std::int64_t rows, std::int64_t classes) {
  const char* op = "count_correct";
  check_arguments(op, "logits", logits, labels, rows, classes);
  if (rows == 0)
    return 0;
  const row_scratch scratch = scratch_for(context, rows);
  count_correct_kernel<<<grid_for_rows(rows), block_threads, 0, context.stream()>>>(
    logits, labels, rows, classes, scratch.status);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  return static_cast<std::int64_t>(
    summarize(op, context, scratch, false, labels, rows, classes).correct);
}

std::int64_t count_top_k(cuda_context& context, const float* logits, const std::int32_t* labels,
                         std::int64_t rows, std::int64_t classes, int k) {
  const char* op = "count_top_k";
  check_arguments(op, "logits", logits, labels, rows, classes);
  if (k < 1 || k > classes)
    throw std::invalid_argument(std::string(op) + ": top-k " + std::to_string(k)
                                + " is outside [1, " + std::to_string(classes) + "] (the classes)");
  if (rows == 0)
    return 0;
  const row_scratch scratch = scratch_for(context, rows);
  count_top_k_kernel<<<grid_for_rows(rows), block_threads, 0, context.stream()>>>(
    logits, labels, rows, classes, k, scratch.status);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  return static_cast<std::int64_t>(
    summarize(op, context, scratch, false, labels, rows, classes).correct);
}

} // namespace troupe::cuda
