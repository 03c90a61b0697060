// softmax_cross_entropy_cuda against the CPU op: the loss sum, the correct count and the
// probabilities of the forward, the backward from the same probabilities (in place too), and
// count_correct and count_top_k, at class counts from 1 to 3000 and batches from 1 to more rows
// than one grid of warps covers; logits with many ties (the arg-max must be the first, as the
// CPU's); the first out-of-range label reported with its row and value by all three ops; and
// argument errors, which throw before anything is queued.
//
// Tolerances: the loss sum within 1e-5 relative to max(1, |loss|), relative_error's scale (the
// per-row float sums of exponentials add in another order, an ulp of the sum or so per row,
// which a single confident row's near-zero loss could not absorb in a purely relative bound;
// the row losses are summed in double); probabilities relative_error <= 1e-4 (expf and the
// order of the row sum); the correct count exact (the same comparisons); the backward exact
// (the same multiplication and subtraction of the same probabilities).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <troupe/kernels/softmax_cross_entropy.hpp>

#include "gpu_compare.hpp"
#include "kernels/cuda/softmax_cross_entropy_cuda.hpp"

using namespace troupe;
using cuda_test::download;
using cuda_test::random_tensor;
using cuda_test::relative_error;
using cuda_test::upload;

namespace {

constexpr double loss_tolerance = 1e-5;
constexpr double probability_tolerance = 1e-4;

// The labels in device memory (upload's counterpart for int32).
cuda::device_buffer upload_labels(const std::vector<std::int32_t>& labels) {
  cuda::device_buffer buffer(labels.size() * sizeof(std::int32_t));
  if (!labels.empty())
    TROUPE_CUDA_CHECK(
      cudaMemcpy(buffer.get(), labels.data(), buffer.bytes(), cudaMemcpyHostToDevice));
  TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
  return buffer;
}

std::vector<std::int32_t> random_labels(std::int64_t rows, std::int64_t classes,
                                        std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(classes - 1));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
  for (auto& label : labels)
    label = pick(gen);
  return labels;
}

// Runs forward, backward, count_correct and count_top_k on both sides and compares them.
void compare_with_cpu(cuda::cuda_context& context, const tensor& logits,
                      const std::vector<std::int32_t>& labels) {
  const shape_t s = logits.shape();
  const std::int64_t rows = s[0], classes = s[1];
  tensor probabilities(s), dlogits(s);
  const loss_result want = softmax_cross_entropy_forward(logits, labels, probabilities);
  softmax_cross_entropy_backward(probabilities, labels, dlogits);

  auto glogits = upload(logits), glabels = upload_labels(labels),
       gprobabilities = upload(tensor(s));
  const auto* plabels = glabels.as<std::int32_t>();
  const loss_result got = cuda::softmax_cross_entropy_forward(
    context, glogits.as<float>(), plabels, rows, classes, gprobabilities.as<float>());
  CHECK(got.count == want.count);
  CHECK(got.correct == want.correct);
  CHECK(std::fabs(got.loss_sum - want.loss_sum)
        <= loss_tolerance * std::max(1.0, std::fabs(want.loss_sum)));
  CHECK(relative_error(download(gprobabilities, s), probabilities) <= probability_tolerance);
  CHECK(cuda::count_correct(context, glogits.as<float>(), plabels, rows, classes) == want.correct);
  // Top-k at the ends and in between: the same ranks, ties included (top-1 is the arg-max).
  for (const auto k :
       {std::int64_t{1}, (classes + 1) / 2, std::min<std::int64_t>(classes, 5), classes}) {
    const int top_k = static_cast<int>(k);
    CHECK(cuda::count_top_k(context, glogits.as<float>(), plabels, rows, classes, top_k)
          == count_top_k(logits, labels, top_k));
  }

  // The backward from the CPU's probabilities, so it is compared on its own.
  auto gcpu_probabilities = upload(probabilities), gdlogits = upload(tensor(s));
  cuda::softmax_cross_entropy_backward(context, gcpu_probabilities.as<float>(), plabels, rows,
                                       classes, gdlogits.as<float>());
  CHECK(relative_error(download(gdlogits, s), dlogits) == 0);
  cuda::softmax_cross_entropy_backward(context, gcpu_probabilities.as<float>(), plabels, rows,
                                       classes, gcpu_probabilities.as<float>());
  CHECK(relative_error(download(gcpu_probabilities, s), dlogits) == 0);
}

} // namespace

TEST_CASE("cuda softmax cross-entropy equals the CPU op", "[cuda]") {
  struct loss_case {
    std::int64_t rows, classes;
  };
  const loss_case cases[] = {
    {1, 1}, {1, 10}, {7, 2}, {128, 10}, {37, 1000}, {300, 33}, {5, 3000},
  };
  cuda::cuda_context context(0);
  std::uint32_t seed = 1;
  for (const auto& c : cases) {
    INFO("logits [" << c.rows << ", " << c.classes << "]");
    // Logits in [-8, 8): confident rows and hopeless ones, so losses range widely.
    const tensor logits = random_tensor({c.rows, c.classes}, seed++, -8.0f, 8.0f);
    compare_with_cpu(context, logits, random_labels(c.rows, c.classes, seed++));
  }
}

TEST_CASE("cuda softmax cross-entropy covers more rows than one grid of warps", "[cuda][large]") {
  // A warp per row, 8 rows per block, at most 65535 * 8 blocks: 4194240 rows per pass.
  const std::int64_t rows = 4200000, classes = 2;
  cuda::cuda_context context(0);
  const tensor logits = random_tensor({rows, classes}, 5, -4.0f, 4.0f);
  compare_with_cpu(context, logits, random_labels(rows, classes, 6));
}

TEST_CASE("cuda arg-max breaks ties as the CPU does", "[cuda]") {
  // Logits drawn from {0, 1, 2, 3}: most rows tie for their maximum; the first one counts.
  const std::int64_t rows = 500, classes = 10;
  tensor logits({rows, classes});
  std::mt19937 gen(3);
  for (std::int64_t i = 0; i < logits.numel(); ++i)
    logits.data()[i] = static_cast<float>(gen() % 4);
  for (std::int64_t j = 0; j < classes; ++j)
    logits.data()[j] = 1.0f; // row 0 all equal: the prediction is class 0
  std::vector<std::int32_t> labels = random_labels(rows, classes, 4);
  labels[0] = 0;
  cuda::cuda_context context(0);
  compare_with_cpu(context, logits, labels);
}

TEST_CASE("cuda softmax cross-entropy names the first label out of range", "[cuda]") {
  const std::int64_t rows = 12, classes = 10;
  const tensor logits = random_tensor({rows, classes}, 1);
  std::vector<std::int32_t> labels = random_labels(rows, classes, 2);
  labels[3] = -1;
  labels[7] = 10;
  cuda::cuda_context context(0);
  auto glogits = upload(logits), glabels = upload_labels(labels),
       gout = upload(tensor({rows, classes}));
  const auto* plabels = glabels.as<std::int32_t>();
  CHECK_THROWS_WITH(cuda::softmax_cross_entropy_forward(context, glogits.as<float>(), plabels, rows,
                                                        classes, gout.as<float>()),
                    "softmax_cross_entropy_forward: label -1 in row 3 is outside [0, 10)");
  CHECK_THROWS_AS(cuda::softmax_cross_entropy_forward(context, glogits.as<float>(), plabels, rows,
                                                      classes, gout.as<float>()),
                  std::out_of_range);
  CHECK_THROWS_WITH(cuda::softmax_cross_entropy_backward(context, glogits.as<float>(), plabels,
                                                         rows, classes, gout.as<float>()),
                    "softmax_cross_entropy_backward: label -1 in row 3 is outside [0, 10)");
  CHECK_THROWS_WITH(cuda::count_correct(context, glogits.as<float>(), plabels, rows, classes),
                    "count_correct: label -1 in row 3 is outside [0, 10)");

  // Only row 7 bad now, with a label past the end; and the context still works afterwards.
  labels[3] = 0;
  auto glabels7 = upload_labels(labels);
  CHECK_THROWS_WITH(
    cuda::count_correct(context, glogits.as<float>(), glabels7.as<std::int32_t>(), rows, classes),
    "count_correct: label 10 in row 7 is outside [0, 10)");
  labels[7] = 9;
  compare_with_cpu(context, logits, labels);
}

TEST_CASE("cuda softmax cross-entropy argument errors throw before anything is queued", "[cuda]") {
  const shape_t s{4, 3};
  const tensor sentinel = random_tensor(s, 9);
  cuda::cuda_context context(0);
  auto logits = upload(random_tensor(s, 1)), out = upload(sentinel),
       labels = upload_labels({0, 1, 2, 0});
  const float* px = logits.as<float>();
  float* po = out.as<float>();
  const auto* pl = labels.as<std::int32_t>();

  CHECK_THROWS_WITH(cuda::softmax_cross_entropy_forward(context, px, pl, -1, 3, po),
                    Catch::Contains("negative extent"));
  CHECK_THROWS_AS(cuda::softmax_cross_entropy_forward(context, px, nullptr, 4, 3, po),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::softmax_cross_entropy_forward(context, nullptr, pl, 4, 3, po),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::softmax_cross_entropy_forward(context, px, pl, 4, 3, nullptr),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::softmax_cross_entropy_backward(context, px, pl, 4, -3, po),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::softmax_cross_entropy_backward(context, px, nullptr, 4, 3, po),
                  std::invalid_argument);
  CHECK_THROWS_AS(cuda::count_correct(context, px, nullptr, 4, 3), std::invalid_argument);
  CHECK(relative_error(download(out, s), sentinel) == 0); // nothing was written

  // An empty batch is no error: no loss, no rows.
  const loss_result empty =
    cuda::softmax_cross_entropy_forward(context, nullptr, nullptr, 0, 3, nullptr);
  CHECK(empty.count == 0);
  CHECK(empty.loss_sum == 0);
  CHECK(cuda::count_correct(context, nullptr, nullptr, 0, 3) == 0);
}
