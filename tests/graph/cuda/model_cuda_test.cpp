// model::to_device against the CPU model: for mlp, lenet and resnet-20 from the zoo, built
// from the same seed, one train_step on the same batch on the CPU and on gpu:0 gives the same
// loss, the same parameter gradients and, afterwards, the same inference logits (which read
// the running statistics the training step updated, so batch-norm buffers are compared too).
//
// Tolerances (relative_error: max |gpu - cpu| / max(1, max |cpu|)):
//   loss       1e-4 relative: one float32 softmax per row summed in double on both sides.
//   gradients  1e-3: each op alone matches the CPU to ~1e-6 (tests/kernels/cuda; on an H100
//              no conv, batch-norm, pooling, add or shortcut comparison there was further off
//              than 1.8e-6), cuDNN and cuBLAS pick other reduction orders, and backward compounds
//              those float32 differences through every layer. How much it can compound is
//              measured on the CPU: one ulp of change in every input moves resnet-20's
//              gradients (batch 4) by at most 6e-7. So 1e-3 leaves room, and a miss is a finding.
//              On an H100 (2026-11-27) mlp and lenet passed; resnet-20 missed: every parameter
//              upstream of stage 3 (stage 2, stage 1, conv1) 1.0-2.5e-3 off, stage 3 and fc
//              within 1e-3. Not explained yet: tests/kernels/cuda/conv2d_cuda_test.cpp now
//              covers stage 3's convolution shapes for the next GPU run.
//   logits     1e-4: forward only, through at most 20 layers with the running statistics.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <troupe/graph/zoo.hpp>

#include "tests/kernels/cuda/gpu_compare.hpp"

using namespace troupe;
using cuda_test::random_tensor;
using cuda_test::relative_error;

namespace {

constexpr double loss_tolerance = 1e-4;
constexpr double gradient_tolerance = 1e-3;
constexpr double logits_tolerance = 1e-4;

const compute_device gpu0{device_kind::cuda, 0};

struct network_case {
  const char* network;
  int num_layers;
  shape_t sample_shape;
  std::int64_t batch;
};

const network_case cases[] = {
  {"mlp", 0, {1, 28, 28}, 8},
  {"lenet", 0, {1, 28, 28}, 4},
  {"resnet", 20, {3, 32, 32}, 4},
};

std::unique_ptr<model> build(const network_case& c) {
  model_spec spec;
  spec.network = c.network;
  spec.num_layers = c.num_layers;
  spec.sample_shape = c.sample_shape;
  spec.classes = 10;
  spec.seed = 7;
  return build_model(spec);
}

std::vector<std::int32_t> labels_for(std::int64_t batch) {
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < batch; ++i)
    labels.push_back(static_cast<std::int32_t>((i * 3) % 10));
  return labels;
}

} // namespace

TEST_CASE("model on a GPU matches the CPU model: loss, gradients, inference logits",
          "[graph][cuda]") {
  for (const auto& c : cases) {
    SECTION(c.network) {
      auto cpu = build(c);
      auto gpu = build(c);
      gpu->to_device(gpu0);
      CHECK(gpu->device() == gpu0);
      CHECK(cpu->device() == compute_device{});

      shape_t x_shape{c.batch};
      x_shape.insert(x_shape.end(), c.sample_shape.begin(), c.sample_shape.end());
      const tensor x = random_tensor(x_shape, 11);
      const auto labels = labels_for(c.batch);

      const loss_result on_cpu = cpu->train_step(x, labels);
      const loss_result on_gpu = gpu->train_step(x, labels);
      CHECK(on_gpu.count == on_cpu.count);
      CHECK(std::fabs(on_gpu.loss_sum - on_cpu.loss_sum)
            <= loss_tolerance * std::fabs(on_cpu.loss_sum));

      REQUIRE(gpu->parameters().size() == cpu->parameters().size());
      for (std::size_t slot = 0; slot < cpu->parameters().size(); ++slot) {
        const parameter& expected = *cpu->parameters()[slot];
        const parameter& actual = *gpu->parameters()[slot];
        INFO(expected.name);
        REQUIRE(actual.name == expected.name);
        REQUIRE(actual.grad.shape() == expected.grad.shape());
        CHECK(actual.value.device() == device_kind::cuda);
        CHECK(actual.grad.device() == device_kind::cuda);
        CHECK(relative_error(actual.grad.to_host(), expected.grad) <= gradient_tolerance);
      }

      const tensor expected_logits = cpu->forward(x, false).clone();
      const tensor& logits = gpu->forward(x, false);
      REQUIRE(logits.shape() == expected_logits.shape());
      CHECK(logits.device() == device_kind::cuda);
      CHECK(relative_error(logits.to_host(), expected_logits) <= logits_tolerance);
    }
  }
}

TEST_CASE("model on a GPU takes a batch already on the device and reports gradients once "
          "they are there",
          "[graph][cuda]") {
  auto cpu = build(cases[0]);
  auto gpu = build(cases[0]);
  gpu->to_device(gpu0);
  const tensor x = random_tensor({8, 1, 28, 28}, 12);
  const auto labels = labels_for(8);
  cpu->train_step(x, labels);
  std::vector<double> errors;
  gpu->train_step(x.to_gpu(0), labels, [&](std::size_t slot) {
    errors.push_back(
      relative_error(gpu->parameters()[slot]->grad.to_host(), cpu->parameters()[slot]->grad));
  });
  REQUIRE(errors.size() == cpu->parameters().size());
  for (double e : errors)
    CHECK(e <= gradient_tolerance);
}

TEST_CASE("model::to_device refuses to move a model off its GPU", "[graph][cuda]") {
  auto m = build(cases[0]);
  m->to_device(gpu0);
  m->to_device(gpu0); // already there: nothing to do
  CHECK_THROWS_AS(m->to_device(compute_device{}), std::logic_error);
}
