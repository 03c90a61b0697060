// The scheduler's blocking wrapper (run_scheduler, cluster_node.hpp) and its interrupt: the
// caller's thread waits for the run's result; an interrupt ends the run as interrupted and the
// wrapper then throws run_interrupted, so the caller ends the process.
#include <troupe/cluster/cluster_node.hpp>

#include <map>
#include <string>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/node_part.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/io/dataset.hpp>

#include "cluster/node_common.hpp"
#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

void scheduler_interrupt::arm(caf::actor_system& system, interruptible_actor scheduler) {
  std::lock_guard<std::mutex> lock(mutex_);
  system_ = &system;
  scheduler_ = std::move(scheduler);
}

void scheduler_interrupt::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  system_ = nullptr;
  scheduler_ = interruptible_actor{};
}

bool scheduler_interrupt::interrupted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return interrupted_;
}

void scheduler_interrupt::interrupt(const std::string& why, std::chrono::milliseconds bound) {
  interruptible_actor scheduler;
  caf::actor_system* system = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
    scheduler = scheduler_;
    system = system_;
  }
  if (!scheduler || !system)
    return;
  caf::scoped_actor waiting{*system};
  waiting->monitor(scheduler);
  waiting->send(scheduler, interrupt_atom::value, why);
  waiting->receive([](const caf::down_msg&) {}, caf::after(bound) >> [] {});
}

namespace {

// The plan node each compute rank lives on, for the step records' per-node times. An adopted
// rank's steps count for the node its compute was placed on.
std::map<int, std::string> rank_nodes_of(const placement_plan& plan) {
  std::map<int, std::string> nodes;
  for (auto c : plan.actors_of(plan_role::compute)) {
    const auto& a = plan.actors[c];
    if (a.node >= 0 && static_cast<std::size_t>(a.node) < plan.nodes.size())
      nodes[a.rank] = plan.nodes[static_cast<std::size_t>(a.node)].name;
  }
  return nodes;
}

} // namespace

training_result run_scheduler(caf::actor_system& system, const training_job& job,
                              const scheduler_options& options, const session_output& output) {
  check_job(job);
  if (job.nodes.servers < 1 || job.nodes.workers < 1)
    throw std::invalid_argument(
      "scheduler: the job names no server and worker processes "
      "(cluster.server_nodes / worker_nodes, --server-nodes / --worker-nodes)");
  // Plan before anyone joins: the assignments carry the plan's hash and data facts.
  auto train_set = open_dataset(job.train_data);
  auto validation_set = open_dataset(job.validation_data);
  const auto facts = data_facts_of(*train_set, *validation_set);
  auto plan = plan_placement(job, facts);
  if (output.status)
    output.status->set_plan(status_plan_of(plan));
  auto metrics_options = metrics_options_of(job, output);
  metrics_options.rank_nodes = rank_nodes_of(plan);
  metrics_options.validation_examples =
    facts.validation_examples; // a lost worker's part goes unvalidated
  auto metrics = spawn_metrics(system, std::move(metrics_options));
  auto node =
    spawn_scheduler_node(system, scheduler_setup{options, job, output, std::move(plan), facts,
                                                 metrics, train_set, validation_set});
  caf::scoped_actor blocking{system};
  if (options.interrupt)
    options.interrupt->arm(system, node);
  // The scheduler's own deadlines (join, every epoch) end the run first; this bound only
  // keeps a bug from hanging the process.
  const auto bound = options.join_timeout * 2 + phases_limit(options.timeouts, job.epochs * 2 + 4);
  std::optional<training_result> result;
  caf::error failure;
  blocking->request(node, bound, run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  blocking->send_exit(node, caf::exit_reason::user_shutdown);
  blocking->wait_for(node);
  blocking->send_exit(metrics, caf::exit_reason::user_shutdown);
  blocking->wait_for(metrics);
  if (options.interrupt) {
    options.interrupt->disarm();
    if (options.interrupt->interrupted())
      throw run_interrupted();
  }
  if (!result)
    throw troupe_error(troupe_code(failure), error_text(failure));
  return std::move(*result);
}

} // namespace troupe
