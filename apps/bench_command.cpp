// `troupe bench`: training throughput of the compute path (forward, backward, SGD update) for
// mlp, lenet and resnet-20, measured the way the PyTorch comparison script measures its peer:
// same model, batch, thread count, warm-up steps, then timed steps; MLP and LeNet on real
// Fashion-MNIST batches, ResNet-20 on a few synthetic 3x32x32 batches cycled.
//
// Prints one `RESULT ...` line per model (machine-readable, used by
// scripts/bench_vs_torch.py) with the arithmetic beside it: images/s = steps * batch / seconds.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <tuple>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/io/normalization.hpp>
#include <troupe/kernels/sgd.hpp>
#include <troupe/kernels/threading.hpp>

namespace troupe {

namespace {

struct bench_case {
  std::string name;
  model_spec spec;
  std::int64_t default_steps;
  bool real_data;
};

bench_case lookup_case(const std::string& name) {
  if (name == "mlp")
    return {name, {"mlp", 0, {1, 28, 28}, 10, 0}, 500, true};
  if (name == "lenet")
    return {name, {"lenet", 0, {1, 28, 28}, 10, 0}, 50, true};
  if (name == "resnet-20")
    return {name, {"resnet", 20, {3, 32, 32}, 10, 0}, 40, false};
  throw usage_error("--models: unknown model '" + name + "' (known: mlp, lenet, resnet-20)");
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

// Batches in the same order the peer script uses: the first steps*B training images, no
// shuffling, for real data; a handful of seeded synthetic batches otherwise.
std::vector<batch> make_batches(const bench_case& c, std::int64_t batch_size, std::int64_t count,
                                const std::string& data_dir) {
  dataset_options d;
  if (c.real_data) {
    d.name = "fashion-mnist";
    d.dir = data_dir;
  } else {
    d.name = "synthetic";
    d.synthetic_shape = c.spec.sample_shape;
    d.synthetic_size = batch_size * 4;
  }
  batch_source_options b;
  b.batch_size = batch_size;
  b.shuffle = false;
  b.drop_last = true;
  if (c.real_data)
    std::tie(b.augment.mean, b.augment.stdev) = standard_normalization("fashion-mnist");
  batch_source source(open_dataset(d), b);
  std::vector<batch> out;
  for (std::int64_t i = 0; i < std::min(count, source.batches_per_epoch()); ++i)
    out.push_back(source.make(0, i));
  return out;
}

struct bench_figures {
  double images_per_second;
  double step_ms;
  std::int64_t parameters;
};

bench_figures run_case(const bench_case& c, std::int64_t batch_size, std::int64_t steps,
                       std::int64_t warmup, const std::string& data_dir) {
  auto m = build_model(c.spec);
  auto batches = make_batches(c, batch_size, c.real_data ? steps + warmup : 4, data_dir);
  std::vector<tensor> velocity;
  for (auto* p : m->parameters())
    velocity.emplace_back(p->value.shape());
  sgd_options sgd{0.9f, 0.0f, false};
  auto step = [&](std::int64_t i) {
    const auto& b = batches[static_cast<std::size_t>(i) % batches.size()];
    m->train_step(b.images, b.labels);
    auto& params = m->parameters();
    for (std::size_t k = 0; k < params.size(); ++k)
      sgd_update(sgd, 0.05f, params[k]->value, params[k]->grad, velocity[k], params[k]->value);
  };
  for (std::int64_t i = 0; i < warmup; ++i)
    step(i);
  auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = warmup; i < warmup + steps; ++i)
    step(i);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {steps * batch_size / seconds, 1000.0 * seconds / steps, m->parameter_count()};
}

} // namespace

int bench_command(const std::vector<std::string>& args) {
  std::string models = "mlp,lenet,resnet-20";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::int64_t batch_size = 128, steps = 0, warmup = 5;
  int threads = 2;
  flag_set f("bench", "Measures training images/s (forward + backward + SGD momentum update) per "
                      "model, after warm-up steps, on `--threads` compute threads.");
  f.add("models", models, "comma-separated: mlp, lenet, resnet-20");
  f.add("batch-size", batch_size, "images per step");
  f.add("threads", threads, "compute threads");
  f.add("steps", steps, "timed steps (0: 500 mlp, 50 lenet, 40 resnet-20)");
  f.add("warmup", warmup, "untimed steps first");
  f.add("data-dir", data_dir, "Fashion-MNIST directory for the mlp and lenet batches");
  if (!f.parse(args)) {
    std::cout << f.help();
    return 0;
  }
  if (batch_size <= 0 || threads <= 0 || steps < 0 || warmup < 0)
    throw usage_error("--batch-size and --threads must be positive, --steps and --warmup not negative");
  std::vector<bench_case> cases;
  for (const auto& name : split_names(models))
    cases.push_back(lookup_case(name));
  if (cases.empty())
    throw usage_error("--models: no model named");
  set_compute_threads(threads);
  for (const auto& c : cases) {
    auto n = steps > 0 ? steps : c.default_steps;
    auto r = run_case(c, batch_size, n, warmup, data_dir);
    std::printf("RESULT model=%s mode=train batch=%lld threads=%d params=%lld steps=%lld "
                "imgs_per_s=%.1f step_ms=%.3f  (= %lld steps x %lld images / %.3f s)\n",
                c.name.c_str(), static_cast<long long>(batch_size), threads,
                static_cast<long long>(r.parameters), static_cast<long long>(n), r.images_per_second,
                r.step_ms, static_cast<long long>(n), static_cast<long long>(batch_size),
                r.step_ms * n / 1000.0);
    std::fflush(stdout);
  }
  return 0;
}

} // namespace troupe
