// The compute actor at the message level: pushes leave during backward (before the batch's
// report) with overlap and after it without, and wiring that would leave a key untrained or
// push a key twice is refused at spawn.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/loader_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/kernels/threading.hpp>

using namespace troupe;

namespace {

using log_atom = caf::atom_constant<caf::atom("log")>;

// Stands between a compute actor and a real shard, and is also its metrics sink: its mailbox
// order is the order the compute actor sent pushes and reports (CAF keeps per-sender order).
struct recorder_state {
  std::vector<std::string> events;
  static inline const char* name = "recorder";
};

// A gradient tap and a metrics sink in one: the compiler checks it offers both protocols.
using recorder_actor = push_target_actor::extend_with<metrics_sink_actor>::extend<
  caf::replies_to<log_atom>::with<std::vector<std::string>>>;

recorder_actor::behavior_type recorder(recorder_actor::stateful_pointer<recorder_state> self,
                                       push_target_actor shard) {
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      self->state.events.push_back("push " + std::to_string(push.keys.front()));
      return self->delegate(shard, push_atom::value, std::move(push));
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return self->delegate(shard, pull_atom::value, due);
    },
    [=](rewind_atom, std::int64_t step, std::int32_t source,
        deadline due) -> caf::result<weight_set> {
      return self->delegate(shard, rewind_atom::value, step, source, due);
    },
    [=](const batch_report& r) {
      self->state.events.push_back("report " + std::to_string(r.index));
    },
    [=](const phase_report&) {},
    [=](flush_atom) -> caf::result<bool> { return true; },
    [=](log_atom) -> caf::result<std::vector<std::string>> { return self->state.events; },
  };
}

std::unique_ptr<model> small_mlp() {
  model_spec spec;
  spec.network = "mlp";
  spec.sample_shape = {1, 28, 28};
  spec.classes = 10;
  return build_model(spec);
}

std::shared_ptr<const batch_source> synthetic_batches() {
  dataset_options d;
  d.name = "synthetic";
  d.synthetic_shape = {1, 28, 28};
  d.synthetic_size = 64;
  batch_source_options b;
  b.batch_size = 32;
  return std::make_shared<const batch_source>(open_dataset(d), b);
}

// Trains one epoch (2 batches) of an MLP whose keys form several push groups, and returns what
// the recorder saw.
// A small MLP replica and the async plan for it (compute -> shard directly), its shards
// spawned; `group_bytes` 0 makes one push per key.
struct async_mlp {
  std::unique_ptr<model> replica = small_mlp();
  placement_plan plan;
  std::vector<push_target_actor> targets;

  async_mlp(caf::actor_system& sys, std::int64_t group_bytes) {
    std::vector<planned_parameter> params;
    std::vector<tensor> initial;
    for (auto* p : replica->parameters()) {
      params.push_back({p->name, p->value.shape(), p->value.numel(), p->weight_decay});
      initial.push_back(p->value);
    }
    training_job job;
    use_preset(job.topology, topology_kind::async);
    job.topology.keys = key_plan_options{4 << 20, group_bytes};
    job.optimizer.schedule.base_lr = 0.01f;
    plan = plan_placement(job, data_facts{}, params);
    targets = spawn_push_side(sys, plan, initial, job.optimizer, {});
  }
};

std::vector<std::string> events_of_one_epoch(bool overlap) {
  set_compute_threads(1);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  async_mlp setup(sys, 0);
  auto replica = std::move(setup.replica);
  auto& plan = setup.plan;
  REQUIRE(plan.keys.groups.size() == replica->parameters().size());
  auto shards = routes_of(plan, setup.targets, 0);
  auto rec = sys.spawn(recorder, shards.front().shard);
  compute_wiring w;
  w.train_loader = spawn_loader(sys, synthetic_batches());
  w.validation_loader = w.train_loader;
  w.shards = {shard_route{rec, shards.front().keys, 0}};
  w.groups = plan.keys.groups;
  w.overlap = overlap;
  w.metrics = rec;
  w.batches_per_epoch = 2;
  auto compute = spawn_compute(sys, std::move(replica), w);
  self->request(compute, std::chrono::seconds(30), train_atom::value, std::int64_t{0}, deadline{})
    .receive([](phase_report& r) { CHECK(r.samples == 64); },
             [](caf::error& e) { FAIL(error_text(e)); });
  std::vector<std::string> events;
  self->request(rec, std::chrono::seconds(10), log_atom::value)
    .receive([&](std::vector<std::string>& e) { events = std::move(e); },
             [](caf::error& e) { FAIL(error_text(e)); });
  for (auto& a : {caf::actor_cast<caf::actor>(compute), caf::actor_cast<caf::actor>(rec),
                  caf::actor_cast<caf::actor>(shards.front().shard),
                  caf::actor_cast<caf::actor>(w.train_loader)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
  return events;
}

// A loader that takes every request and never answers it.
struct silent_loader_state {
  std::vector<caf::typed_response_promise<loader_item>> held;
  static inline const char* name = "silent_loader";
};

loader_actor::behavior_type
silent_loader(loader_actor::stateful_pointer<silent_loader_state> self) {
  return {
    [](epoch_atom, std::int64_t) {},
    [=](next_atom) -> caf::result<loader_item> {
      self->state.held.push_back(self->make_response_promise<loader_item>());
      return self->state.held.back();
    },
  };
}

// Sends every actor it holds an exit when the test case ends, also when an assertion threw:
// declared after the actor system, it runs first, so the system's destructor never waits on
// an actor the test left running.
struct stop_at_exit {
  std::vector<caf::actor> actors;
  template <class Handle> void add(const Handle& handle) {
    if (handle)
      actors.push_back(caf::actor_cast<caf::actor>(handle));
  }
  ~stop_at_exit() {
    for (auto& a : actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
};

// An actor system with the async MLP's shards running, stopped when the test case ends.
struct async_mlp_run {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  stop_at_exit stop;
  async_mlp setup;

  explicit async_mlp_run(std::int64_t group_bytes) : setup(sys, group_bytes) {
    set_compute_threads(1);
    for (auto& t : setup.targets)
      stop.add(t);
  }

  // Wiring for worker 0 straight to the shards, with `loader` for training and validation.
  compute_wiring wiring(loader_actor loader, std::int64_t batches_per_epoch,
                        std::chrono::milliseconds step_timeout) {
    stop.add(loader);
    compute_wiring w;
    w.train_loader = loader;
    w.validation_loader = loader;
    w.shards = routes_of(setup.plan, setup.targets, 0);
    w.groups = setup.plan.keys.groups;
    w.batches_per_epoch = batches_per_epoch;
    w.timeouts.step = step_timeout;
    return w;
  }
};

// Serves `per_epoch` copies of one batch per epoch, except that it never answers the
// `hold`-th request it gets (counting from 1, over all epochs).
struct scripted_loader_state {
  batch sample;
  std::int64_t epoch = 0, served = 0, requests = 0;
  std::vector<caf::typed_response_promise<loader_item>> held;
  static inline const char* name = "scripted_loader";
};

loader_actor::behavior_type
scripted_loader(loader_actor::stateful_pointer<scripted_loader_state> self, batch sample,
                std::int64_t per_epoch, std::int64_t hold) {
  self->state.sample = std::move(sample);
  return {
    [=](epoch_atom, std::int64_t epoch) {
      self->state.epoch = epoch;
      self->state.served = 0;
    },
    [=](next_atom) -> caf::result<loader_item> {
      auto& st = self->state;
      if (++st.requests == hold) {
        st.held.push_back(self->make_response_promise<loader_item>());
        return st.held.back();
      }
      if (st.served == per_epoch)
        return loader_item{{}, true};
      loader_item item{st.sample, false};
      item.data.epoch = st.epoch;
      item.data.index = st.served++;
      return item;
    },
  };
}

struct refuse_first_state {
  bool refused = false;
  static inline const char* name = "refuse_first_push";
};

// Answers the first push with an error, then passes pushes and pulls on to `shard`.
push_target_actor::behavior_type
refuse_first_push(push_target_actor::stateful_pointer<refuse_first_state> self,
                  push_target_actor shard) {
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      if (!self->state.refused) {
        self->state.refused = true;
        return make_error(errc::bad_request, "refused on purpose");
      }
      return self->delegate(shard, push_atom::value, std::move(push));
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return self->delegate(shard, pull_atom::value, due);
    },
    [=](rewind_atom, std::int64_t step, std::int32_t source,
        deadline due) -> caf::result<weight_set> {
      return self->delegate(shard, rewind_atom::value, step, source, due);
    },
  };
}

} // namespace

TEST_CASE("a loader that never answers fails the phase with a timeout naming it") {
  async_mlp_run run(key_plan_options{}.group_bytes);
  auto w = run.wiring(run.sys.spawn(silent_loader), 2, std::chrono::milliseconds(200));
  auto compute = spawn_compute(run.sys, std::move(run.setup.replica), w);
  run.stop.add(compute);
  caf::error failure;
  bool answered = false;
  run.self
    ->request(compute, std::chrono::seconds(30), train_atom::value, std::int64_t{0}, deadline{})
    .receive([&](phase_report&) { answered = true; }, [&](caf::error& e) { failure = e; });
  CHECK_FALSE(answered); // the phase cannot have trained without batches
  CHECK(troupe_code(failure) == errc::timeout);
  CHECK_THAT(error_text(failure), Catch::Contains("waiting for a batch from its training loader"));
}

TEST_CASE("a request left over from a failed phase does not time out the next phase") {
  async_mlp_run run(key_plan_options{}.group_bytes);
  REQUIRE(run.setup.plan.keys.groups.size() >= 2); // so a push is refused while another is out
  auto sample = synthetic_batches()->make(0, 0);
  // Phase 1 (epoch 0): step 0 runs, its first push is refused, and the batch it asked for
  // next (request 2) is never answered. Phase 2 (epoch 1) runs many short steps, for longer
  // than the step timeout, so the watchdog looks at request 2 while phase 2 is running.
  constexpr std::int64_t phase_two_steps = 4000;
  auto w = run.wiring(run.sys.spawn(scripted_loader, sample, phase_two_steps, std::int64_t{2}),
                      phase_two_steps, std::chrono::milliseconds(400));
  auto guard = run.sys.spawn(refuse_first_push, w.shards.front().shard);
  run.stop.add(guard);
  w.shards.front().shard = guard;
  auto compute = spawn_compute(run.sys, std::move(run.setup.replica), w);
  run.stop.add(compute);
  caf::error first;
  run.self
    ->request(compute, std::chrono::seconds(30), train_atom::value, std::int64_t{0}, deadline{})
    .receive([](phase_report&) {}, [&](caf::error& e) { first = e; });
  CHECK(troupe_code(first) == errc::bad_request);
  CHECK_THAT(error_text(first), Catch::Contains("refused on purpose"));
  phase_report second;
  caf::error second_error;
  auto started = std::chrono::steady_clock::now();
  run.self
    ->request(compute, std::chrono::seconds(120), train_atom::value, std::int64_t{1}, deadline{})
    .receive([&](phase_report& r) { second = r; }, [&](caf::error& e) { second_error = e; });
  const double took =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // Phase 2 must outlast the step timeout for the watchdog to look at request 2 during it
  // (4,000 steps: about 1 s here); a failure prints how long it took.
  INFO("phase 2 took " << took << " s against a step timeout of 0.4 s");
  CHECK(error_text(second_error) == "no error");
  CHECK(second.samples == phase_two_steps * sample.images.shape()[0]);
}

TEST_CASE("with overlap every push of a step leaves during backward, last layer first") {
  auto events = events_of_one_epoch(true);
  // MLP keys on one shard, backward order: fc3.bias, fc3.weight, fc2..., fc1.weight (6 keys).
  REQUIRE(events.size() == 2 * (6 + 1));
  CHECK(events[0] == "push 0"); // the shard's first key is the last layer's
  CHECK(events[5] == "push 5");
  CHECK(events[6] == "report 0"); // the batch report is sent after train_step returned
  CHECK(events[13] == "report 1");
}

TEST_CASE("without overlap the pushes of a step leave after backward") {
  auto events = events_of_one_epoch(false);
  REQUIRE(events.size() == 2 * (6 + 1));
  CHECK(events[0] == "report 0");
  CHECK(events[1] == "push 0");
  CHECK(events[7] == "report 1");
}

TEST_CASE("compute refuses wiring that misses or repeats or invents keys") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  auto replica_sizes = [] {
    std::vector<std::int64_t> sizes;
    auto m = small_mlp();
    for (auto* p : m->parameters())
      sizes.push_back(p->value.numel());
    return sizes;
  }();
  auto plan = plan_keys(replica_sizes, 2);
  auto wiring_of = [&](const key_plan& p) {
    compute_wiring w;
    for (const auto& keys : p.shards)
      w.shards.push_back(shard_route{push_target_actor{}, keys, 0});
    w.groups = p.groups;
    return w;
  };
  CHECK_NOTHROW(wiring_of(plan));
  auto no_shards = wiring_of(plan);
  no_shards.shards.clear();
  CHECK_THROWS_WITH(spawn_compute(sys, small_mlp(), no_shards),
                    Catch::Contains("no parameter shard"));
  auto missing_group = wiring_of(plan);
  missing_group.groups.pop_back();
  CHECK_THROWS_WITH(spawn_compute(sys, small_mlp(), missing_group),
                    Catch::Contains("push groups, expected exactly 1"));
  auto twice = wiring_of(plan);
  twice.groups.push_back(twice.groups.front());
  CHECK_THROWS_WITH(spawn_compute(sys, small_mlp(), twice), Catch::Contains("is in 2 push groups"));
  auto short_key = wiring_of(plan);
  short_key.shards[0].keys[0].length -= 1;
  CHECK_THROWS_WITH(spawn_compute(sys, small_mlp(), short_key),
                    Catch::Contains("the routes' keys cover"));
  auto outside = wiring_of(plan);
  outside.shards[0].keys[0].slot = 99;
  CHECK_THROWS_WITH(spawn_compute(sys, small_mlp(), outside),
                    Catch::Contains("outside the model's parameters"));
  auto bad_group = wiring_of(plan);
  bad_group.groups[0].shard = 7;
  CHECK_THROWS_WITH(spawn_compute(sys, small_mlp(), bad_group), Catch::Contains("names route 7"));
  CHECK_THROWS_WITH(spawn_compute(sys, nullptr, wiring_of(plan)),
                    Catch::Contains("no model replica"));
}

// A scheduler restarted mid-epoch asks the phases of its lost one again (docs/operations.md,
// "A lost scheduler"): the phase in flight answers every asker, a finished one is answered
// again from its report, and no batch trains twice; the position says the latest epoch asked.
TEST_CASE("a phase asked again is answered with the same report and trains nothing twice") {
  set_compute_threads(1);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  async_mlp setup(sys, 0);
  auto shards = routes_of(setup.plan, setup.targets, 0);
  auto rec = sys.spawn(recorder, shards.front().shard);
  compute_wiring w;
  w.train_loader = spawn_loader(sys, synthetic_batches());
  w.validation_loader = spawn_loader(sys, synthetic_batches());
  w.shards = {shard_route{rec, shards.front().keys, 0}};
  w.groups = setup.plan.keys.groups;
  w.metrics = rec;
  w.batches_per_epoch = 2;
  auto compute = spawn_compute(sys, std::move(setup.replica), w);
  auto position = [&] {
    std::int64_t at = -2;
    self->request(compute, std::chrono::seconds(30), position_atom::value)
      .receive([&](std::int64_t e) { at = e; }, [](caf::error& e) { FAIL(error_text(e)); });
    return at;
  };
  auto batch_reports = [&] {
    std::vector<std::string> events;
    self->request(rec, std::chrono::seconds(10), log_atom::value)
      .receive([&](std::vector<std::string>& e) { events = std::move(e); },
               [](caf::error& e) { FAIL(error_text(e)); });
    return std::count_if(events.begin(), events.end(),
                         [](auto& e) { return e.rfind("report", 0) == 0; });
  };
  CHECK(position() == -1);
  // Two askers of epoch 0, the second while the first's phase runs or once it finished: both
  // get the same report.
  auto first = self->request(compute, std::chrono::seconds(30), train_atom::value, std::int64_t{0},
                             deadline{});
  auto second = self->request(compute, std::chrono::seconds(30), train_atom::value, std::int64_t{0},
                              deadline{});
  std::vector<phase_report> answers;
  for (auto* asked : {&first, &second})
    asked->receive([&](phase_report& r) { answers.push_back(r); },
                   [](caf::error& e) { FAIL(error_text(e)); });
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].samples == 64);
  CHECK(answers[1].samples == answers[0].samples);
  CHECK(answers[1].loss_sum == answers[0].loss_sum);
  CHECK(answers[1].seconds == answers[0].seconds);
  CHECK(batch_reports() == 2);
  CHECK(position() == 0);
  // Validation, then training epoch 0 asked again: its stored report, nothing trained.
  phase_report validated;
  self
    ->request(compute, std::chrono::seconds(30), validate_atom::value, std::int64_t{0}, deadline{})
    .receive([&](phase_report& r) { validated = r; }, [](caf::error& e) { FAIL(error_text(e)); });
  CHECK(validated.validation);
  CHECK(validated.samples == 64);
  self->request(compute, std::chrono::seconds(30), train_atom::value, std::int64_t{0}, deadline{})
    .receive(
      [&](phase_report& r) {
        CHECK(r.loss_sum == answers[0].loss_sum);
        CHECK(!r.validation);
      },
      [](caf::error& e) { FAIL(error_text(e)); });
  self
    ->request(compute, std::chrono::seconds(30), validate_atom::value, std::int64_t{0}, deadline{})
    .receive([&](phase_report& r) { CHECK(r.seconds == validated.seconds); },
             [](caf::error& e) { FAIL(error_text(e)); });
  CHECK(batch_reports() == 2);
  // The next epoch trains.
  self->request(compute, std::chrono::seconds(30), train_atom::value, std::int64_t{1}, deadline{})
    .receive(
      [](phase_report& r) {
        CHECK(r.epoch == 1);
        CHECK(r.samples == 64);
      },
      [](caf::error& e) { FAIL(error_text(e)); });
  CHECK(batch_reports() == 4);
  CHECK(position() == 1);
  for (auto& a : {caf::actor_cast<caf::actor>(compute), caf::actor_cast<caf::actor>(rec),
                  caf::actor_cast<caf::actor>(shards.front().shard),
                  caf::actor_cast<caf::actor>(w.train_loader),
                  caf::actor_cast<caf::actor>(w.validation_loader)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}
