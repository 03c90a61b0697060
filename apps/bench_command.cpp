// `troupe bench`: training throughput of the compute path (forward, backward, SGD update) for
// mlp, lenet and resnet-20, measured the way the PyTorch comparison script measures its peer:
// same model, batch, thread count, warm-up steps, then timed steps; MLP and LeNet on real
// Fashion-MNIST batches, ResNet-20 on a few synthetic 3x32x32 batches cycled.
//
// `--end-to-end` puts the same step beside a whole training session in one process: the bare
// step on batches built in advance from the job's own data (forward + backward + the shard's
// SGD update, weight decay included, on the calling thread), then the same job through the
// actors (loader, compute, aggregator, shard, coordinator, metrics; `troupe train`'s flags and
// actor system), timed per training epoch after the first. Each side reports its median: of
// the session's timed epochs, and of as many runs of the bare steps (the machines this runs
// on are shared; a median of several is steadier than one long run). The difference per step
// is what the session costs. Loading is reported apart (`load` line): in the session it runs
// on a scheduler thread beside the step, never inside the bare figure.
//
// Prints one `RESULT ...` line per model and mode (machine-readable, used by
// scripts/bench_vs_torch.py and scripts/bench_session.py) with the arithmetic beside it:
// images/s = steps * batch / seconds.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>
#include <thread>
#include <tuple>

#include <caf/all.hpp>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/train_flags.hpp"
#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/io/normalization.hpp>
#include <troupe/kernels/device_info.hpp>
#include <troupe/kernels/sgd.hpp>
#include <troupe/kernels/threading.hpp>

namespace troupe {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// Process-wide CPU time and context switches (all threads), to put beside wall time: they show
// what a configuration costs even when other processes make the wall time noisy.
struct usage_mark {
  double cpu_s = 0;
  long voluntary = 0, involuntary = 0;
  static usage_mark now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto sec = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
    return {sec(u.ru_utime) + sec(u.ru_stime), u.ru_nvcsw, u.ru_nivcsw};
  }
  usage_mark operator-(const usage_mark& o) const {
    return {cpu_s - o.cpu_s, voluntary - o.voluntary, involuntary - o.involuntary};
  }
};

struct bench_case {
  std::string name;
  model_spec spec;
  std::int64_t default_steps;
  bool real_data;
  /// --end-to-end: the `troupe train` flags of the session (data and model; the bench adds
  /// batch size, threads, seed, epochs). Small synthetic sets keep LeNet and ResNet-20 short.
  std::vector<std::string> session_flags;
  std::int64_t session_epochs = 2;
};

bench_case lookup_case(const std::string& name) {
  if (name == "mlp")
    return {name,
            {"mlp", 0, {1, 28, 28}, 10, 0},
            500,
            true,
            {"--network", "mlp", "--dataset", "fashion-mnist"},
            6};
  if (name == "lenet")
    return {name,
            {"lenet", 0, {1, 28, 28}, 10, 0},
            50,
            true,
            {"--network", "lenet", "--dataset", "synthetic", "--image-shape", "1,28,28",
             "--num-examples", "7680"}};
  if (name == "resnet-20")
    return {name,
            {"resnet", 20, {3, 32, 32}, 10, 0},
            40,
            false,
            {"--network", "resnet", "--num-layers", "20", "--dataset", "synthetic", "--image-shape",
             "3,32,32", "--num-examples", "2560"}};
  // The GPU rows (CIFAR-sized input; scripts/bench_pytorch_gpu.py builds the same
  // networks in PyTorch): a few synthetic batches, as for resnet-20.
  const auto cifar = [&](const char* network, int depth, std::int64_t steps) {
    std::vector<std::string> flags{"--network",     network,   "--dataset",      "synthetic",
                                   "--image-shape", "3,32,32", "--num-examples", "2560"};
    if (depth > 0) {
      flags.emplace_back("--num-layers");
      flags.push_back(std::to_string(depth));
    }
    return bench_case{name, {network, depth, {3, 32, 32}, 10, 0}, steps, false, flags};
  };
  if (name == "resnet-110")
    return cifar("resnet", 110, 20);
  if (name == "resnet-50")
    return cifar("resnet", 50, 20);
  if (name == "vgg-16")
    return cifar("vgg", 16, 20);
  if (name == "inception-bn")
    return cifar("inception-bn", 0, 20);
  throw usage_error(
    "--models: unknown model '" + name
    + "' (known: mlp, lenet, resnet-20, resnet-110, resnet-50, vgg-16, inception-bn)");
}

// Batches in the same order the peer script uses: the first steps*B training images, no
// shuffling, for real data; a handful of seeded synthetic batches otherwise.
std::vector<batch> make_batches(const bench_case& c, std::int64_t batch_size, std::int64_t count,
                                const std::string& data_dir) {
  dataset_options d;
  if (c.real_data) {
    d.name = "fashion-mnist";
    d.dir = data_dir;
  } else {
    d.name = "synthetic";
    d.synthetic_shape = c.spec.sample_shape;
    d.synthetic_size = batch_size * 4;
  }
  batch_source_options b;
  b.batch_size = batch_size;
  b.shuffle = false;
  b.drop_last = true;
  if (c.real_data)
    std::tie(b.augment.mean, b.augment.stdev) = standard_normalization("fashion-mnist");
  batch_source source(open_dataset(d), b);
  std::vector<batch> out;
  for (std::int64_t i = 0; i < std::min(count, source.batches_per_epoch()); ++i)
    out.push_back(source.make(0, i));
  return out;
}

struct bench_figures {
  double images_per_second;
  double step_ms;
  std::int64_t parameters;
  usage_mark used; // of the timed steps, whole process
};

/// `steps` timed steps after `warmup`, cycling through `batches`; each step is the model's
/// train_step and one SGD update per parameter (weight decay where the parameter takes it).
bench_figures time_steps(model& m, const std::vector<batch>& batches, const sgd_options& sgd,
                         std::int64_t steps, std::int64_t warmup) {
  std::vector<tensor> velocity;
  for (auto* p : m.parameters())
    velocity.push_back(m.device().kind == device_kind::cpu
                         ? tensor(p->value.shape())
                         : tensor(p->value.shape()).to_gpu(m.device().index));
  std::int64_t images = 0;
  auto step = [&](std::int64_t i) {
    const auto& b = batches[static_cast<std::size_t>(i) % batches.size()];
    m.train_step(b.images, b.labels);
    auto& params = m.parameters();
    for (std::size_t k = 0; k < params.size(); ++k)
      sgd_update(sgd, 0.05f, params[k]->value, params[k]->grad, velocity[k], params[k]->value,
                 params[k]->weight_decay);
    return static_cast<std::int64_t>(b.labels.size());
  };
  for (std::int64_t i = 0; i < warmup; ++i)
    step(i);
  auto start = clock_type::now();
  auto before = usage_mark::now();
  for (std::int64_t i = warmup; i < warmup + steps; ++i)
    images += step(i);
  double seconds = seconds_since(start);
  return {images / seconds, 1000.0 * seconds / steps, m.parameter_count(),
          usage_mark::now() - before};
}

// On a GPU the model, its velocity and the batches live in device memory before the clock
// starts (as the PyTorch script keeps its batch on the GPU): the figure is the step's kernels
// and launches, the loss coming back, and the SGD update (one synchronized call per parameter,
// kernels/device_sgd.hpp).
bench_figures run_case(const bench_case& c, std::int64_t batch_size, std::int64_t steps,
                       std::int64_t warmup, const std::string& data_dir,
                       const compute_device& device) {
  auto m = build_model(c.spec);
  auto batches = make_batches(c, batch_size, c.real_data ? steps + warmup : 4, data_dir);
  if (device.kind != device_kind::cpu) {
    m->to_device(device);
    for (auto& b : batches)
      b.images = b.images.to_gpu(device.index);
  }
  return time_steps(*m, batches, sgd_options{0.9f, 0.0f, false}, steps, warmup);
}

// "cpu_ms_per_step=... vcsw_per_step=... ivcsw_per_step=..." for the RESULT lines.
std::string usage_text(const usage_mark& u, std::int64_t steps) {
  const double n = static_cast<double>(std::max<std::int64_t>(1, steps));
  char buf[160];
  std::snprintf(buf, sizeof buf, "cpu_ms_per_step=%.3f vcsw_per_step=%.1f ivcsw_per_step=%.1f",
                1000.0 * u.cpu_s / n, u.voluntary / n, u.involuntary / n);
  return buf;
}

void print_bare(const bench_case& c, const char* mode, std::int64_t batch_size, int threads,
                std::int64_t steps, const bench_figures& r, const compute_device& device = {}) {
  std::printf("RESULT model=%s mode=%s device=%s batch=%lld threads=%d params=%lld steps=%lld "
              "imgs_per_s=%.1f step_ms=%.3f %s  (= %lld steps x %lld images / %.3f s)\n",
              c.name.c_str(), mode, to_string(device).c_str(), static_cast<long long>(batch_size),
              threads, static_cast<long long>(r.parameters), static_cast<long long>(steps),
              r.images_per_second, r.step_ms, usage_text(r.used, steps).c_str(),
              static_cast<long long>(steps), static_cast<long long>(batch_size),
              r.step_ms * steps / 1000.0);
  std::fflush(stdout);
}

// --- end to end ---------------------------------------------------------------------------

struct session_settings {
  std::int64_t epochs = 0; // the first is warm-up, the others are timed; 0: the model's own
  std::string train_flags; // more `troupe train` flags, space-separated
  bool detached = compute_spawn_options{}.detached;
  local_node_options node;
  compute_device device; // of the compute actor, and of the bare step beside it
};

train_command_line session_job(const bench_case& c, std::int64_t batch_size, int threads,
                               const session_settings& s) {
  std::vector<std::string> flags, more_flags;
  std::stringstream more(s.train_flags);
  for (std::string word; more >> word;)
    more_flags.push_back(word);
  // A config names its own data and model: the case's flags would contradict it.
  if (std::find(more_flags.begin(), more_flags.end(), "--config") == more_flags.end())
    flags = c.session_flags;
  flags.insert(flags.end(), more_flags.begin(), more_flags.end());
  const auto epochs = s.epochs > 0 ? s.epochs : c.session_epochs;
  const std::vector<std::string> extra{"--batch-size",
                                       std::to_string(batch_size),
                                       "--threads",
                                       std::to_string(threads),
                                       "--num-epochs",
                                       std::to_string(epochs),
                                       "--seed",
                                       "0",
                                       "--no-validation",
                                       "--disp-batches",
                                       "0",
                                       "--progress",
                                       "off"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return parse_train_flags(flags);
}

// The median of `figures` by images/s (the upper one of an even count).
template <class Figures> Figures median_by_rate(std::vector<Figures> figures) {
  std::sort(figures.begin(), figures.end(), [](const Figures& a, const Figures& b) {
    return a.images_per_second < b.images_per_second;
  });
  return figures.at(figures.size() / 2);
}

// The bare step on the session's own first batches (shuffled as the session shuffles them,
// same normalization): `repeats` runs of `steps` steps (as many as the session's timed
// epochs), the median; `load_ms` is how long building one of those batches took.
// On a GPU the batches stay on the host and each step uploads its own, as the session's
// compute actor does.
bench_figures bare_on_job(const training_job& job, std::int64_t steps, std::int64_t warmup,
                          std::int64_t repeats, const compute_device& device, double& load_ms) {
  batch_source source(open_dataset(job.train_data), job.train_batches);
  const auto count = std::min(steps + warmup, source.batches_per_epoch());
  std::vector<batch> batches;
  auto start = clock_type::now();
  for (std::int64_t i = 0; i < count; ++i)
    batches.push_back(source.make(0, i));
  load_ms = 1000.0 * seconds_since(start) / static_cast<double>(count);
  auto spec = job.model;
  spec.sample_shape = source.data().sample_shape();
  spec.classes = source.data().classes();
  auto m = build_model(spec);
  if (device.kind != device_kind::cpu)
    m->to_device(device);
  std::vector<bench_figures> runs;
  for (std::int64_t r = 0; r < std::max<std::int64_t>(1, repeats); ++r)
    runs.push_back(time_steps(*m, batches, job.optimizer.sgd, steps, r == 0 ? warmup : 0));
  return median_by_rate(std::move(runs));
}

// One timed epoch, or (from run_session) the median one, with the usage of all timed epochs.
struct session_figures {
  double images_per_second = 0;
  double step_ms = 0;
  double compute_ms = 0; // of step_ms, inside the compute actor's training step
  std::int64_t steps = 0;
  double seconds = 0;
  std::int64_t timed_epochs = 0, timed_steps = 0; // all timed epochs, for `used`
  usage_mark used; // CPU time and context switches of the timed epochs, whole process
};

// Stands in for the metrics actor (a scheduled actor that takes every batch report, as the
// metrics actor does) and marks the process's CPU use when training epoch 0 and the last one
// end. `marks` is read after the run is over.
metrics_sink_actor::behavior_type usage_sink(metrics_sink_actor::pointer,
                                             std::shared_ptr<std::vector<usage_mark>> marks,
                                             std::int64_t last_epoch) {
  return {
    [](const batch_report&) {},
    [=](const phase_report& p) {
      if (!p.validation && (p.epoch == 0 || p.epoch == last_epoch))
        marks->push_back(usage_mark::now());
    },
    [](flush_atom) { return true; },
  };
}

// Runs the job through a session (as run_training does, with the compute actors detached or
// not) and times its training phases after the first.
session_figures run_session(const training_job& job, const session_settings& s) {
  local_node_config config{s.node};
  caf::actor_system system{config};
  session_sinks sinks;
  sinks.compute.detached = s.detached;
  sinks.devices = {s.device};
  auto marks = std::make_shared<std::vector<usage_mark>>();
  sinks.metrics = system.spawn(usage_sink, marks, job.epochs - 1);
  auto session = spawn_training_session(system, job, sinks);
  training_result result;
  caf::error failure;
  {
    caf::scoped_actor self{system};
    self->request(session, sinks.timeouts.phase, run_atom::value)
      .receive([&](training_result& r) { result = std::move(r); },
               [&](caf::error& err) { failure = std::move(err); });
    self->send_exit(session, caf::exit_reason::user_shutdown);
    self->send_exit(sinks.metrics, caf::exit_reason::user_shutdown);
  }
  if (failure)
    throw troupe_error(troupe_code(failure), error_text(failure));
  std::vector<session_figures> epochs;
  std::int64_t timed_steps = 0;
  for (const auto& phase : result.phases)
    if (!phase.validation && phase.epoch > 0 && phase.seconds > 0) {
      session_figures e;
      e.steps = (phase.samples + job.train_batches.batch_size - 1) / job.train_batches.batch_size;
      e.seconds = phase.seconds;
      e.images_per_second = static_cast<double>(phase.samples) / phase.seconds;
      e.step_ms = 1000.0 * phase.seconds / static_cast<double>(std::max<std::int64_t>(1, e.steps));
      e.compute_ms =
        1000.0 * phase.step_seconds / static_cast<double>(std::max<std::int64_t>(1, e.steps));
      timed_steps += e.steps;
      epochs.push_back(e);
    }
  if (epochs.empty())
    throw std::runtime_error("bench: the session ran no timed training epoch");
  const auto timed_epochs = static_cast<std::int64_t>(epochs.size());
  auto out = median_by_rate(std::move(epochs));
  if (marks->size() == 2)
    out.used = marks->back() - marks->front();
  out.timed_epochs = timed_epochs;
  out.timed_steps = timed_steps;
  return out;
}

void run_end_to_end(const bench_case& c, std::int64_t batch_size, int threads, std::int64_t steps,
                    std::int64_t warmup, const session_settings& s) {
  auto cli = session_job(c, batch_size, threads, s);
  double load_ms = 0;
  // As many bare steps as one session epoch has batches (the whole epoch for the MLP).
  if (steps <= 0)
    steps =
      batch_source(open_dataset(cli.job.train_data), cli.job.train_batches).batches_per_epoch();
  // On a thread of its own that ends before the session starts: its OpenMP team goes with it,
  // so the session runs beside no other team, as in `troupe train` (libgomp shortens every
  // team's spin-wait when it manages more threads than there are cores).
  bench_figures bare{};
  std::exception_ptr failure;
  std::thread([&] {
    try {
      bare = bare_on_job(cli.job, steps, warmup, cli.job.epochs - 1, s.device, load_ms);
    } catch (...) {
      failure = std::current_exception();
    }
  }).join();
  if (failure)
    std::rethrow_exception(failure);
  print_bare(c, "bare", batch_size, threads, steps, bare, s.device);
  auto e2e = run_session(cli.job, s);
  std::printf("RESULT model=%s mode=session device=%s compute=%s scheduler_threads=%d batch=%lld "
              "threads=%d steps=%lld imgs_per_s=%.1f step_ms=%.3f compute_ms=%.3f "
              "waiting_ms=%.3f %s  (median of %lld timed epochs: %lld steps / %.3f s; "
              "compute = in the compute actor's steps, waiting = for weights and batches; "
              "usage per step of all timed epochs)\n",
              c.name.c_str(), to_string(s.device).c_str(), s.detached ? "detached" : "scheduled",
              s.node.scheduler_threads, static_cast<long long>(batch_size), threads,
              static_cast<long long>(e2e.steps), e2e.images_per_second, e2e.step_ms, e2e.compute_ms,
              e2e.step_ms - e2e.compute_ms, usage_text(e2e.used, e2e.timed_steps).c_str(),
              static_cast<long long>(e2e.timed_epochs), static_cast<long long>(e2e.steps),
              e2e.seconds);
  std::printf("RESULT model=%s mode=load batch=%lld threads=%d batch_ms=%.3f  (one batch built "
              "on the calling thread, oneTBB inside)\n",
              c.name.c_str(), static_cast<long long>(batch_size), threads, load_ms);
  const double ratio =
    bare.images_per_second > 0 ? e2e.images_per_second / bare.images_per_second : 0;
  std::printf("SUMMARY model=%s ratio=%.3f overhead_ms_per_step=%.3f  (= session %.3f ms - bare "
              "%.3f ms)\n",
              c.name.c_str(), ratio, e2e.step_ms - bare.step_ms, e2e.step_ms, bare.step_ms);
  std::fflush(stdout);
}

} // namespace

int bench_command(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "transport")
    return transport_bench_command({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "decode")
    return decode_bench_command({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "scaling")
    return scaling_bench_command({args.begin() + 1, args.end()});
  std::string models = "mlp,lenet,resnet-20";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string compute = compute_spawn_options{}.detached ? "detached" : "scheduled";
  std::int64_t batch_size = 128, steps = 0, warmup = 5;
  int threads = 2;
  bool end_to_end = false;
  session_settings session;
  flag_set f("bench [transport | decode | scaling]",
             "Measures training images/s (forward + backward + SGD momentum update) per model, "
             "after warm-up steps, on `--threads` compute threads; with --end-to-end, beside the "
             "same job trained through the actors. Other benchmarks, each with its own --help: "
             "`troupe bench transport` (a model's push and answer between processes, beside plain "
             "TCP), `troupe bench decode` (JPEG decoding and augmentation), `troupe bench scaling` "
             "(workers and servers on emulated hosts; root).");
  std::string device = "cpu", cudnn_algorithms = "exact";
  f.add("models", models,
        "comma-separated: mlp, lenet, resnet-20, resnet-110, resnet-50, vgg-16, "
        "inception-bn (the last four: 3x32x32 synthetic input)");
  f.add("device", device,
        "cpu or gpu:N: where the model trains (--end-to-end: the compute actor too)");
  f.add("cudnn-algorithms", cudnn_algorithms,
        "GPU convolutions: exact | fastest (as troupe train)");
  f.add("batch-size", batch_size, "images per step");
  f.add("threads", threads, "compute threads");
  f.add("steps", steps,
        "timed steps (0: 500 mlp, 50 lenet, 40 resnet-20; --end-to-end: one "
        "session epoch)");
  f.add("warmup", warmup, "untimed steps first");
  f.add("data-dir", data_dir, "Fashion-MNIST directory for the mlp and lenet batches");
  f.add_switch("end-to-end", end_to_end,
               "also train through the actors (mlp: Fashion-MNIST; lenet: 7,680 and resnet-20: "
               "2,560 synthetic examples) and print both, their ratio and the overhead per step");
  f.add("epochs", session.epochs,
        "--end-to-end: session epochs, the first not timed, each side the median of the rest (0: 6 "
        "for mlp, 2 for the others)");
  f.add("compute", compute, "--end-to-end: compute actors detached | scheduled");
  f.add(
    "train-flags", session.train_flags,
    "--end-to-end: more `troupe train` flags for the session, e.g. \"--no-overlap --prefetch 8\"");
  f.add("scheduler-threads", session.node.scheduler_threads,
        "--end-to-end: CAF scheduler threads of the session's actor system");
  if (!f.parse(args)) {
    std::cout << f.help();
    return 0;
  }
  if (batch_size <= 0 || threads <= 0 || steps < 0 || warmup < 0)
    throw usage_error(
      "--batch-size and --threads must be positive, --steps and --warmup not negative");
  if ((session.epochs != 0 && session.epochs < 2) || session.node.scheduler_threads < 1)
    throw usage_error("--epochs must be 0 or at least 2 (the first is warm-up), "
                      "--scheduler-threads positive");
  if (compute != "detached" && compute != "scheduled")
    throw usage_error("--compute: '" + compute + "' is not one of detached, scheduled");
  session.detached = compute == "detached";
  try {
    session.device = parse_compute_device(device);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--device: ") + e.what());
  }
  require_compute_devices({session.device}, convolution_algorithms_flag(cudnn_algorithms));
  std::vector<bench_case> cases;
  for (const auto& name : split_names(models))
    cases.push_back(lookup_case(name));
  if (cases.empty())
    throw usage_error("--models: no model named");
  set_compute_threads(threads);
  for (const auto& c : cases) {
    if (end_to_end) {
      run_end_to_end(c, batch_size, threads, steps, warmup, session);
      continue;
    }
    auto n = steps > 0 ? steps : c.default_steps;
    print_bare(c, "train", batch_size, threads, n,
               run_case(c, batch_size, n, warmup, data_dir, session.device), session.device);
  }
  return 0;
}

} // namespace troupe
