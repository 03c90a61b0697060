// Fused softmax + cross-entropy, one row at a time: subtract the row maximum, exponentiate,
// normalize, and take -log p[label] as log(sum) - (x[label] - max), which never overflows and
// never takes the log of an underflowed zero. Row losses are summed in row order so the loss
// does not depend on how rows were split between threads.
#include <troupe/kernels/softmax_cross_entropy.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/parallel.hpp"

namespace troupe {

namespace {

void check_logits(const char* op, const tensor& logits, const std::vector<std::int32_t>& labels) {
  if (logits.rank() != 2)
    throw std::invalid_argument(std::string(op) + ": logits " + shape_string(logits.shape())
                                + " must be [N, K]");
  if (static_cast<std::int64_t>(labels.size()) != logits.dim(0))
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(labels.size())
                                + " labels for logits " + shape_string(logits.shape()));
  std::int64_t classes = logits.dim(1);
  for (std::size_t row = 0; row < labels.size(); ++row)
    if (labels[row] < 0 || labels[row] >= classes)
      throw std::out_of_range(std::string(op) + ": label " + std::to_string(labels[row])
                              + " in row " + std::to_string(row) + " is outside [0, "
                              + std::to_string(classes) + ")");
}

void check_top_k(const char* op, int top_k, std::int64_t classes, int lowest) {
  if (top_k < lowest || top_k > classes)
    throw std::invalid_argument(std::string(op) + ": top-k " + std::to_string(top_k)
                                + " is outside [" + std::to_string(lowest) + ", "
                                + std::to_string(classes) + "] (the classes)");
}

std::int64_t arg_max(const float* row, std::int64_t k) {
  return std::max_element(row, row + k) - row;
}

// Writes the softmax of `row` into `p` and returns -log p[label].
double softmax_row(const float* row, std::int64_t k, std::int32_t label, float* p) {
  float top = *std::max_element(row, row + k);
  float sum = 0.0f;
  for (std::int64_t j = 0; j < k; ++j) {
    p[j] = std::exp(row[j] - top);
    sum += p[j];
  }
  float inv = 1.0f / sum;
  for (std::int64_t j = 0; j < k; ++j)
    p[j] *= inv;
  return std::log(static_cast<double>(sum)) - (static_cast<double>(row[label]) - top);
}

constexpr std::int64_t row_grain_elements = 1 << 14;

} // namespace

bool label_in_top_k(const float* row, std::int64_t classes, std::int32_t label, std::int64_t k) {
  const float own = row[label];
  std::int64_t rank = 0;
  for (std::int64_t j = 0; j < classes; ++j)
    rank += row[j] > own || (row[j] == own && j < label) ? 1 : 0;
  return rank < k;
}

loss_result softmax_cross_entropy_forward(const tensor& logits,
                                          const std::vector<std::int32_t>& labels,
                                          tensor& probabilities, int top_k) {
  check_logits("softmax_cross_entropy_forward", logits, labels);
  check_top_k("softmax_cross_entropy_forward", top_k, logits.dim(1), 0);
  if (probabilities.shape() != logits.shape())
    throw std::invalid_argument("softmax_cross_entropy_forward: probabilities "
                                + shape_string(probabilities.shape()) + " and logits "
                                + shape_string(logits.shape()) + " must have the same shape");
  std::int64_t n = logits.dim(0), k = logits.dim(1);
  const float* x = logits.data();
  float* p = probabilities.data();
  std::vector<double> row_loss(static_cast<std::size_t>(n));
  std::vector<std::uint8_t> row_correct(static_cast<std::size_t>(n));
  std::vector<std::uint8_t> row_top_k(top_k > 0 ? static_cast<std::size_t>(n) : 0);
  cpu::parallel_range(n,
                      std::max<std::int64_t>(1, row_grain_elements / std::max<std::int64_t>(1, k)),
                      [&](std::int64_t b, std::int64_t e) {
                        for (std::int64_t i = b; i < e; ++i) {
                          row_correct[i] = arg_max(x + i * k, k) == labels[i];
                          if (top_k > 0)
                            row_top_k[i] = label_in_top_k(x + i * k, k, labels[i], top_k);
                          row_loss[i] = softmax_row(x + i * k, k, labels[i], p + i * k);
                        }
                      });
  loss_result result;
  for (std::int64_t i = 0; i < n; ++i) {
    result.loss_sum += row_loss[i];
    result.correct += row_correct[i];
  }
  for (auto in_top_k : row_top_k)
    result.top_k_correct += in_top_k;
  result.count = n;
  return result;
}

void softmax_cross_entropy_backward(const tensor& probabilities,
                                    const std::vector<std::int32_t>& labels, tensor& dlogits) {
  check_logits("softmax_cross_entropy_backward", probabilities, labels);
  if (dlogits.shape() != probabilities.shape())
    throw std::invalid_argument(
      "softmax_cross_entropy_backward: dlogits " + shape_string(dlogits.shape())
      + " and probabilities " + shape_string(probabilities.shape()) + " must have the same shape");
  std::int64_t n = probabilities.dim(0), k = probabilities.dim(1);
  const float* p = probabilities.data();
  float* d = dlogits.data();
  float inv_n = 1.0f / static_cast<float>(n);
  cpu::parallel_range(n,
                      std::max<std::int64_t>(1, row_grain_elements / std::max<std::int64_t>(1, k)),
                      [&](std::int64_t b, std::int64_t e) {
                        for (std::int64_t i = b; i < e; ++i) {
                          for (std::int64_t j = 0; j < k; ++j)
                            d[i * k + j] = p[i * k + j] * inv_n;
                          d[i * k + labels[i]] -= inv_n;
                        }
                      });
}

std::int64_t count_correct(const tensor& logits, const std::vector<std::int32_t>& labels) {
  check_logits("count_correct", logits, labels);
  std::int64_t n = logits.dim(0), k = logits.dim(1), correct = 0;
  const float* x = logits.data();
  for (std::int64_t i = 0; i < n; ++i)
    correct += arg_max(x + i * k, k) == labels[i];
  return correct;
}

std::int64_t count_top_k(const tensor& logits, const std::vector<std::int32_t>& labels, int k) {
  check_logits("count_top_k", logits, labels);
  check_top_k("count_top_k", k, logits.dim(1), 1);
  const std::int64_t n = logits.dim(0), classes = logits.dim(1);
  std::int64_t in_top_k = 0;
  for (std::int64_t i = 0; i < n; ++i)
    in_top_k += label_in_top_k(logits.data() + i * classes, classes, labels[i], k) ? 1 : 0;
  return in_top_k;
}

} // namespace troupe
