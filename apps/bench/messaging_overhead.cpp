// troupe_bench_messaging: what the actor wiring costs per BSP step, with compute replaced by a
// fixed-cost stand-in, with and without overlapping communication and backward.
//
// W stand-in workers each take --step-ms per step (timers, as a GPU would: the workers run in
// parallel and leave the CPU to the actors): the first third is "forward", the rest "backward",
// producing the gradients of the model's --keys equal tensors (--model-mb in all) one after
// the other, last layer first. Pushes go through the same wiring training uses
// (graph/placement.hpp planned, actors/topology_wiring.hpp spawned): the key plan's slices and push
// groups, one BSP aggregator per shard, --shards parameter shards. With overlap a push group leaves
// as soon as its keys are "computed"; without, all leave after backward. A step ends when every
// group's weights are back and backward is done. The ideal is 1000 / step-ms steps per second; the
// rest is the wiring: messages, the aggregator's weighted sum (reads W x model bytes), the SGD
// update.
//
// Tensors are never copied by messaging inside a process: every worker pushes the same
// gradient buffers (or views of them) step after step, and the weights it receives come from
// the shard's two-buffer pool. The bench counts the distinct buffers worker 0 received for its
// first key: 2 means no per-step allocation or copy of weights.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>

#include <caf/all.hpp>

#include "apps/flags.hpp"
#include "apps/integer_text.hpp"
#include <troupe/actors/messages.hpp>
#include <troupe/actors/spawned_actor.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/kernels/threading.hpp>

using namespace troupe;

namespace {

// No request waits forever: a wedged wiring ends the bench with request_timeout.
constexpr auto bench_timeout = std::chrono::minutes(10);

using step_atom = caf::atom_constant<caf::atom("step")>;
using layer_atom = caf::atom_constant<caf::atom("layer")>;

struct stand_in_state {
  std::vector<tensor> gradients; // one per parameter, pushed unchanged every step
  std::vector<shard_route> routes;
  std::vector<push_group> groups;
  push_tracker tracker;
  bool overlap = true;
  std::chrono::microseconds forward{0}, per_layer{0};
  std::chrono::steady_clock::time_point step_start; // layers are due at fixed offsets from it
  std::int64_t steps_left = 0, step = 0;
  std::size_t answers_missing = 0;
  bool backward_done = false;
  std::vector<std::size_t> unsent;
  std::set<const float*> weight_buffers;
  caf::response_promise done;
  static inline const char* name = "stand_in_compute";
};

using stand_in = caf::stateful_actor<stand_in_state>*;

void end_of_step_if_complete(stand_in self) {
  auto& st = self->state;
  if (!st.backward_done || st.answers_missing > 0)
    return;
  ++st.step;
  if (--st.steps_left == 0)
    return st.done.deliver(static_cast<std::int64_t>(st.weight_buffers.size()));
  self->send(self, step_atom::value);
}

void push_group_now(stand_in self, std::size_t g) {
  auto& st = self->state;
  const auto& group = st.groups[g];
  const auto& route = st.routes[group.shard];
  gradient_push push;
  push.step = st.step;
  push.source = route.source_index;
  push.samples = 32;
  push.keys = group.keys;
  push.gradients =
    group_gradients(route, group, [&](std::size_t slot) { return st.gradients[slot]; });
  const bool watch = route.source_index == 0 && group.shard == 0 && group.keys.front() == 0;
  self->request(route.shard, bench_timeout, push_atom::value, std::move(push))
    .then(
      [=](weight_set& ws) {
        if (watch && !ws.weights.empty())
          self->state.weight_buffers.insert(ws.weights.front().data());
        --self->state.answers_missing;
        end_of_step_if_complete(self);
      },
      [=](caf::error& err) { self->state.done.deliver(err); });
}

// Timers against deadlines from the step's start, so timer slack does not add up over layers.
void schedule_layer(stand_in self, std::size_t slot) {
  auto& st = self->state;
  const auto layers_done = st.gradients.size() - slot; // this one included
  const auto due = st.step_start + st.forward + st.per_layer * static_cast<int>(layers_done);
  const auto wait =
    std::max(std::chrono::steady_clock::duration::zero(), due - std::chrono::steady_clock::now());
  self->delayed_send(self, wait, layer_atom::value, slot);
}

// One parameter's gradient is "computed": push what became ready, schedule the next layer.
void layer_done(stand_in self, std::size_t slot) {
  auto& st = self->state;
  st.tracker.slot_ready(slot, [&](std::size_t g) {
    if (st.overlap)
      push_group_now(self, g);
    else
      st.unsent.push_back(g);
  });
  if (slot > 0)
    return schedule_layer(self, slot - 1);
  st.backward_done = true;
  for (auto g : st.unsent)
    push_group_now(self, g);
  st.unsent.clear();
  end_of_step_if_complete(self);
}

caf::behavior stand_in_compute(stand_in self, std::vector<tensor> gradients,
                               std::vector<shard_route> routes, std::vector<push_group> groups,
                               bool overlap, std::int64_t steps, int step_ms) {
  auto& st = self->state;
  st.gradients = std::move(gradients);
  st.routes = std::move(routes);
  st.groups = std::move(groups);
  st.overlap = overlap;
  st.steps_left = steps;
  const auto total = std::chrono::microseconds(step_ms * 1000);
  st.forward = total / 3;
  st.per_layer = (total - st.forward) / static_cast<int>(st.gradients.size());
  st.tracker = push_tracker(st.routes, st.groups, st.gradients.size());
  return {
    [=](run_atom) -> caf::result<std::int64_t> {
      self->state.done = self->make_response_promise();
      self->send(self, step_atom::value);
      return caf::delegated<std::int64_t>();
    },
    [=](step_atom) {
      auto& s = self->state;
      s.tracker.start_step();
      s.answers_missing = s.groups.size();
      s.backward_done = false;
      s.step_start = std::chrono::steady_clock::now();
      schedule_layer(self, s.gradients.size() - 1);
    },
    [=](layer_atom, std::size_t slot) { layer_done(self, slot); },
  };
}

struct bench_setup {
  int shards = 1, keys = 16, step_ms = 50;
  std::int64_t floats = 0, steps = 40;
  key_plan_options key_options;
};

struct figures {
  double steps_per_second = 0;
  std::int64_t weight_buffers = 0;
  std::size_t pushes_per_step = 0;
};

figures run_once(const bench_setup& b, int workers, bool overlap) {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  // The stand-in model: --keys equal tensors, planned exactly as a training job's would be.
  std::vector<planned_parameter> params;
  std::vector<tensor> initial;
  for (int k = 0; k < b.keys; ++k) {
    params.push_back({"layer" + std::to_string(k) + ".weight", shape_t{b.floats / b.keys},
                      b.floats / b.keys, true});
    initial.emplace_back(shape_t{b.floats / b.keys});
  }
  training_job job;
  job.shards = b.shards;
  job.topology.workers = workers;
  job.topology.keys = b.key_options;
  job.topology.overlap = overlap;
  job.optimizer.schedule.base_lr = 0.01f;
  const auto plan = plan_placement(job, data_facts{}, params);
  std::vector<caf::actor> actors;
  auto targets =
    spawn_push_side(sys, plan, initial, job.optimizer,
                    [&](const push_target_actor& a, const planned_actor&,
                        const push_target_actor&) { actors.push_back(as_spawned(a)); });
  std::vector<caf::actor> computes;
  for (int w = 0; w < workers; ++w) {
    std::vector<tensor> grads;
    for (int k = 0; k < b.keys; ++k) {
      grads.emplace_back(shape_t{b.floats / b.keys});
      grads.back().fill(1e-3f);
    }
    computes.push_back(sys.spawn(stand_in_compute, std::move(grads), routes_of(plan, targets, w),
                                 plan.keys.groups, overlap, b.steps, b.step_ms));
  }
  caf::scoped_actor self{sys};
  auto start = std::chrono::steady_clock::now();
  figures out;
  out.pushes_per_step = plan.keys.groups.size();
  // Start every worker before waiting for any: a BSP step needs all of them.
  std::vector<decltype(self->request(computes[0], bench_timeout, run_atom::value))> running;
  for (auto& c : computes)
    running.push_back(self->request(c, bench_timeout, run_atom::value));
  bool failed = false;
  for (auto& handle : running)
    handle.receive(
      [&](std::int64_t buffers) { out.weight_buffers = std::max(out.weight_buffers, buffers); },
      [&](caf::error&) { failed = true; });
  if (failed)
    throw std::runtime_error("a stand-in worker failed");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.steps_per_second = static_cast<double>(b.steps) / seconds;
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
  bench_setup b;
  int threads = 2;
  std::int64_t slice_bytes = b.key_options.slice_bytes, group_bytes = b.key_options.group_bytes;
  flag_set f("bench-messaging",
             "BSP steps/s with a fixed-cost compute stand-in against the ideal, with and "
             "without overlapping pushes with backward.");
  f.add("workers", workers_text, "comma-separated worker counts");
  f.add("model-mb", model_mb, "model size in MB (float32), split evenly over --keys tensors");
  f.add("keys", b.keys, "parameter tensors (layers)");
  f.add("shards", b.shards, "parameter shards (one BSP aggregator each)");
  f.add("slice-bytes", slice_bytes, "tensors above this are cut into slices over the shards");
  f.add("group-bytes", group_bytes, "smaller keys are bundled into pushes of up to this");
  f.add("step-ms", b.step_ms, "stand-in compute time per step (1/3 forward, 2/3 backward)");
  f.add("steps", b.steps, "steps per worker count");
  f.add("threads", threads, "compute threads for the aggregator sums and SGD updates");
  try {
    if (!f.parse(std::vector<std::string>(argv + 1, argv + argc))) {
      std::cout << f.help();
      return 0;
    }
    if (b.keys < 1 || b.step_ms < 1 || b.steps < 1 || b.shards < 1 || model_mb <= 0)
      throw usage_error("--keys, --step-ms, --steps, --shards and --model-mb must be positive");
    if (slice_bytes < 4 || group_bytes < 0)
      throw usage_error("--slice-bytes must be at least 4 and --group-bytes not negative");
    b.key_options = key_plan_options{slice_bytes, group_bytes};
    set_compute_threads(threads);
    b.floats = static_cast<std::int64_t>(model_mb * 1e6 / 4) / b.keys * b.keys;
    if (b.floats < b.keys)
      throw usage_error("--model-mb is too small for --keys tensors");
    const double ideal = 1000.0 / b.step_ms;
    std::printf("model %.1f MB in %d keys, %d shard(s), stand-in step %d ms: ideal %.2f steps/s\n",
                static_cast<double>(b.floats) * 4 / 1e6, b.keys, b.shards, b.step_ms, ideal);
    std::printf("%8s %8s %10s %10s %12s %16s %12s\n", "workers", "overlap", "steps/s", "of ideal",
                "ms/step", "overhead ms", "weight bufs");
    std::stringstream list(workers_text);
    for (std::string item; std::getline(list, item, ',');) {
      const auto w = static_cast<int>(flag_integer("workers", item, INT32_MIN, INT32_MAX));
      if (w < 1)
        throw usage_error("--workers: each count must be at least 1, got " + item);
      for (bool overlap : {false, true}) {
        auto r = run_once(b, w, overlap);
        std::printf("%8d %8s %10.2f %9.1f%% %12.2f %16.2f %12lld\n", w, overlap ? "yes" : "no",
                    r.steps_per_second, 100.0 * r.steps_per_second / ideal,
                    1000.0 / r.steps_per_second, 1000.0 / r.steps_per_second - b.step_ms,
                    static_cast<long long>(r.weight_buffers));
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "troupe_bench_messaging: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
