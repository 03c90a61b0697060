// troupe_kernels_bench: milliseconds per CPU op at the layer shapes of LeNet and CIFAR
// ResNet-20 at batch 128, to see where a training step's time goes, plus whole training steps
// of those two and of the 784-128-64-10 MLP (bench_steps.cpp).
//
// Each op is warmed up (primitive creation, first-touch page faults), then timed `repeats`
// times; the median and (in parentheses) the minimum are printed. Convolutions and fully
// connected layers also print GFLOP/s (2 * N*K*P*Q*C/g*R*S per pass, from the minimum) next to
// the machine's rough fp32 peak, so a slow layer stands out. The per-model totals sum each op
// times how often a training step runs it; bench_steps.cpp then times the real steps, which
// add what the sum misses (cache effects, thread hand-offs between oneDNN and our loops).
//
// Usage: troupe_kernels_bench [threads=2] [repeats=15] [model=all|lenet|resnet|mlp|steps]
// (`steps` times only the whole training steps.)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "bench_common.hpp"
#include <troupe/kernels/batch_norm.hpp>
#include <troupe/kernels/conv2d.hpp>
#include <troupe/kernels/elementwise.hpp>
#include <troupe/kernels/fully_connected.hpp>
#include <troupe/kernels/pooling.hpp>
#include <troupe/kernels/sgd.hpp>
#include <troupe/kernels/softmax_cross_entropy.hpp>
#include <troupe/kernels/threading.hpp>

using namespace troupe;
using namespace troupe::bench;

namespace {

int repeats = 15;

timing time_ms(const std::function<void()>& fn) {
  return bench::time_ms(fn, repeats);
}

// Sums of median and of minimum times, each op counted as often as a training step runs it.
struct model_total {
  timing forward, backward;
  void add(timing f, timing b, int times) {
    forward.median += f.median * times;
    forward.min += f.min * times;
    backward.median += b.median * times;
    backward.min += b.min * times;
  }
};

void print_row(const std::string& name, timing fwd, timing bwd, int times,
               const std::string& note = "") {
  std::printf("  %-36s fwd %7.3f (%7.3f)  bwd %7.3f (%7.3f)  x%-2d %s\n", name.c_str(), fwd.median,
              fwd.min, bwd.median, bwd.min, times, note.c_str());
}

// Achieved GFLOP/s from the minimum times.
std::string conv_note(const shape_t& y, const shape_t& w, timing fwd, timing bwd) {
  double flops =
    2.0 * static_cast<double>(shape_numel(y)) * static_cast<double>(w[1] * w[2] * w[3]);
  char buf[96];
  std::snprintf(buf, sizeof buf, "(%.0f / %.0f GFLOP/s)", flops / fwd.min / 1e6,
                2 * flops / bwd.min / 1e6);
  return buf;
}

// One convolution layer: forward with bias optional, backward with dx optional.
void bench_conv(model_total& total, const std::string& name, shape_t x_shape, shape_t w_shape,
                conv2d_params p, bool bias, bool need_dx, int times) {
  conv2d_op op(p);
  tensor x = random_tensor(x_shape, 1), w = random_tensor(w_shape, 2);
  tensor b = random_tensor({w_shape[0]}, 3);
  tensor y(op.output_shape(x_shape, w_shape));
  tensor dy = random_tensor(y.shape(), 4), dx(x_shape), dw(w_shape), db({w_shape[0]});
  timing f = time_ms([&] { op.forward(x, w, bias ? &b : nullptr, y); });
  timing bw =
    time_ms([&] { op.backward(x, w, dy, need_dx ? &dx : nullptr, dw, bias ? &db : nullptr); });
  print_row(name + " " + shape_string(x_shape) + "->" + std::to_string(w_shape[0]), f, bw, times,
            conv_note(y.shape(), w_shape, f, bw));
  total.add(f, bw, times);
}

void bench_bn(model_total& total, shape_t shape, int times) {
  batch_norm_op op;
  tensor x = random_tensor(shape, 5), y(shape), dy = random_tensor(shape, 6), dx(shape);
  tensor gamma = random_tensor({shape[1]}, 7), beta({shape[1]}), rm({shape[1]}), rv({shape[1]});
  tensor dg({shape[1]}), dbeta({shape[1]});
  timing f = time_ms([&] { op.forward_training(x, gamma, beta, y, rm, rv); });
  timing b = time_ms([&] { op.backward(x, gamma, dy, dx, dg, dbeta); });
  print_row("batch_norm " + shape_string(shape), f, b, times);
  total.add(f, b, times);
}

void bench_relu(model_total& total, shape_t shape, int times) {
  tensor x = random_tensor(shape, 8), y(shape), dy = random_tensor(shape, 9), dx(shape);
  timing f = time_ms([&] { relu_forward(x, y); });
  timing b = time_ms([&] { relu_backward(y, dy, dx); });
  print_row("relu " + shape_string(shape), f, b, times);
  total.add(f, b, times);
}

void bench_add(model_total& total, shape_t shape, int times) {
  tensor a = random_tensor(shape, 10), b = random_tensor(shape, 11), y(shape);
  timing f = time_ms([&] { add_forward(a, b, y); });
  // The backward of an add hands dy to both inputs: at most one accumulate.
  timing bw = time_ms([&] { accumulate(a, y); });
  print_row("add / accumulate " + shape_string(shape), f, bw, times);
  total.add(f, bw, times);
}

void bench_pool(model_total& total, pool2d_params p, shape_t shape, int times) {
  pool2d_op op(p);
  tensor x = random_tensor(shape, 12), y(op.output_shape(shape));
  tensor dy = random_tensor(y.shape(), 13), dx(shape);
  timing f = time_ms([&] { op.forward(x, y, true); });
  timing b = time_ms([&] { op.backward(dy, dx); });
  std::string kind = p.kind == pool_kind::max ? "max_pool" : "global_avg_pool";
  print_row(kind + " " + shape_string(shape), f, b, times);
  total.add(f, b, times);
}

void bench_fc(model_total& total, std::int64_t in, std::int64_t out, bool need_dx, int times) {
  fully_connected_op op;
  tensor x = random_tensor({batch, in}, 14), w = random_tensor({out, in}, 15);
  tensor b = random_tensor({out}, 16), y({batch, out}), dy = random_tensor({batch, out}, 17);
  tensor dx({batch, in}), dw({out, in}), db({out});
  timing f = time_ms([&] { op.forward(x, w, &b, y); });
  timing bw = time_ms([&] { op.backward(x, w, dy, need_dx ? &dx : nullptr, dw, &db); });
  double flops = 2.0 * batch * in * out;
  char note[64];
  std::snprintf(note, sizeof note, "(%.0f / %.0f GFLOP/s)", flops / f.min / 1e6,
                (need_dx ? 2 : 1) * flops / bw.min / 1e6);
  print_row("fc " + std::to_string(in) + "->" + std::to_string(out), f, bw, times, note);
  total.add(f, bw, times);
}

void bench_shortcut(model_total& total, shape_t shape, std::int64_t out_channels, int times) {
  shape_t out = shortcut_pad_shape(shape, out_channels, 2);
  tensor x = random_tensor(shape, 18), y(out), dy = random_tensor(out, 19), dx(shape);
  timing f = time_ms([&] { shortcut_pad_forward(x, 2, y); });
  timing b = time_ms([&] { shortcut_pad_backward(dy, 2, dx); });
  print_row("shortcut_pad " + shape_string(shape) + "->" + std::to_string(out_channels), f, b,
            times);
  total.add(f, b, times);
}

void bench_loss(model_total& total, std::int64_t classes) {
  tensor logits = random_tensor({batch, classes}, 20), p({batch, classes}), d({batch, classes});
  std::vector<std::int32_t> labels(batch);
  for (std::int64_t i = 0; i < batch; ++i)
    labels[i] = static_cast<std::int32_t>(i % classes);
  timing f = time_ms([&] { softmax_cross_entropy_forward(logits, labels, p); });
  timing b = time_ms([&] { softmax_cross_entropy_backward(p, labels, d); });
  print_row("softmax_cross_entropy [128, " + std::to_string(classes) + "]", f, b, 1);
  total.add(f, b, 1);
}

void bench_sgd(model_total& total, std::int64_t params) {
  tensor w = random_tensor({params}, 21), g = random_tensor({params}, 22), v({params});
  sgd_options o;
  o.weight_decay = 1e-4f;
  timing t = time_ms([&] { sgd_update(o, 0.01f, w, g, v, w); });
  print_row("sgd_update " + std::to_string(params) + " params", {}, t, 1, "(one tensor)");
  total.add({}, t, 1);
}

void print_total(const char* model, const model_total& t) {
  double median = t.forward.median + t.backward.median, best = t.forward.min + t.backward.min;
  std::printf(
    "  => %s step, sum of medians: fwd %.2f + bwd/update %.2f = %.2f ms (%.0f img/s)\n"
    "  => %s step, sum of minimums: fwd %.2f + bwd/update %.2f = %.2f ms (%.0f img/s)\n\n",
    model, t.forward.median, t.backward.median, median, 1000.0 * batch / median, model,
    t.forward.min, t.backward.min, best, 1000.0 * batch / best);
}

void bench_lenet() {
  std::printf("LeNet, N=128 (PyTorch 1.13 anchor: 1673 img/s = 76.5 ms/step)\n");
  model_total t;
  pool2d_params pool;
  bench_conv(t, "conv5x5 pad2", {batch, 1, 28, 28}, {32, 1, 5, 5}, {1, 1, 2, 2, 1}, true, false, 1);
  bench_relu(t, {batch, 32, 28, 28}, 1);
  bench_pool(t, pool, {batch, 32, 28, 28}, 1);
  bench_conv(t, "conv5x5 pad2", {batch, 32, 14, 14}, {64, 32, 5, 5}, {1, 1, 2, 2, 1}, true, true,
             1);
  bench_relu(t, {batch, 64, 14, 14}, 1);
  bench_pool(t, pool, {batch, 64, 14, 14}, 1);
  bench_fc(t, 3136, 1024, true, 1);
  bench_relu(t, {batch, 1024}, 1);
  bench_fc(t, 1024, 10, true, 1);
  bench_loss(t, 10);
  bench_sgd(t, 3274634); // all of LeNet's parameters as one tensor
  print_total("LeNet", t);
}

void bench_resnet20() {
  std::printf("ResNet-20, N=128 (PyTorch 1.13 anchor: 468 img/s = 273 ms/step)\n");
  model_total t;
  conv2d_params same{1, 1, 1, 1, 1}, down{2, 2, 1, 1, 1};
  bench_conv(t, "conv3x3", {batch, 3, 32, 32}, {16, 3, 3, 3}, same, false, false, 1);
  bench_conv(t, "conv3x3", {batch, 16, 32, 32}, {16, 16, 3, 3}, same, false, true, 6);
  bench_conv(t, "conv3x3 s2", {batch, 16, 32, 32}, {32, 16, 3, 3}, down, false, true, 1);
  bench_conv(t, "conv3x3", {batch, 32, 16, 16}, {32, 32, 3, 3}, same, false, true, 5);
  bench_conv(t, "conv3x3 s2", {batch, 32, 16, 16}, {64, 32, 3, 3}, down, false, true, 1);
  bench_conv(t, "conv3x3", {batch, 64, 8, 8}, {64, 64, 3, 3}, same, false, true, 5);
  bench_bn(t, {batch, 16, 32, 32}, 7);
  bench_bn(t, {batch, 32, 16, 16}, 6);
  bench_bn(t, {batch, 64, 8, 8}, 6);
  bench_relu(t, {batch, 16, 32, 32}, 7);
  bench_relu(t, {batch, 32, 16, 16}, 6);
  bench_relu(t, {batch, 64, 8, 8}, 6);
  bench_add(t, {batch, 16, 32, 32}, 3);
  bench_add(t, {batch, 32, 16, 16}, 3);
  bench_add(t, {batch, 64, 8, 8}, 3);
  bench_shortcut(t, {batch, 16, 32, 32}, 32, 1);
  bench_shortcut(t, {batch, 32, 16, 16}, 64, 1);
  pool2d_params gap;
  gap.kind = pool_kind::global_average;
  bench_pool(t, gap, {batch, 64, 8, 8}, 1);
  bench_fc(t, 64, 10, true, 1);
  bench_loss(t, 10);
  bench_sgd(t, 269722); // all of ResNet-20's parameters as one tensor
  print_total("ResNet-20", t);
}

} // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 15;
  std::string model = argc > 3 ? argv[3] : "all";
  set_compute_threads(threads);
  std::printf(
    "troupe_kernels_bench: %d compute threads, median (min) of %d runs, times in ms\n"
    "(fp32 peak per core with AVX2: 2 FMA x 8 lanes x 2 flops = 32 flops/cycle, ~110 GFLOP/s "
    "at 3.5 GHz)\n\n",
    threads, repeats);
  if (model == "steps") {
    bench_mlp_step(repeats);
    bench_lenet_step(repeats);
    bench_resnet20_step(repeats);
  }
  if (model == "all" || model == "mlp")
    bench_mlp_step(repeats);
  if (model == "all" || model == "lenet") {
    bench_lenet();
    bench_lenet_step(std::max(3, repeats / 3));
  }
  if (model == "all" || model == "resnet") {
    bench_resnet20();
    bench_resnet20_step(std::max(3, repeats / 3));
  }
  return 0;
}
