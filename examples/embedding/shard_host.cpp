// shard_host: a program that takes only a parameter shard from Troupe and trains with its own
// actors. The problem is the host's: least squares, y = x . w* + b* + noise with 4 features.
// Two host worker actors each own half the data, compute the gradient of
// 0.5 * mean((x . w + b - y)^2) themselves, push it as a troupe::gradient_push and train on the
// weights the shard answers (plain SGD, each push applied on arrival: asynchronous training,
// so a worker that starts late starts from the other's progress). Each worker prints its loss
// as it falls; main pulls the final weights and exits 0 if the loss over all data is below
// 1e-3 (it starts near 4; the noise floor is 5e-5), else 1.
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/param_shard_actor.hpp>

namespace {

using step_atom = caf::atom_constant<caf::atom("step")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
constexpr int features = 4;
constexpr int steps = 100;
constexpr auto timeout = std::chrono::seconds(30);

struct examples {
  std::vector<float> x; // [n, features], row-major
  std::vector<float> y; // [n]
  int size() const { return static_cast<int>(y.size()); }
};

examples make_examples(int n, unsigned seed) {
  const float w_true[features] = {1.5f, -2.0f, 0.5f, 1.0f}, b_true = 0.25f;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  examples e;
  for (int i = 0; i < n; ++i) {
    float y = b_true + 0.01f * normal(rng);
    for (int j = 0; j < features; ++j) {
      e.x.push_back(normal(rng));
      y += w_true[j] * e.x.back();
    }
    e.y.push_back(y);
  }
  return e;
}

// 0.5 * mean squared residual at weights (w, b); fills the gradients when asked.
double loss(const examples& e, const troupe::tensor& w, const troupe::tensor& b,
            troupe::tensor* grad_w = nullptr, troupe::tensor* grad_b = nullptr) {
  double sum = 0;
  for (int i = 0; i < e.size(); ++i) {
    float r = b.data()[0] - e.y[i];
    for (int j = 0; j < features; ++j)
      r += w.data()[j] * e.x[i * features + j];
    sum += 0.5 * r * r;
    if (grad_w) {
      for (int j = 0; j < features; ++j)
        grad_w->data()[j] += r * e.x[i * features + j] / e.size();
      grad_b->data()[0] += r / e.size();
    }
  }
  return sum / e.size();
}

struct worker_state {
  troupe::weight_set weights; // the latest the shard answered
  int step = 0;
  static inline const char* name = "host_worker";
};

// One host worker: pulls the weights, then `steps` times pushes a gradient and takes the
// weights the shard answers; then tells `parent` (done_atom, index, ok).
caf::behavior worker(caf::stateful_actor<worker_state>* self, troupe::param_shard_actor shard,
                     int index, examples data, caf::actor parent) {
  auto take = [=](troupe::weight_set& ws) {
    self->state.weights = std::move(ws);
    self->send(self, step_atom::value);
  };
  auto fail = [=](caf::error& err) {
    caf::aout(self) << "worker " << index << ": " << troupe::error_text(err) << "\n";
    self->send(parent, done_atom::value, index, false);
    self->quit(err);
  };
  self->request(shard, timeout, troupe::pull_atom::value, troupe::deadline{}).then(take, fail);
  return {
    [=](step_atom) {
      auto& s = self->state;
      troupe::tensor grad_w({features}), grad_b({1});
      double l = loss(data, s.weights.weights[0], s.weights.weights[1], &grad_w, &grad_b);
      if (s.step % 20 == 0)
        caf::aout(self) << "worker " << index << " step " << s.step << " loss " << l << "\n";
      if (s.step++ == steps) {
        self->send(parent, done_atom::value, index, true);
        self->quit();
        return;
      }
      troupe::gradient_push push;
      push.step = s.step;
      push.keys = {0, 1};
      push.gradients = {grad_w, grad_b};
      push.source = index;
      push.samples = data.size();
      self->request(shard, timeout, troupe::push_atom::value, std::move(push)).then(take, fail);
    },
  };
}

} // namespace

int main() {
  caf::actor_system_config config;
  caf::actor_system system{config};
  troupe::shard_options options;
  options.optimizer.sgd = troupe::sgd_options{0.0f, 0.0f, false}; // plain SGD
  options.schedule.base_lr = 0.05f;
  options.workers = 2;
  auto shard = troupe::spawn_param_shard(system,
                                         {troupe::shard_key{"w", troupe::tensor({features}), false},
                                          troupe::shard_key{"b", troupe::tensor({1}), false}},
                                         options);

  caf::scoped_actor self{system};
  auto part0 = make_examples(256, 1), part1 = make_examples(256, 2);
  system.spawn(worker, shard, 0, part0, caf::actor{self});
  system.spawn(worker, shard, 1, part1, caf::actor{self});
  bool workers_ok = true;
  for (int i = 0; i < 2; ++i)
    self->receive([&](done_atom, int, bool ok) { workers_ok = workers_ok && ok; },
                  caf::after(std::chrono::minutes(2)) >> [&] { workers_ok = false; });

  int code = 1;
  self->request(shard, timeout, troupe::pull_atom::value, troupe::deadline{})
    .receive(
      [&](troupe::weight_set& ws) {
        double l =
          0.5
          * (loss(part0, ws.weights[0], ws.weights[1]) + loss(part1, ws.weights[0], ws.weights[1]));
        std::cout << "after " << ws.updates << " pushes: loss " << l << ", w = ["
                  << ws.weights[0].data()[0] << ", " << ws.weights[0].data()[1] << ", "
                  << ws.weights[0].data()[2] << ", " << ws.weights[0].data()[3]
                  << "], b = " << ws.weights[1].data()[0] << "\n";
        code = workers_ok && l < 1e-3 ? 0 : 1;
      },
      [&](caf::error& err) { std::cerr << "pull failed: " << troupe::error_text(err) << "\n"; });
  self->send_exit(shard, caf::exit_reason::user_shutdown);
  return code;
}
