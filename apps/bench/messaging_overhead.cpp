// troupe_bench_messaging: what the actor wiring costs per BSP step, with compute replaced by a
// fixed-cost stand-in.
//
// W stand-in workers each "compute" for --step-ms (a timer, as a GPU would: the workers run in
// parallel and leave the CPU to the actors), then push gradients for a model of --model-mb
// split into --keys tensors through one BSP aggregator per shard to --shards parameter shards,
// wait for the new weights, and start the next step. The ideal is 1000 / step-ms steps per
// second; everything above step-ms per step is the wiring: messages, the aggregator's
// weighted sum (reads W x model bytes), the SGD update (reads and writes the model).
//
// Tensors are never copied by messaging inside a process: every worker pushes the same
// gradient buffers step after step, and the weights it receives come from the shard's
// two-buffer pool. The bench counts the distinct weight buffers worker 0 saw: 2 means no
// per-step allocation or copy of weights. Run with a small --model-mb too: per-step time that
// does not scale with the bytes pushed is messaging; time that does is the arithmetic.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>

#include <caf/all.hpp>

#include "actors/aggregator_actor.hpp"
#include "actors/messages.hpp"
#include "actors/param_shard_actor.hpp"
#include "actors/training_session.hpp"
#include "apps/flags.hpp"
#include "cluster/local_node.hpp"
#include "kernels/threading.hpp"

using namespace troupe;

namespace {

using step_atom = caf::atom_constant<caf::atom("step")>;

struct stand_in_state {
  std::vector<tensor> gradients;  // this worker's, pushed unchanged every step
  std::vector<std::pair<caf::actor, std::vector<std::size_t>>> routes;
  int worker = 0;
  std::int64_t steps_left = 0;
  std::int64_t step = 0;
  std::chrono::milliseconds cost{0};
  std::set<const float*> weight_buffers;
  caf::response_promise done;
  static inline const char* name = "stand_in_compute";
};

using stand_in = caf::stateful_actor<stand_in_state>*;

void push_step(stand_in self) {
  auto& st = self->state;
  auto outstanding = std::make_shared<std::size_t>(st.routes.size());
  for (auto& [target, slots] : st.routes) {
    gradient_push push;
    push.step = st.step;
    push.worker = st.worker;
    push.samples = 32;
    for (auto slot : slots)
      push.gradients.push_back(st.gradients[slot]);
    self->request(target, caf::infinite, push_atom::value, std::move(push))
      .then(
        [=](weight_set& ws) {
          if (self->state.worker == 0 && !ws.weights.empty())
            self->state.weight_buffers.insert(ws.weights.front().data());
          if (--*outstanding > 0)
            return;
          ++self->state.step;
          if (--self->state.steps_left == 0)
            return self->state.done.deliver(static_cast<std::int64_t>(self->state.weight_buffers.size()));
          self->delayed_send(self, self->state.cost, step_atom::value);
        },
        [=](caf::error& err) { self->state.done.deliver(err); });
  }
}

caf::behavior stand_in_compute(stand_in self, int worker, std::vector<tensor> gradients,
                               std::vector<std::pair<caf::actor, std::vector<std::size_t>>> routes,
                               std::int64_t steps, int step_ms) {
  auto& st = self->state;
  st.worker = worker;
  st.gradients = std::move(gradients);
  st.routes = std::move(routes);
  st.steps_left = steps;
  st.cost = std::chrono::milliseconds(step_ms);
  return {
    [=](run_atom) -> caf::result<std::int64_t> {
      self->state.done = self->make_response_promise();
      self->delayed_send(self, self->state.cost, step_atom::value);
      return caf::delegated<std::int64_t>();
    },
    [=](step_atom) { push_step(self); },
  };
}

struct figures {
  double steps_per_second;
  std::int64_t weight_buffers;
};

figures run_once(int workers, int shards, std::int64_t model_floats, int keys, int step_ms,
                 std::int64_t steps) {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(keys), model_floats / keys);
  std::vector<shard_key> all_keys;
  for (int k = 0; k < keys; ++k)
    all_keys.push_back({"layer" + std::to_string(k) + ".weight", tensor({model_floats / keys}), true});
  shard_options opt;
  opt.schedule.base_lr = 0.01f;
  std::vector<std::pair<caf::actor, std::vector<std::size_t>>> routes;
  std::vector<caf::actor> actors;
  for (auto& slots : assign_keys(sizes, shards)) {
    std::vector<shard_key> mine;
    for (auto s : slots)
      mine.push_back(all_keys[s]);
    auto shard = spawn_param_shard(sys, std::move(mine), opt);
    auto aggregator = spawn_aggregator(sys, shard, aggregator_options{workers, 0, true, 0});
    routes.emplace_back(aggregator, slots);
    actors.push_back(shard);
    actors.push_back(aggregator);
  }
  std::vector<caf::actor> computes;
  for (int w = 0; w < workers; ++w) {
    std::vector<tensor> grads;
    for (int k = 0; k < keys; ++k) {
      grads.emplace_back(shape_t{model_floats / keys});
      grads.back().fill(1e-3f);
    }
    computes.push_back(sys.spawn(stand_in_compute, w, std::move(grads), routes, steps, step_ms));
  }
  caf::scoped_actor self{sys};
  auto start = std::chrono::steady_clock::now();
  figures out{0, 0};
  // Start every worker before waiting for any: a BSP step needs all of them.
  std::vector<decltype(self->request(computes[0], caf::infinite, run_atom::value))> running;
  for (auto& c : computes)
    running.push_back(self->request(c, caf::infinite, run_atom::value));
  bool failed = false;
  for (auto& handle : running)
    handle.receive(
      [&](std::int64_t buffers) { out.weight_buffers = std::max(out.weight_buffers, buffers); },
      [&](caf::error&) { failed = true; });
  if (failed)
    throw std::runtime_error("a stand-in worker failed");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.steps_per_second = steps / seconds;
  for (auto& a : actors)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  for (auto& c : computes)
    self->send_exit(c, caf::exit_reason::user_shutdown);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::string workers_text = "1,2,4,8";
  double model_mb = 60;
  int keys = 16, step_ms = 50, shards = 1, threads = 2;
  std::int64_t steps = 40;
  flag_set f("bench-messaging", "BSP steps/s with a fixed-cost compute stand-in against the ideal.");
  f.add("workers", workers_text, "comma-separated worker counts");
  f.add("model-mb", model_mb, "model size in MB (float32), split evenly over --keys tensors");
  f.add("keys", keys, "parameter tensors");
  f.add("shards", shards, "parameter shards (one BSP aggregator each)");
  f.add("step-ms", step_ms, "stand-in compute time per step");
  f.add("steps", steps, "steps per worker count");
  f.add("threads", threads, "compute threads for the aggregator sums and SGD updates");
  try {
    if (!f.parse(std::vector<std::string>(argv + 1, argv + argc))) {
      std::cout << f.help();
      return 0;
    }
    if (keys < 1 || step_ms < 1 || steps < 1 || shards < 1 || model_mb <= 0)
      throw usage_error("--keys, --step-ms, --steps, --shards and --model-mb must be positive");
    set_compute_threads(threads);
    const auto floats = static_cast<std::int64_t>(model_mb * 1e6 / 4) / keys * keys;
    const double ideal = 1000.0 / step_ms;
    std::printf("model %.1f MB in %d keys, %d shard(s), stand-in step %d ms: ideal %.2f steps/s\n",
                floats * 4 / 1e6, keys, shards, step_ms, ideal);
    std::printf("%8s %10s %10s %12s %16s %14s\n", "workers", "steps/s", "of ideal",
                "ms/step", "overhead ms", "weight bufs");
    std::stringstream list(workers_text);
    for (std::string item; std::getline(list, item, ',');) {
      int w = std::stoi(item);
      auto r = run_once(w, shards, floats, keys, step_ms, steps);
      std::fflush(stdout);
      std::printf("%8d %10.2f %9.1f%% %12.2f %16.2f %14lld\n", w, r.steps_per_second,
                  100.0 * r.steps_per_second / ideal, 1000.0 / r.steps_per_second,
                  1000.0 / r.steps_per_second - step_ms, static_cast<long long>(r.weight_buffers));
    }
  } catch (const std::exception& e) {
    std::cerr << "troupe_bench_messaging: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
