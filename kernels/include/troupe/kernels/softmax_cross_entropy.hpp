// Softmax followed by cross-entropy against integer labels, fused for numerical stability
// (log-sum-exp with the row maximum subtracted), and the counts classification reports:
// arg-max accuracy and, on request, top-k accuracy (MXNet's TopKAccuracy).
//
// Ranks are deterministic: a class ranks above another when its logit is larger, or equal and
// its index smaller. So the label's rank is the number of logits strictly above its own plus
// the number of equal ones before it, a label is in the top k when that rank is below k, and
// the top 1 is exactly the arg-max (std::max_element's first maximum): top-1 equals accuracy
// for any logits without NaN (a NaN loss stops training anyway).
#pragma once

#include <cstdint>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct loss_result {
  double loss_sum = 0;            ///< sum over the batch of -log p[label]
  std::int64_t correct = 0;       ///< rows whose arg-max equals the label
  std::int64_t count = 0;         ///< rows
  std::int64_t top_k_correct = 0; ///< rows whose label ranks among the top k (0: k not asked)
};

/// Whether `label` ranks among the `k` largest of `row`'s `classes` logits (header note).
bool label_in_top_k(const float* row, std::int64_t classes, std::int32_t label, std::int64_t k);

/// logits [N, K], labels N values in [0, K) (throws std::out_of_range naming the row and
/// value otherwise). Writes probabilities [N, K] for the backward pass. top_k > 0 also counts
/// top_k_correct (std::invalid_argument unless 0 <= top_k <= K).
loss_result softmax_cross_entropy_forward(const tensor& logits,
                                          const std::vector<std::int32_t>& labels,
                                          tensor& probabilities, int top_k = 0);
/// dlogits = (probabilities - onehot(labels)) / N: the gradient of the mean loss.
void softmax_cross_entropy_backward(const tensor& probabilities,
                                    const std::vector<std::int32_t>& labels, tensor& dlogits);
/// Arg-max accuracy count only (validation without a backward pass).
std::int64_t count_correct(const tensor& logits, const std::vector<std::int32_t>& labels);
/// Rows of logits [N, K] whose label ranks among the top k, 1 <= k <= K (std::invalid_argument
/// otherwise).
std::int64_t count_top_k(const tensor& logits, const std::vector<std::int32_t>& labels, int k);

} // namespace troupe
