// Accuracy, top-k and loss come from the kernel training uses (softmax_cross_entropy.hpp, whose
// header states the tie rule: top-1 is the arg-max, the first largest logit); only the
// per-class tallies are counted here.
#include "apps/classification_scores.hpp"

#include <algorithm>
#include <stdexcept>

#include <troupe/kernels/softmax_cross_entropy.hpp>

namespace troupe {

namespace {

double ratio(double part, std::int64_t whole) {
  return whole > 0 ? part / static_cast<double>(whole) : 0.0;
}

} // namespace

classification_scores::classification_scores(int classes, int top_k)
    : classes_(classes), top_k_(top_k),
      class_examples_(static_cast<std::size_t>(std::max(classes, 0))),
      class_correct_(class_examples_.size()) {
  if (classes < 1 || top_k < 1 || top_k > classes)
    throw std::invalid_argument("scores: top-k " + std::to_string(top_k)
                                + " must be between 1 and the " + std::to_string(classes)
                                + " classes");
}

void classification_scores::add(const tensor& logits, const std::vector<std::int32_t>& labels) {
  const auto rows = static_cast<std::int64_t>(labels.size());
  if (logits.shape() != shape_t{rows, classes_})
    throw std::invalid_argument("scores: logits of shape " + shape_string(logits.shape()) + " for "
                                + std::to_string(rows) + " labels of " + std::to_string(classes_)
                                + " classes");
  tensor probabilities(logits.shape());
  // The kernel checks the labels.
  const auto loss = softmax_cross_entropy_forward(logits, labels, probabilities, top_k_);
  loss_sum_ += loss.loss_sum;
  correct_ += loss.correct;
  top_k_correct_ += loss.top_k_correct;
  examples_ += rows;
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * classes_;
    const auto label = labels[static_cast<std::size_t>(i)];
    ++class_examples_[static_cast<std::size_t>(label)];
    const bool correct = label_in_top_k(row, classes_, label, 1); // the arg-max
    class_correct_[static_cast<std::size_t>(label)] += correct ? 1 : 0;
  }
}

double classification_scores::accuracy() const {
  return ratio(static_cast<double>(correct_), examples_);
}
double classification_scores::top_k_accuracy() const {
  return ratio(static_cast<double>(top_k_correct_), examples_);
}
double classification_scores::mean_loss() const {
  return ratio(loss_sum_, examples_);
}

double classification_scores::class_accuracy(int label) const {
  const auto l = static_cast<std::size_t>(label);
  return ratio(static_cast<double>(class_correct_.at(l)), class_examples_.at(l));
}

} // namespace troupe
