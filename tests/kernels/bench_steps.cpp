// Whole training steps built from the kernels alone (no graph layer): forward, softmax
// cross-entropy, backward, and SGD with momentum for every parameter, at batch 128. This is
// the figure to hold against PyTorch's images/s, and the gap to the sum of per-op times shows
// what running the ops back to back costs.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include <troupe/kernels/batch_norm.hpp>
#include <troupe/kernels/conv2d.hpp>
#include <troupe/kernels/elementwise.hpp>
#include <troupe/kernels/fully_connected.hpp>
#include <troupe/kernels/pooling.hpp>
#include <troupe/kernels/sgd.hpp>
#include <troupe/kernels/softmax_cross_entropy.hpp>

namespace troupe::bench {

namespace {

struct param {
  tensor value, grad, velocity;
  bool decay = true;
  param() = default;
  param(shape_t shape, std::uint32_t seed, float scale, bool decay_it = true)
      : value(random_tensor(shape, seed, scale)), grad(shape), velocity(shape), decay(decay_it) {}
};

void sgd_all(const std::vector<param*>& params) {
  sgd_options o;
  o.weight_decay = 1e-4f;
  for (param* p : params)
    sgd_update(o, 0.01f, p->value, p->grad, p->velocity, p->value, p->decay);
}

std::vector<std::int32_t> labels_for(std::int64_t n) {
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    labels[i] = static_cast<std::int32_t>(i % 10);
  return labels;
}

void report(const char* model, timing t, double anchor_img_s) {
  std::printf("  => %s training step (fwd + bwd + sgd): median %.2f ms (%.0f img/s), min %.2f ms "
              "(%.0f img/s); PyTorch 1.13 anchor %.0f img/s\n\n",
              model, t.median, 1000.0 * batch / t.median, t.min, 1000.0 * batch / t.min,
              anchor_img_s);
}

} // namespace

void bench_mlp_step(int repeats) {
  std::printf("MLP 784-128-64-10, N=128, whole steps in runs of 10\n");
  const std::int64_t sizes[] = {784, 128, 64, 10};
  std::vector<fully_connected_op> ops(3);
  std::vector<param> w, b;
  std::vector<tensor> act{random_tensor({batch, 784}, 30)}, dact;
  for (int l = 0; l < 3; ++l) {
    w.emplace_back(shape_t{sizes[l + 1], sizes[l]}, 31 + l, 0.05f);
    b.emplace_back(shape_t{sizes[l + 1]}, 41 + l, 0.0f, false);
    act.emplace_back(shape_t{batch, sizes[l + 1]});
    dact.emplace_back(shape_t{batch, sizes[l + 1]});
  }
  tensor probs({batch, 10});
  auto labels = labels_for(batch);
  std::vector<param*> params;
  for (int l = 0; l < 3; ++l) {
    params.push_back(&w[l]);
    params.push_back(&b[l]);
  }
  auto step = [&] {
    for (int l = 0; l < 3; ++l) {
      ops[l].forward(act[l], w[l].value, &b[l].value, act[l + 1]);
      if (l < 2)
        relu_forward(act[l + 1], act[l + 1]);
    }
    softmax_cross_entropy_forward(act[3], labels, probs);
    softmax_cross_entropy_backward(probs, labels, dact[2]);
    for (int l = 2; l >= 0; --l) {
      if (l < 2)
        relu_backward(act[l + 1], dact[l], dact[l]);
      ops[l].backward(act[l], w[l].value, dact[l], l > 0 ? &dact[l - 1] : nullptr, w[l].grad,
                      &b[l].grad);
    }
    sgd_all(params);
  };
  timing ten = time_ms(
    [&] {
      for (int i = 0; i < 10; ++i)
        step();
    },
    repeats);
  report("MLP", {ten.median / 10, ten.min / 10}, 129765);
}

void bench_lenet_step(int repeats) {
  std::printf("LeNet, N=128, whole steps\n");
  conv2d_op conv1({1, 1, 2, 2, 1}), conv2({1, 1, 2, 2, 1});
  pool2d_op pool1({}), pool2({});
  fully_connected_op fc1, fc2;
  param w1({32, 1, 5, 5}, 1, 0.2f), b1({32}, 2, 0, false), w2({64, 32, 5, 5}, 3, 0.03f);
  param b2({64}, 4, 0, false), w3({1024, 3136}, 5, 0.02f), b3({1024}, 6, 0, false);
  param w4({10, 1024}, 7, 0.03f), b4({10}, 8, 0, false);
  tensor x = random_tensor({batch, 1, 28, 28}, 9), a1({batch, 32, 28, 28}), p1({batch, 32, 14, 14});
  tensor a2({batch, 64, 14, 14}), p2({batch, 64, 7, 7}), f1({batch, 1024}), logits({batch, 10});
  tensor probs({batch, 10}), dlogits({batch, 10}), df1({batch, 1024}), dp2(p2.shape());
  tensor da2(a2.shape()), dp1(p1.shape()), da1(a1.shape());
  auto labels = labels_for(batch);
  std::vector<param*> params{&w1, &b1, &w2, &b2, &w3, &b3, &w4, &b4};
  auto step = [&] {
    conv1.forward(x, w1.value, &b1.value, a1);
    relu_forward(a1, a1);
    pool1.forward(a1, p1, true);
    conv2.forward(p1, w2.value, &b2.value, a2);
    relu_forward(a2, a2);
    pool2.forward(a2, p2, true);
    fc1.forward(p2, w3.value, &b3.value, f1);
    relu_forward(f1, f1);
    fc2.forward(f1, w4.value, &b4.value, logits);
    softmax_cross_entropy_forward(logits, labels, probs);
    softmax_cross_entropy_backward(probs, labels, dlogits);
    fc2.backward(f1, w4.value, dlogits, &df1, w4.grad, &b4.grad);
    relu_backward(f1, df1, df1);
    fc1.backward(p2, w3.value, df1, &dp2, w3.grad, &b3.grad);
    pool2.backward(dp2, da2);
    relu_backward(a2, da2, da2);
    conv2.backward(p1, w2.value, da2, &dp1, w2.grad, &b2.grad);
    pool1.backward(dp1, da1);
    relu_backward(a1, da1, da1);
    conv1.backward(x, w1.value, da1, nullptr, w1.grad, &b1.grad);
    sgd_all(params);
  };
  report("LeNet", time_ms(step, repeats), 1673);
}

namespace {

// conv (no bias) -> batch norm, the unit ResNets are made of.
struct conv_bn {
  conv2d_op conv;
  batch_norm_op bn;
  param w, gamma, beta;
  tensor running_mean, running_var, z, y, dz, dy;

  conv_bn(std::int64_t cin, std::int64_t cout, std::int64_t stride, std::int64_t size,
          std::uint32_t seed)
      : conv({stride, stride, 1, 1, 1}), w({cout, cin, 3, 3}, seed, 0.1f),
        gamma({cout}, seed + 1, 0, false), beta({cout}, seed + 2, 0, false), running_mean({cout}),
        running_var({cout}) {
    gamma.value.fill(1.0f);
    shape_t out{batch, cout, size / stride, size / stride};
    z = tensor(out);
    y = tensor(out);
    dz = tensor(out);
    dy = tensor(out);
  }
  void forward(const tensor& x) {
    conv.forward(x, w.value, nullptr, z);
    bn.forward_training(z, gamma.value, beta.value, y, running_mean, running_var);
  }
  // `grad` is d(y); writes dx when asked.
  void backward(const tensor& x, const tensor& grad, tensor* dx) {
    bn.backward(z, gamma.value, grad, dz, gamma.grad, beta.grad);
    conv.backward(x, w.value, dz, dx, w.grad, nullptr);
  }
  void collect(std::vector<param*>& out) { out.insert(out.end(), {&w, &gamma, &beta}); }
};

// relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)), option-A shortcut when the shape changes.
struct basic_block {
  std::int64_t stride;
  conv_bn a, b;
  tensor out, dsum, dh, shortcut_grad;
  bool project;

  basic_block(std::int64_t cin, std::int64_t cout, std::int64_t stride_, std::int64_t size,
              std::uint32_t seed)
      : stride(stride_), a(cin, cout, stride_, size, seed),
        b(cout, cout, 1, size / stride_, seed + 10), project(cin != cout || stride_ != 1) {
    out = tensor(a.y.shape());
    dsum = tensor(a.y.shape());
    dh = tensor(a.y.shape());
    if (project)
      shortcut_grad = tensor({batch, cin, size, size});
  }
  void forward(const tensor& x) {
    a.forward(x);
    relu_forward(a.y, a.y);
    b.forward(a.y);
    if (project) {
      shortcut_pad_forward(x, stride, out);
      add_forward(b.y, out, out);
    } else {
      add_forward(b.y, x, out);
    }
    relu_forward(out, out);
  }
  void backward(const tensor& x, const tensor& grad, tensor& dx) {
    relu_backward(out, grad, dsum);
    b.backward(a.y, dsum, &dh);
    relu_backward(a.y, dh, dh);
    a.backward(x, dh, &dx);
    if (project) {
      shortcut_pad_backward(dsum, stride, shortcut_grad);
      accumulate(shortcut_grad, dx);
    } else {
      accumulate(dsum, dx);
    }
  }
};

} // namespace

void bench_resnet20_step(int repeats) {
  std::printf("ResNet-20, N=128, whole steps\n");
  conv_bn stem(3, 16, 1, 32, 100);
  std::vector<std::unique_ptr<basic_block>> blocks;
  std::int64_t cin = 16, size = 32;
  std::uint32_t seed = 200;
  for (std::int64_t cout : {16, 32, 64})
    for (int i = 0; i < 3; ++i) {
      std::int64_t stride = (i == 0 && cout != 16) ? 2 : 1;
      blocks.push_back(std::make_unique<basic_block>(cin, cout, stride, size, seed += 20));
      size /= stride;
      cin = cout;
    }
  pool2d_params gap_params;
  gap_params.kind = pool_kind::global_average;
  pool2d_op gap(gap_params);
  fully_connected_op fc;
  param fc_w({10, 64}, 7, 0.1f), fc_b({10}, 8, 0, false);
  tensor x = random_tensor({batch, 3, 32, 32}, 9), pooled({batch, 64, 1, 1}), logits({batch, 10});
  tensor probs({batch, 10}), dlogits({batch, 10}), dpooled({batch, 64, 1, 1});
  std::vector<tensor> dblock; // gradient w.r.t. each block's input
  for (std::size_t i = 0; i < blocks.size(); ++i)
    dblock.emplace_back(i == 0 ? stem.y.shape() : blocks[i - 1]->out.shape());
  tensor dlast(blocks.back()->out.shape());
  auto labels = labels_for(batch);
  std::vector<param*> params{&fc_w, &fc_b};
  stem.collect(params);
  for (auto& blk : blocks) {
    blk->a.collect(params);
    blk->b.collect(params);
  }
  auto step = [&] {
    stem.forward(x);
    relu_forward(stem.y, stem.y);
    const tensor* h = &stem.y;
    for (auto& blk : blocks) {
      blk->forward(*h);
      h = &blk->out;
    }
    gap.forward(*h, pooled, true);
    fc.forward(pooled, fc_w.value, &fc_b.value, logits);
    softmax_cross_entropy_forward(logits, labels, probs);
    softmax_cross_entropy_backward(probs, labels, dlogits);
    fc.backward(pooled, fc_w.value, dlogits, &dpooled, fc_w.grad, &fc_b.grad);
    gap.backward(dpooled, dlast);
    const tensor* grad = &dlast;
    for (std::size_t i = blocks.size(); i-- > 0;) {
      const tensor& input = i == 0 ? stem.y : blocks[i - 1]->out;
      blocks[i]->backward(input, *grad, dblock[i]);
      grad = &dblock[i];
    }
    relu_backward(stem.y, dblock[0], dblock[0]);
    stem.backward(x, dblock[0], nullptr);
    sgd_all(params);
  };
  report("ResNet-20", time_ms(step, repeats), 468);
}

} // namespace troupe::bench
