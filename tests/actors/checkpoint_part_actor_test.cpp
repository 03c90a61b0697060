// The two actors of a cluster checkpoint, in one process: each node's part saves its own
// shards' keys (sliced keys too) and the manifest checkpoint writes the manifest only once every
// part is written; what they saved reads back as the shards held it, and restores into shards
// keyed another way (re-sharded). A part that fails (its shard gone, the part itself gone, a
// checkpoint of another model) fails the whole save or restore naming the node or the file,
// and no manifest is written. Whole runs through processes: tests/apps/cluster_checkpoint.py.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/checkpoint_part_actor.hpp>
#include <troupe/actors/loader_actor.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/dataset.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

// Parameters "a" [4] and "b" [2, 3]; shard 0 holds a and b[0:2], shard 1 holds b[2:6].
const std::vector<std::string> names{"a", "b"};
const std::vector<shape_t> shapes{{4}, {2, 3}};
const std::vector<float> a_values{1, 2, 3, 4}, b_values{5, 6, 7, 8, 9, 10};

update_rule rule_of(optimizer_kind kind) {
  update_rule r;
  r.kind = kind;
  r.sgd = sgd_options{0.9f, 0, false};
  return r;
}

param_shard_actor shard_of(caf::actor_system& sys, std::vector<std::pair<std::string, tensor>> keys,
                           const update_rule& rule = rule_of(optimizer_kind::sgd)) {
  std::vector<shard_key> k;
  for (auto& [name, value] : keys)
    k.push_back({name, value});
  shard_options o;
  o.optimizer = rule;
  o.schedule.base_lr = 0.1f;
  return spawn_param_shard(sys, std::move(k), o);
}

tensor flat(std::vector<float> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return tensor::from_values({n}, values);
}

struct two_shards {
  param_shard_actor first, second;
  std::vector<key_slice> first_keys{{0, 0, 4, true}, {1, 0, 2, false}};
  std::vector<key_slice> second_keys{{1, 2, 4, false}};
  two_shards(caf::actor_system& sys, const update_rule& rule)
      : first(
        shard_of(sys, {{"a", tensor::from_values({4}, a_values)}, {"b[0:2]", flat({5, 6})}}, rule)),
        second(shard_of(sys, {{"b[2:6]", flat({7, 8, 9, 10})}}, rule)) {}
};

checkpoint_part_wiring part_wiring(std::vector<part_shard> shards) {
  checkpoint_part_wiring w;
  w.shards = std::move(shards);
  w.parameter_names = names;
  w.parameter_shapes = shapes;
  w.run_shards = 2;
  w.run_workers = 1;
  w.steps_per_epoch = 8;
  return w;
}

manifest_checkpoint_wiring manifest_wiring(const std::string& prefix,
                                           std::vector<manifest_part> parts) {
  manifest_checkpoint_wiring w;
  w.prefix = prefix;
  w.parts = std::move(parts);
  w.header.network = "test";
  w.header.steps_per_epoch = 8;
  w.header.parameter_names = names;
  w.header.parameter_shapes = shapes;
  w.header.workers = 1;
  w.header.shards = 2;
  w.timeout = std::chrono::seconds(30);
  return w;
}

// A worker's part: a real compute actor (an MLP replica, which has no buffers) as worker 0.
struct worker_part {
  caf::actor loader;
  param_shard_actor shard;
  local_compute_actor compute;
  checkpoint_part_actor part;
  explicit worker_part(caf::actor_system& sys) {
    dataset_options d;
    d.name = "synthetic";
    d.synthetic_shape = {1, 4, 4};
    d.synthetic_size = 8;
    batch_source_options b;
    b.batch_size = 4;
    auto batches = spawn_loader(sys, std::make_shared<const batch_source>(open_dataset(d), b));
    loader = caf::actor_cast<caf::actor>(batches);
    model_spec spec;
    spec.sample_shape = {1, 4, 4};
    auto replica = build_model(spec);
    std::vector<std::int64_t> sizes;
    for (auto* p : replica->parameters())
      sizes.push_back(p->value.numel());
    const auto keys = plan_keys(sizes, 1);
    std::vector<shard_key> values;
    for (auto* p : replica->parameters())
      values.push_back({p->name, p->value});
    shard = spawn_param_shard(sys, std::move(values), shard_options{});
    compute_wiring w;
    w.shards = {shard_route{shard, keys.shards.front(), 0}};
    w.groups = keys.groups;
    w.train_loader = batches;
    w.validation_loader = batches;
    w.batches_per_epoch = 2;
    compute = spawn_compute(sys, std::move(replica), w);
    checkpoint_part_wiring p;
    p.replicas = {{0, compute}};
    p.parameter_names = names;
    p.parameter_shapes = shapes;
    p.run_shards = 2;
    p.run_workers = 1;
    p.steps_per_epoch = 8;
    part = spawn_checkpoint_part(sys, p);
  }
  ~worker_part() {
    for (auto a : {loader, caf::actor_cast<caf::actor>(shard), caf::actor_cast<caf::actor>(compute),
                   caf::actor_cast<caf::actor>(part)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
};

std::vector<float> values_of(const tensor& t) {
  return std::vector<float>(t.data(), t.data() + t.numel());
}

// Lines logged from the manifest's own thread.
struct log_lines {
  std::mutex mutex;
  std::vector<std::string> lines;
  void add(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(line);
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return lines;
  }
};

// Saves epoch 1 through a manifest over parts of `shards`; the answer or the error.
// With `lines`, the manifest's progress lines are collected there (else they go to stderr).
caf::expected<std::string> save(caf::actor_system& sys, const std::string& prefix,
                                std::vector<manifest_part> parts,
                                std::shared_ptr<log_lines> lines = nullptr) {
  auto w = manifest_wiring(prefix, std::move(parts));
  if (lines)
    w.log = [lines](const std::string& line) { lines->add(line); };
  auto manifest = spawn_manifest_checkpoint(sys, std::move(w));
  caf::scoped_actor self{sys};
  caf::expected<std::string> result{std::string()};
  self->request(manifest, std::chrono::seconds(60), save_atom::value, std::int64_t{1})
    .receive([&](std::string& path) { result = path; }, [&](caf::error& err) { result = err; });
  self->send_exit(manifest, caf::exit_reason::user_shutdown);
  return result;
}

// Two servers' parts (shard 0 and shard 1 of two_shards) and a worker's, in one actor system;
// every actor is shut down at the end.
struct three_parts {
  // Before the actor system, so it goes after it: a save that failed on one part leaves the
  // others writing, and the system's end waits for them; a folder removed first could get their
  // files back between emptying it and removing it (a run left one behind).
  test::temp_dir dir;
  local_node_config cfg;
  caf::actor_system sys{cfg};
  update_rule rule;
  two_shards s{sys, rule};
  worker_part rank{sys};
  checkpoint_part_actor server_0 =
    spawn_checkpoint_part(sys, part_wiring({{0, s.first, s.first_keys}}));
  checkpoint_part_actor server_1 =
    spawn_checkpoint_part(sys, part_wiring({{1, s.second, s.second_keys}}));
  const std::string prefix = dir.file("m");
  explicit three_parts(optimizer_kind kind = optimizer_kind::sgd) : rule(rule_of(kind)) {}
  std::vector<manifest_part> all() const {
    return {{"server_0", server_0}, {"server_1", server_1}, {"worker_0", rank.part}};
  }
  // Kills `a` and returns once it is down.
  template <class Handle> void kill(const Handle& a) {
    caf::scoped_actor self{sys};
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::kill);
    self->receive([](caf::down_msg&) {});
  }
  ~three_parts() {
    for (auto a : {caf::actor_cast<caf::actor>(server_0), caf::actor_cast<caf::actor>(server_1),
                   caf::actor_cast<caf::actor>(s.first), caf::actor_cast<caf::actor>(s.second)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
};

// three_parts whose shards apply Adam.
struct adam_parts : three_parts {
  adam_parts() : three_parts(optimizer_kind::adam) {}
};

template <class Answer> Answer ask(caf::scoped_actor& self, const caf::actor& to, caf::message m) {
  Answer out;
  self->request(to, std::chrono::seconds(30), std::move(m))
    .receive([&](Answer& a) { out = std::move(a); },
             [&](caf::error& err) { FAIL(error_text(err)); });
  return out;
}

template <class Handle> caf::actor plain(const Handle& h) {
  return caf::actor_cast<caf::actor>(h);
}

std::vector<float> joined(const tensor& a, const tensor& b) {
  auto out = values_of(a);
  const auto rest = values_of(b);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

} // namespace

TEST_CASE_METHOD(adam_parts, "an Adam shard's moments and update counts are saved by its part, "
                             "and restore into a shard keyed another way") {
  caf::scoped_actor self{sys};
  // One push of every key, so every moment is non-zero and every count 1.
  gradient_push push;
  push.keys = {0, 1};
  push.gradients = {flat({0.5f, -1, 2, 0.25f}), flat({1, -3})};
  ask<weight_set>(self, plain(s.first), caf::make_message(push_atom::value, push));
  push.keys = {0};
  push.gradients = {flat({-0.5f, 4, 1, 2})};
  ask<weight_set>(self, plain(s.second), caf::make_message(push_atom::value, push));
  const auto first =
    ask<shard_snapshot>(self, plain(s.first), caf::make_message(snapshot_atom::value));
  const auto second =
    ask<shard_snapshot>(self, plain(s.second), caf::make_message(snapshot_atom::value));
  REQUIRE(first.state.size() == 2);
  REQUIRE(second.state.size() == 1);
  REQUIRE(save(sys, prefix, all()));

  const auto c = read_any_checkpoint(prefix, 1);
  CHECK(c.optimizer == optimizer_kind::adam);
  REQUIRE(c.state.size() == 2);
  for (std::size_t slot = 0; slot < 2; ++slot) {
    REQUIRE(c.state[slot].tensors.size() == 2);
    CHECK(c.state[slot].steps == 1);
  }
  for (std::size_t t = 0; t < 2; ++t) {
    CHECK(values_of(c.state[0].tensors[t]) == values_of(first.state[0].tensors[t]));
    CHECK(values_of(c.state[1].tensors[t])
          == joined(first.state[1].tensors[t], second.state[0].tensors[t]));
  }

  auto whole = shard_of(sys, {{"a", tensor(shape_t{4})}, {"b", tensor(shape_t{2, 3})}},
                        rule_of(optimizer_kind::adam));
  auto w = part_wiring({{0, whole, {{0, 0, 4, true}, {1, 0, 6, true}}}});
  w.run_shards = 1;
  auto part = spawn_checkpoint_part(sys, w);
  CHECK(ask<bool>(self, plain(part),
                  caf::make_message(restore_atom::value, std::int64_t{1}, prefix,
                                    deadline::after(std::chrono::seconds(30)))));
  const auto back =
    ask<shard_snapshot>(self, plain(whole), caf::make_message(snapshot_atom::value));
  CHECK(back.optimizer == optimizer_kind::adam);
  REQUIRE(back.state.size() == 2);
  for (std::size_t t = 0; t < 2; ++t) {
    CHECK(values_of(back.state[0].tensors.at(t)) == values_of(first.state[0].tensors[t]));
    CHECK(values_of(back.state[1].tensors.at(t))
          == joined(first.state[1].tensors[t], second.state[0].tensors[t]));
  }
  CHECK(back.state[0].steps == 1);
  CHECK(back.state[1].steps == 1);
  for (auto a : {plain(part), plain(whole)})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(three_parts,
                 "every part saves its own shards' keys, and the manifest names them") {
  auto saved = save(sys, prefix, all());
  REQUIRE(saved);
  CHECK(*saved == checkpoint_manifest_path(prefix, 1));
  CHECK(std::filesystem::exists(checkpoint_part_path(prefix, 1, "server_0")));
  CHECK(std::filesystem::exists(checkpoint_part_path(prefix, 1, "server_1")));
  CHECK(std::filesystem::exists(checkpoint_part_path(prefix, 1, "worker_0")));
  const auto c = read_any_checkpoint(prefix, 1);
  REQUIRE(c.parameters.size() == 2);
  CHECK(c.parameters[0].name == "a");
  CHECK(values_of(c.parameters[0].value) == a_values);
  CHECK(c.parameters[1].value.shape() == shape_t{2, 3});
  CHECK(values_of(c.parameters[1].value) == b_values);
  REQUIRE(c.shards.size() == 2);
  REQUIRE(c.replicas.size() == 1);

  SECTION("and restores them into one shard keyed another way") {
    auto whole = shard_of(sys, {{"a", tensor(shape_t{4})}, {"b", tensor(shape_t{2, 3})}});
    auto w = part_wiring({{0, whole, {{0, 0, 4, true}, {1, 0, 6, true}}}});
    w.run_shards = 1;
    auto part = spawn_checkpoint_part(sys, w);
    caf::scoped_actor self{sys};
    bool restored = false;
    self
      ->request(part, std::chrono::seconds(60), restore_atom::value, std::int64_t{1}, prefix,
                deadline::after(std::chrono::seconds(30)))
      .receive([&](bool ok) { restored = ok; }, [&](caf::error& err) { FAIL(error_text(err)); });
    REQUIRE(restored);
    self
      ->request(whole, std::chrono::seconds(30), pull_atom::value,
                deadline::after(std::chrono::seconds(20)))
      .receive(
        [&](weight_set& w) {
          REQUIRE(w.weights.size() == 2);
          CHECK(values_of(w.weights[0]) == a_values);
          CHECK(values_of(w.weights[1]) == b_values);
        },
        [&](caf::error& err) { FAIL(error_text(err)); });
    self->send_exit(part, caf::exit_reason::user_shutdown);
    self->send_exit(whole, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE_METHOD(
  three_parts,
  "a part that cannot save fails the save naming its node, and no manifest is written") {
  SECTION("its shard is gone") {
    kill(s.second);
    auto saved = save(sys, prefix, all());
    REQUIRE_FALSE(saved);
    CHECK_THAT(error_text(saved.error()), Contains("server_1"));
  }
  SECTION("it says it saves, and never that it saved") {
    kill(server_1);
    auto lines = std::make_shared<log_lines>();
    REQUIRE_FALSE(save(sys, prefix, {{"server_0", server_0}, {"server_1", server_1}}, lines));
    CHECK(lines->get() == std::vector<std::string>{"checkpoint: saving epoch 1 (2 parts)"});
  }
  SECTION("the part itself is gone (its node lost)") {
    kill(server_1);
    auto saved = save(sys, prefix, all());
    REQUIRE_FALSE(saved);
    CHECK_THAT(error_text(saved.error()), Contains("server_1"));
  }
  CHECK_FALSE(std::filesystem::exists(checkpoint_manifest_path(prefix, 1)));
}

TEST_CASE_METHOD(three_parts,
                 "a part refuses to restore a checkpoint of another model, naming the file") {
  REQUIRE(save(sys, prefix, all()));
  auto other = shard_of(sys, {{"a", tensor(shape_t{5})}});
  auto w = part_wiring({{0, other, {{0, 0, 5, true}}}});
  w.parameter_names = {"a"};
  w.parameter_shapes = {{5}};
  w.run_shards = 1;
  auto part = spawn_checkpoint_part(sys, w);
  caf::scoped_actor self{sys};
  std::string refusal;
  self
    ->request(part, std::chrono::seconds(60), restore_atom::value, std::int64_t{1}, prefix,
              deadline::after(std::chrono::seconds(30)))
    .receive([&](bool) { FAIL("a checkpoint of another model was restored"); },
             [&](caf::error& err) { refusal = error_text(err); });
  CHECK_THAT(refusal, Contains(checkpoint_manifest_path(prefix, 1)));
  CHECK_THAT(refusal, Contains("2 parameters"));
  for (auto a : {caf::actor_cast<caf::actor>(part), caf::actor_cast<caf::actor>(other)})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(
  three_parts,
  "the manifest says when a save and a restore start and end, so a save in progress is seen") {
  auto lines = std::make_shared<log_lines>();
  REQUIRE(save(sys, prefix, all(), lines));
  CHECK(lines->get()
        == std::vector<std::string>{"checkpoint: saving epoch 1 (3 parts)",
                                    "checkpoint: saved " + checkpoint_manifest_path(prefix, 1)});

  auto w = manifest_wiring(prefix, {{"server_0", server_0}, {"server_1", server_1}});
  w.resume_epoch = 1;
  auto restored_lines = std::make_shared<log_lines>();
  w.log = [restored_lines](const std::string& line) { restored_lines->add(line); };
  auto manifest = spawn_manifest_checkpoint(sys, std::move(w));
  caf::scoped_actor self{sys};
  self->request(manifest, std::chrono::seconds(60), restore_atom::value)
    .receive([](bool) {}, [&](caf::error& err) { FAIL(error_text(err)); });
  CHECK(restored_lines->get()
        == std::vector<std::string>{"checkpoint: restoring epoch 1 (2 parts)",
                                    "checkpoint: restored epoch 1"});
  self->send_exit(manifest, caf::exit_reason::user_shutdown);
}
