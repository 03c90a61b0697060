// What `troupe eval` reports about a classifier on a dataset: accuracy (arg-max, as training's
// validation counts it), top-k accuracy, mean cross-entropy, and accuracy per class. Batches
// are added one at a time as logits and labels; the loss comes from the same kernel that
// validation uses, so the figures equal the training run's validation figures.
//
// Thread-safety: a value; one thread adds to it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

class classification_scores {
public:
  /// Throws std::invalid_argument for classes < 1 or top_k outside [1, classes].
  classification_scores(int classes, int top_k);

  /// logits [N, classes], N labels in [0, classes): std::invalid_argument for another shape,
  /// std::out_of_range for a label outside.
  void add(const tensor& logits, const std::vector<std::int32_t>& labels);

  std::int64_t examples() const { return examples_; }
  double accuracy() const;
  double top_k_accuracy() const;
  double mean_loss() const;
  int top_k() const { return top_k_; }
  int classes() const { return classes_; }
  /// Per class: correct / examples of that class (0 for a class with no example).
  double class_accuracy(int label) const;
  std::int64_t class_examples(int label) const {
    return class_examples_.at(static_cast<std::size_t>(label));
  }

private:
  int classes_, top_k_;
  std::int64_t examples_ = 0, correct_ = 0, top_k_correct_ = 0;
  double loss_sum_ = 0;
  std::vector<std::int64_t> class_examples_, class_correct_;
};

} // namespace troupe
