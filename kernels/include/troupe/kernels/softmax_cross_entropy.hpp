// Softmax followed by cross-entropy against integer labels, fused for numerical stability
// (log-sum-exp with the row maximum subtracted).
#pragma once

#include <cstdint>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct loss_result {
  double loss_sum = 0;        ///< sum over the batch of -log p[label]
  std::int64_t correct = 0;   ///< rows whose arg-max equals the label
  std::int64_t count = 0;     ///< rows
};

/// logits [N, K], labels N values in [0, K) (throws std::out_of_range naming the row and
/// value otherwise). Writes probabilities [N, K] for the backward pass.
loss_result softmax_cross_entropy_forward(const tensor& logits,
                                          const std::vector<std::int32_t>& labels,
                                          tensor& probabilities);
/// dlogits = (probabilities - onehot(labels)) / N: the gradient of the mean loss.
void softmax_cross_entropy_backward(const tensor& probabilities,
                                    const std::vector<std::int32_t>& labels, tensor& dlogits);
/// Arg-max accuracy count only (validation without a backward pass).
std::int64_t count_correct(const tensor& logits, const std::vector<std::int32_t>& labels);

} // namespace troupe
