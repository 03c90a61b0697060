// What `troupe check` prints and what a session spawns are the same actors and routes: for
// every example config, the plan check prints (plan_config on the config's job, the data's
// standard sizes) is compared, actor by actor and route by route, with the wiring report of a
// real session of the same job. The session reports the handles it actually gave each actor,
// so a wiring that strays from the plan fails here. The data is swapped for synthetic data of
// the same shape (CIFAR-10 files are not on this machine), which leaves actors and routes as
// they are; the run trains 0 epochs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include <caf/all.hpp>

#include "apps/config_options.hpp"
#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/graph/config/job_plan.hpp>

using namespace troupe;

namespace {

using route_key = std::tuple<std::string, std::string, std::string>; // from, to, carries

std::vector<std::filesystem::path> example_configs() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(TROUPE_EXAMPLES_DIR))
    if (entry.path().extension() == ".troupe")
      out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<route_key> planned_routes(const placement_plan& plan) {
  std::vector<route_key> out;
  for (const auto& r : plan.routes)
    out.emplace_back(plan.actors[r.from].name, plan.actors[r.to].name, to_string(r.carries));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<route_key> wired_routes(const wiring_report& report) {
  std::vector<route_key> out;
  for (const auto& r : report.routes)
    out.emplace_back(r.from, r.to, to_string(r.carries));
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, int> per_role(const placement_plan& plan) {
  std::map<std::string, int> out;
  for (const auto& a : plan.actors)
    ++out[to_string(a.role)];
  return out;
}

std::map<std::string, int> per_role(const wiring_report& report) {
  std::map<std::string, int> out;
  for (const auto& a : report.actors)
    ++out[to_string(a.role)];
  return out;
}

// The same job on small synthetic data of the shape the plan was made for, 0 epochs.
training_job on_synthetic(training_job job, const data_facts& facts) {
  for (auto* d : {&job.train_data, &job.validation_data}) {
    d->name = "synthetic";
    d->synthetic_shape = facts.sample_shape;
    d->synthetic_classes = facts.classes;
    d->synthetic_size = job.train_batches.batch_size * job.topology.workers * 3;
  }
  job.validation_data.which = split::test;
  job.epochs = 0;
  return job;
}

} // namespace

TEST_CASE("for every example config the session spawns and wires exactly the plan check prints") {
  const auto configs = example_configs();
  REQUIRE(configs.size() >= 9);
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  for (const auto& path : configs) {
    INFO(path.filename().string());
    auto config = load_job_config(path.string());
    resolve_app_defaults(config);
    const auto job = to_training_job(config);
    const auto facts = expected_data_facts(job);
    const auto printed = plan_config(config, job, facts); // what `troupe check` prints

    std::mutex mutex;
    std::optional<wiring_report> wired;
    session_sinks sinks;
    sinks.on_wired = [&](const wiring_report& r) {
      std::lock_guard<std::mutex> lock(mutex);
      wired = r;
    };
    auto session = spawn_training_session(sys, on_synthetic(job, facts), sinks);
    self->request(session, std::chrono::minutes(5), run_atom::value)
      .receive([](training_result&) {}, [](caf::error& e) { FAIL(error_text(e)); });
    self->send_exit(session, caf::exit_reason::user_shutdown);
    std::lock_guard<std::mutex> lock(mutex);
    REQUIRE(wired.has_value());

    // Counts per role first, then every actor by name, then every route.
    CHECK(per_role(*wired) == per_role(printed));
    std::vector<std::string> planned_names, wired_names;
    for (const auto& a : printed.actors)
      planned_names.push_back(a.name);
    for (const auto& a : wired->actors)
      wired_names.push_back(a.name);
    std::sort(planned_names.begin(), planned_names.end());
    std::sort(wired_names.begin(), wired_names.end());
    REQUIRE(wired_names.size() == planned_names.size());
    CHECK(wired_names == planned_names);
    const auto planned = planned_routes(printed), actual = wired_routes(*wired);
    REQUIRE(actual.size() == planned.size());
    CHECK(actual == planned);
    CHECK(wired->plan_hash != 0);
  }
}
