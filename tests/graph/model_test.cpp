// model: building and its errors, seeded initialization, the forward / backward sweeps
// (gradient summation over fan-out checked against finite differences of the whole model),
// the on_gradient_ready order, storage reuse without overwriting handles held elsewhere, and a
// short SGD run that must lower the loss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/layers/batch_norm_layer.hpp>
#include <troupe/graph/layers/conv2d_layer.hpp>
#include <troupe/graph/layers/dropout_layer.hpp>
#include <troupe/graph/layers/elementwise_layers.hpp>
#include <troupe/graph/layers/fully_connected_layer.hpp>
#include <troupe/graph/layers/pool_layer.hpp>
#include <troupe/graph/model.hpp>

using namespace troupe;

namespace {

std::unique_ptr<conv2d_layer> conv(std::int64_t out, std::int64_t kernel, std::int64_t pad,
                                   bool bias) {
  conv2d_layer_options o;
  o.out_channels = out;
  o.kernel = kernel;
  o.pad = pad;
  o.bias = bias;
  return std::make_unique<conv2d_layer>(o);
}

/// Fan-out (relu1 feeds three layers), concat, add, an add of one node with itself, and two
/// batch norms: every path of the gradient summation.
std::unique_ptr<model> tiny_dag(std::uint64_t seed) {
  auto m = std::make_unique<model>("tiny", shape_t{2, 5, 5}, 3);
  auto id = m->add("conv1", conv(4, 3, 1, true), {model::input});
  id = m->add("bn1", std::make_unique<batch_norm_layer>(), {id});
  auto relu = m->add("relu1", std::make_unique<relu_layer>(), {id});
  auto a = m->add("branch_a", conv(3, 1, 0, false), {relu});
  auto b = m->add("branch_b", conv(3, 3, 1, true), {relu});
  auto cat = m->add("cat", std::make_unique<concat_layer>(), {a, b});
  auto side = m->add("side", conv(6, 1, 0, false), {relu});
  auto sum = m->add("sum", std::make_unique<add_layer>(), {cat, side});
  id = m->add("twice", std::make_unique<add_layer>(), {sum, sum});
  id = m->add("bn2", std::make_unique<batch_norm_layer>(), {id});
  id = m->add("pool", std::make_unique<pool_layer>(pool_layer::global_average()), {id});
  m->add("fc", std::make_unique<fully_connected_layer>(3, init_kind::he_normal), {id});
  m->finalize(seed);
  return m;
}

std::unique_ptr<model> mlp(std::uint64_t seed, bool extra_layer) {
  auto m = std::make_unique<model>("mlp", shape_t{1, 4, 4}, 3);
  auto id = m->add("flatten", std::make_unique<flatten_layer>(), {model::input});
  id = m->add("fc1", std::make_unique<fully_connected_layer>(16), {id});
  id = m->add("relu1", std::make_unique<relu_layer>(), {id});
  if (extra_layer) {
    id = m->add("extra", std::make_unique<fully_connected_layer>(16), {id});
    id = m->add("relu_extra", std::make_unique<relu_layer>(), {id});
  }
  m->add("fc2", std::make_unique<fully_connected_layer>(3), {id});
  m->finalize(seed);
  return m;
}

std::vector<std::int32_t> labels_for(std::int64_t n, int classes) {
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i)
    labels.push_back(static_cast<std::int32_t>(i % classes));
  return labels;
}

bool same_values(const tensor& a, const tensor& b) {
  if (a.shape() != b.shape())
    return false;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    if (a.data()[i] != b.data()[i])
      return false;
  return true;
}

} // namespace

TEST_CASE("model add rejects bad graphs naming the layer", "[graph][model]") {
  model m("net", {1, 8, 8}, 10);
  auto c = m.add("conv1", conv(4, 3, 1, false), {model::input});
  CHECK_THROWS_WITH(m.add("conv1", conv(4, 3, 1, false), {c}), Catch::Contains("already used"));
  CHECK_THROWS_WITH(m.add("late", conv(4, 3, 1, false), {7}),
                    Catch::Contains("'late'") && Catch::Contains("does not exist"));
  auto p =
    m.add("pool1", std::make_unique<pool_layer>(pool_layer::square(pool_kind::max, 2, 2)), {c});
  CHECK_THROWS_WITH(m.add("sum", std::make_unique<add_layer>(), {c, p}),
                    Catch::Contains("layer 'sum' (add)") && Catch::Contains("[1, 4, 8, 8]")
                      && Catch::Contains("[1, 4, 4, 4]"));
  model flat("flat", {784}, 10);
  CHECK_THROWS_WITH(flat.add("conv1", conv(4, 3, 1, false), {model::input}),
                    Catch::Contains("layer 'conv1' (conv2d)"));
}

TEST_CASE("model finalize checks the output and that every layer feeds it", "[graph][model]") {
  model wrong_classes("net", {6}, 10);
  wrong_classes.add("fc", std::make_unique<fully_connected_layer>(7), {model::input});
  CHECK_THROWS_WITH(wrong_classes.finalize(0), Catch::Contains("'fc'") && Catch::Contains("[N, 7]")
                                                 && Catch::Contains("[N, 10]"));

  model dangling("net", {6}, 2);
  dangling.add("unused", std::make_unique<fully_connected_layer>(4), {model::input});
  dangling.add("fc", std::make_unique<fully_connected_layer>(2), {model::input});
  CHECK_THROWS_WITH(dangling.finalize(0), Catch::Contains("'unused' does not feed"));

  model early("net", {6}, 2);
  early.add("fc", std::make_unique<fully_connected_layer>(2), {model::input});
  CHECK_THROWS_AS(early.forward(tensor({1, 6}), false), std::logic_error);
  early.finalize(0);
  CHECK_THROWS_AS(early.add("more", std::make_unique<relu_layer>(), {0}), std::logic_error);
  CHECK_THROWS_WITH(early.forward(tensor({1, 5}), false),
                    Catch::Contains("[1, 5]") && Catch::Contains("[N, 6]"));
  CHECK_THROWS_WITH(early.train_step(tensor({3, 6}), {0, 1}), Catch::Contains("2 labels"));
}

TEST_CASE("model to_device is a no-op to the CPU, a GPU needs a finalized model and CUDA",
          "[graph][model]") {
  model m("net", {6}, 2);
  m.add("fc", std::make_unique<fully_connected_layer>(2), {model::input});
  const compute_device gpu0{device_kind::cuda, 0};
  CHECK_THROWS_AS(m.to_device(gpu0), std::logic_error);
  m.finalize(0);
  const tensor before = m.parameters()[0]->value;
  m.to_device(compute_device{});
  CHECK(m.device() == compute_device{});
  CHECK(m.parameters()[0]->value.shares_storage_with(before));
#ifndef TROUPE_HAVE_CUDA
  CHECK_THROWS_WITH(m.to_device(gpu0), Catch::Contains("'net'") && Catch::Contains("gpu:0")
                                         && Catch::Contains("built without CUDA"));
  CHECK(m.device() == compute_device{});
  CHECK(m.parameters()[0]->value.shares_storage_with(before));
#endif
}

TEST_CASE("model parameters are listed in node order with unique names", "[graph][model]") {
  auto m = tiny_dag(1);
  auto& params = m->parameters();
  REQUIRE(params.size() == 12);
  CHECK(params[0]->name == "conv1.weight");
  CHECK(params[1]->name == "conv1.bias");
  CHECK(params[2]->name == "bn1.gamma");
  CHECK(params[11]->name == "fc.bias");
  for (std::size_t slot = 0; slot < params.size(); ++slot)
    CHECK(m->parameter_index(params[slot]->name) == slot);
  CHECK_THROWS_AS(m->parameter_index("nope.weight"), std::out_of_range);
  std::int64_t total = 0;
  for (auto* p : params)
    total += p->value.numel();
  CHECK(m->parameter_count() == total);
  REQUIRE(m->buffers().size() == 4);
  CHECK(m->buffers()[3]->name == "bn2.running_var");

  const std::string summary = m->summary();
  for (const char* name : {"conv1", "branch_b", "cat", "twice", "pool", "fc"})
    CHECK_THAT(summary, Catch::Contains(name));
  CHECK_THAT(summary, Catch::Contains("[N, 6, 5, 5]"));
  CHECK_THAT(summary, Catch::Contains("total parameters: " + std::to_string(total)));
}

TEST_CASE("model gradients match finite differences of the whole DAG", "[graph][model]") {
  auto m = tiny_dag(3);
  tensor x = test::random_tensor({4, 2, 5, 5}, 11);
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  m->train_step(x, labels);
  std::vector<tensor> analytic;
  for (auto* p : m->parameters())
    analytic.push_back(p->grad.clone());

  const double step = 1e-3;
  for (std::size_t slot = 0; slot < m->parameters().size(); ++slot) {
    tensor& value = m->parameters()[slot]->value;
    const std::int64_t stride = std::max<std::int64_t>(1, value.numel() / 12);
    for (std::int64_t i = 0; i < value.numel(); i += stride) {
      const float saved = value.data()[i];
      value.data()[i] = saved + static_cast<float>(step);
      const double up = test::model_loss(*m, x, labels);
      value.data()[i] = saved - static_cast<float>(step);
      const double down = test::model_loss(*m, x, labels);
      value.data()[i] = saved;
      test::check_close((up - down) / (2 * step), analytic[slot].data()[i], 1e-3, 5e-2,
                        m->parameters()[slot]->name + "[" + std::to_string(i) + "]");
    }
  }
}

TEST_CASE("on_gradient_ready reports each parameter once, in reverse order, when final",
          "[graph][model]") {
  auto m = tiny_dag(4);
  tensor x = test::random_tensor({3, 2, 5, 5}, 12);
  std::vector<std::size_t> slots;
  std::vector<tensor> at_callback(m->parameters().size());
  m->train_step(x, {0, 1, 2}, [&](std::size_t slot) {
    slots.push_back(slot);
    at_callback[slot] = m->parameters()[slot]->grad.clone();
  });
  REQUIRE(slots.size() == m->parameters().size());
  for (std::size_t i = 0; i < slots.size(); ++i)
    CHECK(slots[i] == slots.size() - 1 - i);
  for (std::size_t slot = 0; slot < slots.size(); ++slot)
    CHECK(same_values(at_callback[slot], m->parameters()[slot]->grad));
}

TEST_CASE("on_backward runs once, after the loss and before the first gradient is final",
          "[graph][model]") {
  auto m = tiny_dag(4);
  tensor x = test::random_tensor({3, 2, 5, 5}, 12);
  std::vector<std::string> calls;
  m->train_step(
    x, {0, 1, 2}, [&](std::size_t) { calls.push_back("gradient"); },
    [&] { calls.push_back("backward"); });
  REQUIRE(calls.size() == m->parameters().size() + 1);
  CHECK(calls.front() == "backward");
  CHECK(std::count(calls.begin(), calls.end(), "backward") == 1);
}

TEST_CASE("model reuses its buffers but never overwrites handles held outside", "[graph][model]") {
  auto m = tiny_dag(5);
  tensor x1 = test::random_tensor({3, 2, 5, 5}, 1), x2 = test::random_tensor({3, 2, 5, 5}, 2);
  const std::vector<std::int32_t> labels{0, 1, 2};
  m->train_step(x1, labels);
  std::vector<const float*> storage;
  for (auto* p : m->parameters())
    storage.push_back(p->grad.data());
  m->train_step(x2, labels);
  for (std::size_t slot = 0; slot < storage.size(); ++slot)
    CHECK(m->parameters()[slot]->grad.data() == storage[slot]);

  // A gradient shipped to another actor keeps its values; the model writes a fresh tensor.
  tensor shipped = m->parameters()[0]->grad;
  tensor snapshot = shipped.clone();
  m->train_step(x1, labels);
  CHECK(same_values(shipped, snapshot));
  CHECK_FALSE(m->parameters()[0]->grad.shares_storage_with(shipped));

  // Same for running statistics someone is reading (a checkpoint).
  tensor running_mean = m->buffers()[0]->value;
  tensor mean_snapshot = running_mean.clone();
  m->train_step(x2, labels);
  CHECK(same_values(running_mean, mean_snapshot));
  CHECK_FALSE(same_values(m->buffers()[0]->value, mean_snapshot));

  // Same for logits the caller keeps.
  tensor logits = m->forward(x1, false);
  tensor logits_snapshot = logits.clone();
  m->forward(x2, false);
  CHECK(same_values(logits, logits_snapshot));

  // The flatten view of the caller's batch is not kept past the step.
  auto net = mlp(1, false);
  tensor batch = test::random_tensor({2, 1, 4, 4}, 3);
  net->train_step(batch, {0, 1});
  CHECK(batch.unique());
  net->train_step(batch, {0, 1});
  CHECK(batch.unique());
}

TEST_CASE("model handles a change of batch size", "[graph][model]") {
  auto m = tiny_dag(6);
  for (std::int64_t n : {2, 5, 2}) {
    tensor x = test::random_tensor({n, 2, 5, 5}, static_cast<std::uint32_t>(n));
    CHECK(m->forward(x, true).shape() == shape_t{n, 3});
    loss_result r = m->train_step(x, labels_for(n, 3));
    CHECK(r.count == n);
    CHECK(std::isfinite(r.loss_sum));
    loss_result e = m->evaluate(x, labels_for(n, 3));
    CHECK(e.count == n);
    CHECK(e.correct <= n);
  }
}

TEST_CASE("model counts top-k beside accuracy once asked", "[graph][model]") {
  auto m = tiny_dag(8); // 3 classes
  const std::int64_t n = 24;
  const tensor x = test::random_tensor({n, 2, 5, 5}, 9);
  const auto labels = labels_for(n, 3);
  CHECK(m->evaluate(x, labels).top_k_correct == 0); // off by default
  m->set_top_k(2);
  CHECK(m->top_k() == 2);
  const loss_result e = m->evaluate(x, labels);
  CHECK(e.top_k_correct == count_top_k(m->forward(x, false), labels, 2)); // on these logits
  CHECK(e.top_k_correct >= e.correct);
  CHECK(e.top_k_correct > 0);
  const loss_result t = m->train_step(x, labels);
  CHECK(t.top_k_correct >= t.correct);
  CHECK(t.top_k_correct <= n);
  m->set_top_k(1);
  CHECK(m->evaluate(x, labels).top_k_correct == m->evaluate(x, labels).correct);
  m->set_top_k(3);
  CHECK(m->train_step(x, labels).top_k_correct == n);
  CHECK_THROWS_WITH(m->set_top_k(4), Catch::Contains("top-k 4 is outside [0, 3]"));
  CHECK_THROWS_AS(m->set_top_k(-1), std::invalid_argument);
  CHECK(m->top_k() == 3);
}

TEST_CASE("model init is seeded per parameter name", "[graph][model]") {
  auto a = tiny_dag(42), b = tiny_dag(42), c = tiny_dag(43);
  bool any_differs = false;
  for (std::size_t slot = 0; slot < a->parameters().size(); ++slot) {
    CHECK(same_values(a->parameters()[slot]->value, b->parameters()[slot]->value));
    const auto init = a->parameters()[slot]->init;
    if (init == init_kind::he_normal || init == init_kind::xavier_uniform)
      any_differs =
        any_differs || !same_values(a->parameters()[slot]->value, c->parameters()[slot]->value);
  }
  CHECK(any_differs);

  // Adding a layer elsewhere leaves the other parameters' values unchanged.
  auto plain = mlp(9, false), extended = mlp(9, true);
  for (const char* name : {"fc1.weight", "fc2.weight"})
    CHECK(same_values(plain->parameters()[plain->parameter_index(name)]->value,
                      extended->parameters()[extended->parameter_index(name)]->value));
}

TEST_CASE("model init follows each parameter's distribution", "[graph][model]") {
  model m("stats", {32, 10, 10}, 1000);
  auto id = m.add("conv", conv(64, 5, 0, true), {model::input});
  id = m.add("bn", std::make_unique<batch_norm_layer>(), {id});
  id = m.add("pool", std::make_unique<pool_layer>(pool_layer::global_average()), {id});
  m.add("fc", std::make_unique<fully_connected_layer>(1000), {id});
  m.finalize(7);

  auto moments = [](const tensor& t) {
    double sum = 0, sum_sq = 0;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      sum += t.data()[i];
      sum_sq += static_cast<double>(t.data()[i]) * t.data()[i];
    }
    const double mean = sum / t.numel();
    return std::make_pair(mean, std::sqrt(sum_sq / t.numel() - mean * mean));
  };
  const tensor& w = m.parameters()[m.parameter_index("conv.weight")]->value;
  auto [mean, stddev] = moments(w);
  CHECK(std::abs(mean) < 3 * std::sqrt(2.0 / 800) / std::sqrt(51200.0));
  CHECK(stddev == Approx(std::sqrt(2.0 / 800)).epsilon(0.03));

  const tensor& fc = m.parameters()[m.parameter_index("fc.weight")]->value;
  const double bound = std::sqrt(6.0 / (64 + 1000));
  auto [fc_mean, fc_std] = moments(fc);
  CHECK(std::abs(fc_mean) < 0.01 * bound);
  CHECK(fc_std == Approx(bound / std::sqrt(3.0)).epsilon(0.03));
  for (std::int64_t i = 0; i < fc.numel(); ++i)
    REQUIRE(std::abs(fc.data()[i]) <= bound);

  for (const char* name : {"conv.bias", "bn.beta", "fc.bias"}) {
    const tensor& t = m.parameters()[m.parameter_index(name)]->value;
    for (std::int64_t i = 0; i < t.numel(); ++i)
      REQUIRE(t.data()[i] == 0.0f);
  }
  const tensor& gamma = m.parameters()[m.parameter_index("bn.gamma")]->value;
  for (std::int64_t i = 0; i < gamma.numel(); ++i)
    REQUIRE(gamma.data()[i] == 1.0f);
}

TEST_CASE("train_step with plain SGD lowers the loss on a synthetic problem", "[graph][model]") {
  // Four classes, each a bright quadrant of an 8x8 image under noise.
  const std::int64_t n = 32;
  tensor x({n, 1, 8, 8});
  std::vector<std::int32_t> labels = labels_for(n, 4);
  std::mt19937 gen(1);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  for (std::int64_t i = 0; i < n; ++i)
    for (int h = 0; h < 8; ++h)
      for (int w = 0; w < 8; ++w) {
        const int quadrant = (h / 4) * 2 + w / 4;
        x.data()[(i * 8 + h) * 8 + w] = (quadrant == labels[i] ? 1.0f : 0.0f) + noise(gen);
      }

  model m("quadrants", {1, 8, 8}, 4);
  auto id = m.add("conv1", conv(8, 3, 1, false), {model::input});
  id = m.add("bn1", std::make_unique<batch_norm_layer>(), {id});
  id = m.add("relu1", std::make_unique<relu_layer>(), {id});
  id = m.add("pool1", std::make_unique<pool_layer>(pool_layer::square(pool_kind::max, 2, 2)), {id});
  m.add("fc", std::make_unique<fully_connected_layer>(4), {id});
  m.finalize(3);

  const float lr = 0.1f;
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    loss_result r = m.train_step(x, labels);
    (step == 0 ? first : last) = r.loss_sum / r.count;
    for (auto* p : m.parameters())
      for (std::int64_t i = 0; i < p->value.numel(); ++i)
        p->value.data()[i] -= lr * p->grad.data()[i];
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.3 * first);
  CHECK(m.evaluate(x, labels).correct >= n * 9 / 10);
}

TEST_CASE("model stream positions record dropout's draws and seeking replays them",
          "[graph][model]") {
  auto build = [] {
    auto m = std::make_unique<model>("drop", shape_t{6}, 2);
    auto id = m->add("fc1", std::make_unique<fully_connected_layer>(8), {model::input});
    id = m->add("drop1", std::make_unique<dropout_layer>(0.5f), {id});
    m->add("fc2", std::make_unique<fully_connected_layer>(2), {id});
    m->finalize(3);
    return m;
  };
  const auto x = test::random_tensor({4, 6}, 5);
  const std::vector<std::int32_t> labels{0, 1, 1, 0};
  auto uninterrupted = build();
  CHECK(uninterrupted->stream_positions().empty());
  uninterrupted->train_step(x, labels);
  uninterrupted->train_step(x, labels);
  uninterrupted->evaluate(x, labels); // inference draws no mask
  const auto positions = uninterrupted->stream_positions();
  CHECK(positions == std::vector<std::pair<std::string, std::uint64_t>>{{"drop1", 2}});
  uninterrupted->train_step(x, labels);
  const tensor expected = uninterrupted->parameters()[0]->grad.clone();

  auto resumed = build(); // a fresh replica moved to where the first one stood
  resumed->seek_streams(positions);
  resumed->train_step(x, labels);
  const tensor& got = resumed->parameters()[0]->grad;
  for (std::int64_t i = 0; i < got.numel(); ++i)
    REQUIRE(got.data()[i] == expected.data()[i]);

  auto unseeked = build(); // without the seek it draws call 0's mask: another gradient
  unseeked->train_step(x, labels);
  bool differs = false;
  for (std::int64_t i = 0; i < got.numel(); ++i)
    differs = differs || unseeked->parameters()[0]->grad.data()[i] != expected.data()[i];
  CHECK(differs);

  CHECK_THROWS_WITH(resumed->seek_streams({{"nope", 1}}), Catch::Contains("no layer 'nope'"));
  CHECK_THROWS_WITH(resumed->seek_streams({{"fc1", 1}}), Catch::Contains("has no random stream"));
  resumed->seek_streams({});
  CHECK(resumed->stream_positions().empty());
}

// Each layer is priced at the larger of 2 flops per multiply-add and 64 per element it reads or
// writes (16 flops per byte), and charged to the last slot with parameters before it.
TEST_CASE("forward_work_by_slot prices layers by arithmetic or traffic, charged to their slots",
          "[graph][model]") {
  model m("work", {3, 8, 8}, 10);
  auto id = m.add("relu0", std::make_unique<relu_layer>(), {model::input}); // before any slot
  conv2d_layer_options o;
  o.out_channels = 64;
  o.kernel = 5;
  o.pad = 2;
  o.bias = true;
  id = m.add("conv1", std::make_unique<conv2d_layer>(o), {id});
  id = m.add("relu1", std::make_unique<relu_layer>(), {id});
  id = m.add("flatten", std::make_unique<flatten_layer>(), {id});
  m.add("fc", std::make_unique<fully_connected_layer>(10), {id});
  m.finalize(1);
  const auto work = m.forward_work_by_slot();
  REQUIRE(work.size() == m.parameters().size());
  REQUIRE(work.size() == 4);                        // conv1.weight, conv1.bias, fc.weight, fc.bias
  const double relu0 = 64.0 * (192 + 192);          // traffic: 3x8x8 in and out
  const double conv1 = 2.0 * (64 * 3 * 5 * 5) * 64; // arithmetic: weight x 8x8 positions
  CHECK(conv1 > 64.0 * (192 + 4096));               // (more than its traffic)
  const double relu1 = 64.0 * (4096 + 4096);
  const double flatten = 64.0 * (4096 + 4096);
  const double fc = 64.0 * (4096 + 10); // traffic: more than 2 x 40960 x 1
  CHECK(fc > 2.0 * 40960);
  CHECK(work[0] == Approx(relu0 + conv1 + relu1 + flatten));
  CHECK(work[1] == 0.0);
  CHECK(work[2] == Approx(fc));
  CHECK(work[3] == 0.0);
}
