// troupe_bench_host_latency: how long a host application's own actor waits while Troupe
// trains in the same actor system. A host actor asks to be woken every 2 ms (delayed_send) on
// the host's actor system with CAF's default scheduler settings (or --scheduler-threads), while
// a training session runs --network on Fashion-MNIST (or synthetic data) beside it. It prints
// the longest gap between two wake-ups and the 99th percentile, with compute actors detached
// (their own threads: the default) and on the shared scheduler, alternated --rounds times. The
// ideal gap is 2 ms; the goal is a longest gap <= 20 ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include <caf/all.hpp>

#include "apps/bench/host_ticker.hpp"
#include "apps/flags.hpp"
#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/training_session.hpp>

using namespace troupe;

namespace {

constexpr auto bench_timeout = std::chrono::minutes(60);

training_job lenet_job(const std::string& network, std::int64_t steps, bool synthetic) {
  training_job job;
  job.model.network = network;
  if (synthetic) {
    job.train_data.name = job.validation_data.name = "synthetic";
    job.validation_data.which = split::test;
  }
  job.train_data.synthetic_size = steps * 128 * 6 / 5; // the train split is 5/6
  job.validation_data = job.train_data;
  job.validation_data.which = split::test;
  job.validate = false;
  job.epochs = 1;
  job.train_batches.batch_size = 128;
  job.optimizer.schedule.base_lr = 0.01f;
  return job;
}

void run_round(const training_job& job, int scheduler_threads, bool detached, int steps) {
  caf::actor_system_config cfg;
  if (scheduler_threads > 0)
    cfg.set("scheduler.max-threads", scheduler_threads);
  caf::actor_system sys{cfg};
  auto tick = sys.spawn(bench::host_ticker);
  session_sinks sinks;
  sinks.compute.detached = detached;
  auto session = spawn_training_session(sys, job, sinks);
  caf::scoped_actor self{sys};
  caf::error failure;
  double samples_per_s = 0;
  self->request(session, bench_timeout, run_atom::value)
    .receive(
      [&](training_result& r) {
        samples_per_s = r.phases.empty() ? 0 : r.phases[0].samples / r.phases[0].seconds;
      },
      [&](caf::error& e) { failure = e; });
  std::vector<double> gaps;
  self->request(tick, bench_timeout, bench::stop_atom::value)
    .receive([&](std::vector<double>& g) { gaps = std::move(g); }, [&](caf::error&) {});
  self->send_exit(tick, caf::exit_reason::user_shutdown);
  self->send_exit(session, caf::exit_reason::user_shutdown);
  if (failure)
    throw std::runtime_error(error_text(failure));
  std::sort(gaps.begin(), gaps.end());
  const double longest = gaps.empty() ? 0 : gaps.back();
  const double p99 = gaps.empty() ? 0 : gaps[gaps.size() * 99 / 100];
  std::printf("%-10s %9d %9s %8zu %12.2f %10.2f %12.0f\n", job.model.network.c_str(),
              scheduler_threads, detached ? "yes" : "no", gaps.size(), longest, p99, samples_per_s);
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  std::string network = "lenet", data = "synthetic";
  int steps = 60, rounds = 2, scheduler_threads = 0;
  flag_set f("bench-host-latency",
             "Longest gap of a host actor's 2 ms timer while a session trains beside it, with "
             "compute actors detached and on the shared scheduler.");
  f.add("network", network, "network to train");
  f.add("data", data, "synthetic (1x28x28, --steps batches) | fashion-mnist (a whole epoch)");
  f.add("steps", steps, "training steps (batch 128) per round");
  f.add("rounds", rounds, "rounds, each detached then shared");
  f.add("scheduler-threads", scheduler_threads, "host scheduler threads (0: CAF's default)");
  try {
    if (!f.parse(std::vector<std::string>(argv + 1, argv + argc))) {
      std::cout << f.help();
      return 0;
    }
    if (steps < 1 || rounds < 1 || scheduler_threads < 0)
      throw usage_error("--steps and --rounds must be positive, --scheduler-threads >= 0");
    auto job = lenet_job(network, steps, data == "synthetic");
    if (data != "synthetic") {
      job.train_data.name = "fashion-mnist";
      job.train_data.dir = "/usr/share/datasets/fashion-mnist";
      job.validation_data = job.train_data;
      job.train_batches.part = 0;
    }
    std::printf("%-10s %9s %9s %8s %12s %10s %12s\n", "network", "sched thr", "detached", "ticks",
                "longest ms", "p99 ms", "samples/s");
    for (int r = 0; r < rounds; ++r)
      for (bool detached : {true, false})
        run_round(job, scheduler_threads, detached, steps);
  } catch (const std::exception& e) {
    std::cerr << "troupe_bench_host_latency: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
