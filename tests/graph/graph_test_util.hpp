// Helpers shared by the graph tests: seeded random tensors and central-difference gradient
// checks, for a single layer (loss = sum(output * r) for a fixed random r) and for a whole
// model (loss = mean softmax cross-entropy, the loss train_step differentiates).
//
// Sums run in double so the float rounding of the forward pass stays well below the
// difference step; a check passes when |numeric - analytic| <= abs_tol + rel_tol * |analytic|.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <troupe/graph/layer.hpp>
#include <troupe/graph/model.hpp>
#include <troupe/kernels/softmax_cross_entropy.hpp>

namespace troupe::test {

inline tensor random_tensor(shape_t shape, std::uint32_t seed, float low = -1.0f,
                            float high = 1.0f) {
  tensor t(std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(low, high);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = dist(gen);
  return t;
}

/// Values at least `gap` apart from each other and from zero, in random order: keeps ReLU and
/// max pooling away from their kinks under a perturbation smaller than gap / 2.
inline tensor spread_tensor(shape_t shape, std::uint32_t seed, float gap = 0.05f) {
  tensor t(std::move(shape));
  std::vector<float> values;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    values.push_back((i % 2 == 0 ? 1.0f : -1.0f) * gap * static_cast<float>(i / 2 + 1));
  std::shuffle(values.begin(), values.end(), std::mt19937(seed));
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

inline double dot(const tensor& a, const tensor& b) {
  double sum = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    sum += static_cast<double>(a.data()[i]) * b.data()[i];
  return sum;
}

inline void check_close(double numeric, double analytic, double abs_tol, double rel_tol,
                        const std::string& what) {
  INFO(what << ": numeric " << numeric << ", analytic " << analytic);
  CHECK(std::abs(numeric - analytic) <= abs_tol + rel_tol * std::abs(analytic));
}

/// A built layer, its inputs, and everything needed to run it standalone.
struct layer_harness {
  layer& l;
  std::vector<tensor> inputs;
  shape_t output_shape; ///< for the batch of `inputs`

  double loss(const tensor& r, bool training) {
    std::vector<const tensor*> ptrs;
    for (auto& x : inputs)
      ptrs.push_back(&x);
    tensor y(output_shape);
    l.forward(ptrs, y, training);
    return dot(y, r);
  }
};

/// Checks d(sum(y * r))/d(inputs and parameters) of a layer by central differences.
/// Parameter values must be set and inputs filled before the call.
inline void check_layer_gradients(layer_harness h, std::uint32_t seed, double step = 1e-2,
                                  double abs_tol = 2e-3, double rel_tol = 2e-2) {
  tensor r = random_tensor(h.output_shape, seed);
  std::vector<const tensor*> ptrs;
  for (auto& x : h.inputs)
    ptrs.push_back(&x);
  tensor y(h.output_shape);
  h.l.forward(ptrs, y, true);
  std::vector<tensor> dinputs;
  for (auto& x : h.inputs)
    dinputs.emplace_back(x.shape());
  std::vector<tensor*> dptrs;
  for (auto& d : dinputs)
    dptrs.push_back(&d);
  for (auto& p : h.l.parameters())
    p.grad = tensor(p.value.shape());
  h.l.backward(ptrs, y, r, dptrs);

  auto probe = [&](tensor& t, const tensor& analytic, const std::string& name) {
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const float saved = t.data()[i];
      t.data()[i] = saved + static_cast<float>(step);
      const double up = h.loss(r, true);
      t.data()[i] = saved - static_cast<float>(step);
      const double down = h.loss(r, true);
      t.data()[i] = saved;
      check_close((up - down) / (2 * step), analytic.data()[i], abs_tol, rel_tol,
                  name + "[" + std::to_string(i) + "]");
    }
  };
  for (std::size_t k = 0; k < h.inputs.size(); ++k)
    probe(h.inputs[k], dinputs[k], "input " + std::to_string(k));
  for (auto& p : h.l.parameters())
    probe(p.value, p.grad, p.name);
}

/// Mean cross-entropy of a training-mode forward (batch statistics, as train_step uses).
inline double model_loss(model& m, const tensor& x, const std::vector<std::int32_t>& labels) {
  const tensor& logits = m.forward(x, true);
  tensor probabilities(logits.shape());
  loss_result r = softmax_cross_entropy_forward(logits, labels, probabilities);
  return r.loss_sum / static_cast<double>(r.count);
}

} // namespace troupe::test
