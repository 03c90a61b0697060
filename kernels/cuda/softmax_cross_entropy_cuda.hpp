// Softmax followed by cross-entropy against integer labels (troupe/kernels/
// softmax_cross_entropy.hpp) on device memory: logits, labels and probabilities stay on the
// device; the loss sum and the correct count come back to the host, so the forward,
// count_correct and count_top_k wait for the stream (a copy of three numbers and a stream
// synchronize).
//
// Labels are checked on the device: a label outside [0, K) throws std::out_of_range naming the
// first such row and its value, worded as the CPU op ("label 12 in row 3 is outside [0, 10)"),
// after the kernels ran (the outputs are then unspecified). The backward checks them too and so
// also waits for the stream. Other bad arguments throw std::invalid_argument before anything is
// queued. Private to kernels/ (the CUDA backend).
#pragma once

#include <cstdint>

#include <troupe/kernels/softmax_cross_entropy.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

/// logits [rows, classes] row-major, labels [rows] (int32, device) in [0, classes); writes
/// probabilities [rows, classes], which must not overlap the logits. loss_sum is -log p[label]
/// summed over the rows in double, in a fixed order (the same result every run).
loss_result softmax_cross_entropy_forward(cuda_context& context, const float* logits,
                                          const std::int32_t* labels, std::int64_t rows,
                                          std::int64_t classes, float* probabilities);
/// dlogits = (probabilities - onehot(labels)) / rows (both [rows, classes]): the gradient of
/// the mean loss. dlogits may be probabilities.
void softmax_cross_entropy_backward(cuda_context& context, const float* probabilities,
                                    const std::int32_t* labels, std::int64_t rows,
                                    std::int64_t classes, float* dlogits);
/// Rows of logits [rows, classes] whose arg-max (the first, on ties) equals the label.
std::int64_t count_correct(cuda_context& context, const float* logits, const std::int32_t* labels,
                           std::int64_t rows, std::int64_t classes);
/// Rows of logits [rows, classes] whose label ranks among the top k (troupe::label_in_top_k's
/// order: larger logit first, then lower index); 1 <= k <= classes, else std::invalid_argument.
std::int64_t count_top_k(cuda_context& context, const float* logits, const std::int32_t* labels,
                         std::int64_t rows, std::int64_t classes, int k);

} // namespace troupe::cuda
