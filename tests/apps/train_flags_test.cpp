// `troupe train` flags resolve into the options the actors run with. Flags are written onto a
// job_config, so most tests here pin that a flag means the same with and without --config:
// each "with --config" case below is a divergence the two paths once had.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/train_flags.hpp"
#include "tests/apps/temp_config.hpp"

using namespace troupe;
using test::temp_config;

namespace {

template <typename T> std::string list_text(const T& values) {
  std::ostringstream out;
  for (std::size_t i = 0; i < values.size(); ++i)
    out << (i == 0 ? "" : ",") << values[i];
  return "[" + out.str() + "]";
}

std::string describe(const dataset_options& d) {
  std::ostringstream out;
  out << d.name << " dir=" << d.dir << " which=" << (d.which == split::train ? "train" : "test")
      << " shape=" << list_text(d.synthetic_shape) << " classes=" << d.synthetic_classes
      << " size=" << d.synthetic_size << " seed=" << d.synthetic_seed;
  return out.str();
}

std::string describe(const batch_source_options& b) {
  std::ostringstream out;
  out << "batch=" << b.batch_size << " shuffle=" << b.shuffle << " seed=" << b.seed
      << " part=" << b.part << "/" << b.parts << " drop_last=" << b.drop_last
      << " mean=" << list_text(b.augment.mean) << " stdev=" << list_text(b.augment.stdev)
      << " pad_crop=" << b.augment.pad_crop << " mirror=" << b.augment.mirror;
  return out.str();
}

// Every field of the job, the output settings and the thread count, one group a line, so a
// failed comparison shows which group differs.
std::string describe(const train_command_line& c) {
  const auto& j = c.job;
  const auto& s = j.optimizer.schedule;
  const auto& t = j.topology;
  std::ostringstream out;
  out << "model: " << j.model.network << " layers=" << j.model.num_layers
      << " shape=" << list_text(j.model.sample_shape) << " classes=" << j.model.classes
      << " seed=" << j.model.seed << "\ntrain_data: " << describe(j.train_data)
      << "\nvalidation_data: " << describe(j.validation_data)
      << "\ntrain_batches: " << describe(j.train_batches)
      << "\nvalidation_batches: " << describe(j.validation_batches)
      << "\nsgd: momentum=" << j.optimizer.sgd.momentum << " wd=" << j.optimizer.sgd.weight_decay
      << " nesterov=" << j.optimizer.sgd.nesterov
      << "\nschedule: policy=" << static_cast<int>(s.policy) << " base_lr=" << s.base_lr
      << " steps=" << list_text(s.step_epochs) << " factor=" << s.factor
      << " total=" << s.total_epochs << " final_lr=" << s.final_lr << " warmup=" << s.warmup_epochs
      << " warmup_begin=" << s.warmup_begin_factor << "\nrun: prefetch=" << j.prefetch_depth
      << " epochs=" << j.epochs << " validate=" << j.validate << " every=" << j.validate_every
      << " shards=" << j.shards << "\ntopology: " << t.name << " workers=" << t.workers
      << " staleness=" << t.staleness << " levels=" << t.levels.size() << " machines=" << t.machines
      << " deterministic=" << t.deterministic << " overlap=" << t.overlap
      << " slice=" << t.keys.slice_bytes << " group=" << t.keys.group_bytes
      << "\noutput: display=" << c.output.display_batches << " progress=" << c.output.progress_bar
      << " metrics=" << c.output.metrics_path << " threads=" << c.threads << "\n";
  return out.str();
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Sets OMP_NUM_THREADS for one test case and puts back what the process had.
class omp_threads_env {
public:
  omp_threads_env() {
    if (const char* v = getenv("OMP_NUM_THREADS"))
      saved_ = v;
  }
  ~omp_threads_env() {
    if (saved_)
      setenv("OMP_NUM_THREADS", saved_->c_str(), 1);
    else
      unsetenv("OMP_NUM_THREADS");
  }
  void set(const char* value) { setenv("OMP_NUM_THREADS", value, 1); }
  void unset() { unsetenv("OMP_NUM_THREADS"); }

private:
  std::optional<std::string> saved_;
};

// The --help line of one flag.
// The flag's entry in train's help: its line and the description under it, as one line.
std::string help_line(const std::string& flag) {
  std::istringstream help(parse_train_flags({"--help"}).help_text);
  std::string entry;
  for (std::string line; std::getline(help, line);) {
    if (!entry.empty() && line.rfind("        ", 0) != 0)
      break;
    if (!entry.empty())
      entry += " " + line.substr(8);
    else if (line.rfind("  --" + flag + " ", 0) == 0 || line == "  --" + flag)
      entry = line;
  }
  return entry;
}

} // namespace

TEST_CASE("train defaults: LeNet on Fashion-MNIST, network-dependent lr, steps at 50%/75%") {
  auto cli = parse_train_flags({});
  const auto& o = cli.job;
  CHECK(o.model.network == "lenet");
  CHECK(o.train_data.name == "fashion-mnist");
  CHECK(o.train_data.dir == "/usr/share/datasets/fashion-mnist");
  CHECK(o.validation_data.which == split::test);
  CHECK(o.train_batches.batch_size == 128);
  CHECK(o.epochs == 10);
  CHECK(o.optimizer.schedule.base_lr == Approx(0.05f));
  CHECK(o.optimizer.schedule.policy == lr_policy::multi_step);
  CHECK(o.optimizer.schedule.warmup_epochs == 1); // a tenth of 10 epochs
  CHECK(o.optimizer.schedule.step_epochs == std::vector<double>{5, 7.5});
  CHECK(o.train_batches.augment.mean.size() == 1);
  CHECK(o.train_batches.augment.pad_crop == 0);
  CHECK(cli.threads == default_thread_count());

  auto mlp =
    parse_train_flags({"--network", "mlp", "--num-epochs", "4", "--lr-step-epochs", "1,3"});
  CHECK(mlp.job.optimizer.schedule.base_lr == Approx(0.1f));
  CHECK(mlp.job.optimizer.schedule.step_epochs == std::vector<double>{1, 3});
}

TEST_CASE("the flag --optimizer names the optimizer, its defaults follow it, and its keys' flags") {
  auto adam = parse_train_flags({"--optimizer", "adam"}).job;
  CHECK(adam.optimizer.kind == optimizer_kind::adam);
  CHECK(adam.optimizer.schedule.base_lr == Approx(0.001f));
  CHECK(adam.optimizer.sgd.weight_decay == 0);
  CHECK(adam.optimizer.eps == 1e-8f);
  auto adamw = parse_train_flags({"--optimizer", "adamw", "--beta2", "0.98", "--lr", "0.003"}).job;
  CHECK(adamw.optimizer.kind == optimizer_kind::adamw);
  CHECK(adamw.optimizer.beta2 == 0.98f);
  CHECK(adamw.optimizer.sgd.weight_decay == Approx(0.01f));
  CHECK(adamw.optimizer.schedule.base_lr == Approx(0.003f));
  auto rmsprop = parse_train_flags({"--optimizer", "rmsprop", "--mom", "0.5"}).job;
  CHECK(rmsprop.optimizer.sgd.momentum == 0.5f);
  CHECK(parse_train_flags({"--optimizer", "rmsprop"}).job.optimizer.sgd.momentum == 0);
  CHECK(parse_train_flags({}).job.optimizer.kind == optimizer_kind::sgd);
  CHECK_THROWS_WITH(parse_train_flags({"--beta1", "0.8"}),
                    Catch::Contains("--beta1 applies to adam adamw lamb, not sgd"));
  CHECK_THROWS_WITH(parse_train_flags({"--optimizer", "adam", "--nesterov"}),
                    Catch::Contains("--nesterov applies to sgd, not adam"));
  CHECK_THROWS_WITH(parse_train_flags({"--optimizer", "adadelta"}), Catch::Contains("adadelta"));
}

TEST_CASE("train flags for CIFAR-10 turn on crop and mirror, synthetic parses its shape") {
  auto cifar = parse_train_flags({"--dataset", "cifar10", "--data-dir", "/data/cifar", "--network",
                                  "resnet", "--num-layers", "20"});
  CHECK(cifar.job.train_batches.augment.pad_crop == 4);
  CHECK(cifar.job.train_batches.augment.mirror);
  CHECK_FALSE(cifar.job.validation_batches.augment.mirror);
  CHECK(cifar.job.model.num_layers == 20);
  auto syn = parse_train_flags({"--dataset", "synthetic", "--image-shape", "3,32,32"});
  CHECK(syn.job.train_data.synthetic_shape == shape_t{3, 32, 32});
  // Both splits come from the same prototypes: same seed and size, io picks the split.
  CHECK(syn.job.validation_data.synthetic_seed == syn.job.train_data.synthetic_seed);
  CHECK(syn.job.validation_data.synthetic_size == syn.job.train_data.synthetic_size);
  CHECK(syn.job.validation_data.which == split::test);
}

TEST_CASE("RecordIO: --data-train and --data-val are data statements with MXNet's flag names") {
  auto rec = parse_train_flags({"--data-train", "/d/train.rec", "--data-val", "/d/val.rec",
                                "--data-val-idx", "/d/v.idx", "--network", "resnet", "--num-layers",
                                "20", "--image-shape", "3,32,32", "--num-classes", "4",
                                "--rgb-mean", "127.5,127.5,127.5", "--skip-bad-records"});
  const auto& train = rec.job.train_data;
  CHECK(train.name == "recordio");
  CHECK(train.dir == "/d/train.rec");
  CHECK(train.record_index.empty()); // no /d/train.idx here
  CHECK(train.record_shape == shape_t{3, 32, 32});
  CHECK(train.record_classes == 4);
  CHECK(train.skip_bad_records);
  CHECK(rec.job.validate);
  CHECK(rec.job.validation_data.dir == "/d/val.rec");
  CHECK(rec.job.validation_data.record_index == "/d/v.idx");
  CHECK(rec.job.validation_data.skip_bad_records);
  CHECK(rec.job.model.sample_shape == shape_t{3, 32, 32});
  CHECK(rec.job.model.classes == 4);
  const auto& augment = rec.job.train_batches.augment;
  CHECK(augment.random_resized_crop);
  CHECK(augment.mirror);
  CHECK(augment.crop_scale_min == 0.08);
  CHECK(augment.mean == std::vector<float>{0.5f, 0.5f, 0.5f});
  CHECK(augment.stdev == std::vector<float>{0.229f, 0.224f, 0.225f}); // ImageNet's, not given
  CHECK_FALSE(rec.job.validation_batches.augment.random_resized_crop);
  CHECK_FALSE(rec.job.validation_batches.augment.mirror);
  CHECK(rec.job.validation_batches.augment.mean == augment.mean);

  // Without --data-val there is no validation (a .rec has no test split beside it).
  auto alone =
    parse_train_flags({"--data-train", "t.rec", "--random-crop", "0", "--min-random-area", "0.25"});
  CHECK_FALSE(alone.job.validate);
  CHECK(alone.job.train_data.record_shape == shape_t{3, 224, 224});
  CHECK_FALSE(alone.job.train_batches.augment.random_resized_crop);
  CHECK(alone.job.train_batches.augment.crop_scale_min == 0.25);
}

TEST_CASE("RecordIO flags refuse what cannot go together") {
  auto refuses = [](std::vector<std::string> args, const std::string& text) {
    CHECK_THROWS_WITH(parse_train_flags(args), Catch::Contains(text));
  };
  refuses({"--data-val", "v.rec"}, "--data-val needs --data-train");
  refuses({"--data-train", "t.rec", "--dataset", "cifar10"},
          "cannot be combined with --dataset cifar10");
  refuses({"--data-train", "t.rec", "--data-dir", "/d"},
          "--data-dir cannot be combined with --data-train");
  refuses({"--data-train", "t.rec", "--image-shape", "1,32,32"}, "C must be 3");
  refuses({"--data-train", "t.rec", "--rgb-mean", "1,2"}, "--rgb-mean: expected 3 values");
  refuses({"--data-train", "t.rec", "--min-random-area", "0"},
          "--min-random-area must be in (0, 1]");
  refuses({"--dataset", "recordio"}, "give the files with --data-train");
  temp_config config("recordio_structural", "data train = recordio(\"t.rec\")\n");
  refuses({"--config", config.path(), "--data-train", "x.rec"},
          "--data-train cannot be combined with --config");
}

TEST_CASE("train flags reject bad values with the flag's name") {
  CHECK_THROWS_WITH(parse_train_flags({"--network", "alexnet"}),
                    Catch::Contains("--network") && Catch::Contains("alexnet"));
  CHECK_THROWS_WITH(parse_train_flags({"--dataset", "svhn"}), Catch::Contains("svhn"));
  CHECK_THROWS_WITH(parse_train_flags({"--batch-size", "0"}), Catch::Contains("--batch-size"));
  CHECK_THROWS_WITH(parse_train_flags({"--mom", "1.5"}), Catch::Contains("--mom"));
  CHECK_THROWS_WITH(parse_train_flags({"--lr-step-epochs", "3,x"}), Catch::Contains("'x'"));
  CHECK_THROWS_WITH(parse_train_flags({"--lr-schedule", "linear"}), Catch::Contains("linear"));
  CHECK_THROWS_WITH(parse_train_flags({"--dataset", "cifar10"}), Catch::Contains("--data-dir"));
  CHECK_THROWS_WITH(parse_train_flags({"--dataset", "synthetic", "--image-shape", "3,32"}),
                    Catch::Contains("C,H,W"));
  CHECK_THROWS_WITH(parse_train_flags({"--progress", "maybe"}), Catch::Contains("maybe"));
  CHECK_THROWS_AS(parse_train_flags({"--lr", "-0.5"}), usage_error);
}

TEST_CASE("slice, group and overlap flags reach the topology options") {
  auto defaults = parse_train_flags({}).job.topology;
  CHECK(defaults.keys.slice_bytes == 4194304);
  CHECK(defaults.keys.group_bytes == 65536);
  CHECK(defaults.overlap);
  auto t = parse_train_flags({"--slice-bytes", "1048576", "--group-bytes", "0", "--no-overlap"})
             .job.topology;
  CHECK(t.keys.slice_bytes == 1048576);
  CHECK(t.keys.group_bytes == 0);
  CHECK_FALSE(t.overlap);
  CHECK(parse_train_flags({"--slice-bytes", "4"}).job.topology.keys.slice_bytes == 4);
}

TEST_CASE("the no-priority flag and the config's priority key reach the topology options") {
  CHECK(parse_train_flags({}).job.topology.priority);
  CHECK_FALSE(parse_train_flags({"--no-priority"}).job.topology.priority);
  CHECK_THROWS_AS(parse_train_flags({"--no-priority=1"}), usage_error);
  auto path =
    (std::filesystem::temp_directory_path() / "troupe_train_flags_priority.troupe").string();
  std::ofstream(path) << "cluster { workers = 2  priority = false }\n";
  CHECK_FALSE(parse_train_flags({"--config", path}).job.topology.priority);
  std::ofstream(path) << "cluster { workers = 2 }\n";
  CHECK(parse_train_flags({"--config", path}).job.topology.priority);
  CHECK_FALSE(parse_train_flags({"--config", path, "--no-priority"}).job.topology.priority);
  std::filesystem::remove(path);
}

TEST_CASE("slice and group flags reject values plan_keys cannot use") {
  CHECK_THROWS_WITH(parse_train_flags({"--slice-bytes", "2"}),
                    Catch::Contains("--slice-bytes must be between 4") && Catch::Contains("got 2"));
  CHECK_THROWS_WITH(parse_train_flags({"--group-bytes", "-1"}),
                    Catch::Contains("--group-bytes must be between 0")
                      && Catch::Contains("got -1"));
  CHECK_THROWS_WITH(parse_train_flags({"--slice-bytes", "2000000000000"}),
                    Catch::Contains("--slice-bytes") && Catch::Contains("1099511627776"));
  CHECK_THROWS_WITH(parse_train_flags({"--group-bytes", "64k"}), Catch::Contains("--group-bytes"));
  CHECK_THROWS_AS(parse_train_flags({"--no-overlap=1"}), usage_error);
}

TEST_CASE("the config's slice, group and overlap keys apply unless a flag overrides them") {
  auto path = (std::filesystem::temp_directory_path() / "troupe_train_flags_keys.troupe").string();
  std::ofstream(path) << "cluster { workers = 2  slice_bytes = 1024  overlap = false }\n";
  auto from_config = parse_train_flags({"--config", path}).job.topology;
  CHECK(from_config.keys.slice_bytes == 1024);
  CHECK(from_config.keys.group_bytes == 65536);
  CHECK_FALSE(from_config.overlap);
  CHECK(from_config.workers == 2);
  auto overridden =
    parse_train_flags({"--config", path, "--slice-bytes", "8192", "--group-bytes", "0"})
      .job.topology;
  CHECK(overridden.keys.slice_bytes == 8192);
  CHECK(overridden.keys.group_bytes == 0);
  CHECK_FALSE(overridden.overlap);
  std::ofstream(path) << "cluster { workers = 2 }\n";
  CHECK_FALSE(parse_train_flags({"--config", path, "--no-overlap"}).job.topology.overlap);
  CHECK(parse_train_flags({"--config", path}).job.topology.overlap);
  std::filesystem::remove(path);
}

TEST_CASE("eval_every from the config or --eval-every sets how often validation runs") {
  auto path = (std::filesystem::temp_directory_path() / "troupe_train_flags_eval.troupe").string();
  std::ofstream(path) << "train { epochs = 6  eval_every = 3 }\n";
  auto from_config = parse_train_flags({"--config", path}).job;
  CHECK(from_config.validate);
  CHECK(from_config.validate_every == 3);
  CHECK(parse_train_flags({"--config", path, "--eval-every", "2"}).job.validate_every == 2);
  std::ofstream(path) << "train { eval_every = 0 }\n";
  CHECK_FALSE(parse_train_flags({"--config", path}).job.validate);
  std::filesystem::remove(path);
  CHECK(parse_train_flags({}).job.validate_every == 1);
  CHECK(parse_train_flags({"--eval-every", "4"}).job.validate_every == 4);
  CHECK_FALSE(parse_train_flags({"--eval-every", "0"}).job.validate); // as eval_every = 0
  CHECK_THROWS_WITH(parse_train_flags({"--eval-every", "-1"}),
                    Catch::Contains("--eval-every must be between 0"));
}

TEST_CASE("flags alone and the same job written as a config plus flags train the same job") {
  // Everything in the config, nothing on the command line.
  const std::vector<std::string> cifar{
    "--network",    "resnet", "--num-layers", "20", "--dataset", "cifar10",
    "--data-dir",   "/d",     "--batch-size", "64", "--lr",      "0.2",
    "--num-epochs", "6",      "--seed",       "3",  "--threads", "2"};
  temp_config cifar_config("same_cifar", "data  train = cifar10(\"/d\", batch = 64)\n"
                                         "model resnet(layers = 20)\n"
                                         "optimizer sgd(lr = 0.2)\n"
                                         "train { epochs = 6  seed = 3  threads = 2 }\n");
  CHECK(describe(parse_train_flags(cifar))
        == describe(parse_train_flags({"--config", cifar_config.path()})));

  // The data statement in the config, the rest as flags.
  const std::vector<std::string> rest{"--network",        "mlp",    "--seed",          "7",
                                      "--lr-schedule",    "cosine", "--warmup-epochs", "0",
                                      "--val-batch-size", "50"};
  const std::vector<std::string> synthetic{
    "--dataset",     "synthetic", "--image-shape",  "1,12,12",
    "--num-classes", "5",         "--num-examples", "600"};
  temp_config synthetic_config(
    "same_synthetic", "data train = synthetic(shape = [1, 12, 12], classes = 5, examples = 600)\n");
  CHECK(describe(parse_train_flags(with(synthetic, rest)))
        == describe(parse_train_flags(with({"--config", synthetic_config.path()}, rest))));

  // A config that sets everything differently, and flags that override all of it.
  const std::vector<std::string> overrides{"--network",
                                           "mlp",
                                           "--num-layers",
                                           "0",
                                           "--lr-schedule",
                                           "multi-step",
                                           "--num-epochs",
                                           "4",
                                           "--lr-factor",
                                           "0.5",
                                           "--warmup-epochs",
                                           "1.5",
                                           "--mom",
                                           "0.5",
                                           "--wd",
                                           "0",
                                           "--nesterov",
                                           "--seed",
                                           "1",
                                           "--threads",
                                           "3",
                                           "--shards",
                                           "2",
                                           "--slice-bytes",
                                           "1024",
                                           "--group-bytes",
                                           "0",
                                           "--no-overlap",
                                           "--prefetch",
                                           "1",
                                           "--eval-every",
                                           "2",
                                           "--metrics",
                                           "m.jsonl",
                                           "--disp-batches",
                                           "0",
                                           "--progress",
                                           "off",
                                           "--batch-size",
                                           "32",
                                           "--val-batch-size",
                                           "100",
                                           "--random-crop-pad",
                                           "2",
                                           "--random-mirror",
                                           "1",
                                           "--data-dir",
                                           "/f"};
  temp_config different(
    "same_overridden", "data  train = fashion_mnist(\"/elsewhere\", batch = 16, crop_pad = 1)\n"
                       "model lenet\n"
                       "optimizer sgd(lr = 0.1, momentum = 0.8, wd = 0.001)\n"
                       "schedule cosine(warmup = 3)\n"
                       "cluster { shards = 4  slice_bytes = 2048  group_bytes = 128 }\n"
                       "train { epochs = 20  seed = 9  threads = 5  prefetch = 7  display = 3 }\n");
  CHECK(describe(parse_train_flags(with(overrides, {"--lr", "0.1"})))
        == describe(parse_train_flags(with({"--config", different.path()}, overrides))));
}

TEST_CASE("with --config, --seed also seeds the synthetic data") {
  temp_config config("seed", "data train = synthetic(shape = [1, 12, 12], examples = 600)\n"
                             "model mlp\n");
  auto job = parse_train_flags({"--config", config.path(), "--seed", "7"}).job;
  CHECK(job.model.seed == 7);
  CHECK(job.train_batches.seed == 7);
  CHECK(job.validation_batches.seed == 7);
  CHECK(job.train_data.synthetic_seed == 7);
  CHECK(job.validation_data.synthetic_seed == 7);
}

TEST_CASE("with --config, --network picks the network's default lr unless the config sets one") {
  temp_config lenet("network_lr", "model lenet\n");
  CHECK(parse_train_flags({"--config", lenet.path()}).job.optimizer.schedule.base_lr
        == Approx(0.05f));
  CHECK(
    parse_train_flags({"--config", lenet.path(), "--network", "mlp"}).job.optimizer.schedule.base_lr
    == Approx(0.1f));
  temp_config with_lr("network_lr_written", "model lenet\noptimizer sgd(lr = 0.3)\n");
  CHECK(parse_train_flags({"--config", with_lr.path(), "--network", "mlp"})
          .job.optimizer.schedule.base_lr
        == Approx(0.3f));
}

TEST_CASE("with --config, --num-epochs moves the default multi-step boundaries, not written ones") {
  temp_config defaults("epochs_steps", "train { epochs = 20 }\n");
  auto s =
    parse_train_flags({"--config", defaults.path(), "--num-epochs", "4"}).job.optimizer.schedule;
  CHECK(s.step_epochs == std::vector<double>{2, 3});
  CHECK(s.total_epochs == 4);
  temp_config written("epochs_steps_written", "schedule multi_step(steps = [3, 6])\n");
  CHECK(parse_train_flags({"--config", written.path(), "--num-epochs", "8"})
          .job.optimizer.schedule.step_epochs
        == std::vector<double>{3, 6});
  CHECK(parse_train_flags({"--config", defaults.path(), "--lr-step-epochs", ""})
          .job.optimizer.schedule.step_epochs
        == std::vector<double>{10, 15});
}

TEST_CASE("with --config, --lr-schedule brings or drops the multi-step boundaries") {
  temp_config cosine("schedule_cosine", "schedule cosine\n");
  auto multi = parse_train_flags({"--config", cosine.path(), "--lr-schedule", "multi-step"})
                 .job.optimizer.schedule;
  CHECK(multi.policy == lr_policy::multi_step);
  CHECK(multi.step_epochs == std::vector<double>{5, 7.5});
  temp_config multi_step("schedule_multi_step", "schedule multi_step\n");
  auto to_cosine = parse_train_flags({"--config", multi_step.path(), "--lr-schedule", "cosine"})
                     .job.optimizer.schedule;
  CHECK(to_cosine.policy == lr_policy::cosine);
  CHECK(to_cosine.step_epochs.empty());
}

TEST_CASE("random crop and mirror at -1 mean the dataset's default, also with --config") {
  temp_config cifar("augment", "data train = cifar10(\"/d\")\nmodel resnet\n");
  auto b = parse_train_flags(
             {"--config", cifar.path(), "--random-crop-pad", "-1", "--random-mirror", "-1"})
             .job.train_batches.augment;
  CHECK(b.pad_crop == 4);
  CHECK(b.mirror);
  auto off =
    parse_train_flags({"--config", cifar.path(), "--random-crop-pad", "0", "--random-mirror", "0"})
      .job.train_batches.augment;
  CHECK(off.pad_crop == 0);
  CHECK_FALSE(off.mirror);
  temp_config fashion("augment_fashion", "model lenet\n");
  auto plain = parse_train_flags({"--config", fashion.path(), "--random-mirror", "-1"})
                 .job.train_batches.augment;
  CHECK_FALSE(plain.mirror);
  CHECK(plain.pad_crop == 0);
  CHECK_THROWS_WITH(parse_train_flags({"--random-crop-pad", "-2"}),
                    Catch::Contains("--random-crop-pad must be between -1"));
  CHECK_THROWS_WITH(
    parse_train_flags({"--random-mirror", "2"}),
    Catch::Contains("--random-mirror must be 0 or 1 (-1: the dataset's default), got 2"));
}

TEST_CASE("with --config, flag values are checked as without it") {
  temp_config config("checked", "model lenet\n");
  CHECK_THROWS_WITH(parse_train_flags({"--config", config.path(), "--lr", "-0.5"}),
                    Catch::Contains("--lr must be above 0"));
  CHECK_THROWS_WITH(parse_train_flags({"--config", config.path(), "--lr-schedule", "linear"}),
                    Catch::Contains("linear"));
  for (auto [structural, value] : {std::pair{"--dataset", "mnist"},
                                   {"--image-shape", "1,8,8"},
                                   {"--num-classes", "3"},
                                   {"--num-examples", "60"}})
    CHECK_THROWS_WITH(
      parse_train_flags({"--config", config.path(), structural, value}),
      Catch::Contains(std::string(structural) + " cannot be combined with --config"));
  CHECK_THROWS_WITH(parse_train_flags({"--dataset", "synthetic", "--num-classes", "1"}),
                    Catch::Contains("--num-classes must be between 2"));
  CHECK_THROWS_WITH(parse_train_flags({"--dataset", "synthetic", "--num-examples", "5"}),
                    Catch::Contains("--num-examples must be between 6"));
}

TEST_CASE(
  "with --config, --data-dir reaches the validation data only when it reads the same dataset") {
  temp_config same("data_dir_same", "data train = mnist(\"/a\")\ndata val = mnist(\"/b\")\n");
  auto both = parse_train_flags({"--config", same.path(), "--data-dir", "/x"}).job;
  CHECK(both.train_data.dir == "/x");
  CHECK(both.validation_data.dir == "/x");
  temp_config mixed("data_dir_mixed", "data train = mnist(\"/a\")\ndata val = fashion_mnist\n");
  auto one = parse_train_flags({"--config", mixed.path(), "--data-dir", "/x"}).job;
  CHECK(one.train_data.dir == "/x");
  CHECK(one.validation_data.dir == "/usr/share/datasets/fashion-mnist");
}

TEST_CASE("threads default to OMP_NUM_THREADS, else the hardware, and a config or flag wins") {
  omp_threads_env env;
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  env.unset();
  CHECK(default_thread_count() == hardware);
  CHECK(parse_train_flags({}).threads == hardware);
  CHECK_THAT(help_line("threads"), Catch::EndsWith("(default: " + std::to_string(hardware) + ")"));
  env.set("3");
  CHECK(parse_train_flags({}).threads == 3);
  CHECK_THAT(help_line("threads"), Catch::EndsWith("(default: 3)"));
  env.set("4,2"); // OpenMP's per-level list: the outermost level's count
  CHECK(default_thread_count() == 4);
  for (const char* unusable : {"0", "-2", "lots", "", "3x"}) {
    env.set(unusable);
    CHECK(default_thread_count() == hardware);
  }
  env.set("3");
  CHECK(parse_train_flags({"--threads", "6"}).threads == 6);
  temp_config silent("threads_default", "model lenet\n");
  CHECK(parse_train_flags({"--config", silent.path()}).threads == 3);
  temp_config written("threads_written", "train { threads = 5 }\n");
  CHECK(parse_train_flags({"--config", written.path()}).threads == 5);
  CHECK(parse_train_flags({"--config", written.path(), "--threads", "6"}).threads == 6);
}

TEST_CASE("train help lists every flag, and the old test knob --straggler is no flag at all") {
  const auto help = parse_train_flags({"--help"}).help_text;
  CHECK_THAT(help, !Catch::Contains("--straggler"));
  // Tests make a straggler with a gradient tap (tests/actors/delaying_tap.hpp) now.
  CHECK_THROWS_AS(parse_train_flags({"--straggler", "0:5"}), usage_error);
  CHECK_THROWS_WITH(parse_train_flags({"--straggler", "0:5"}),
                    Catch::Contains("unknown flag --straggler"));
  for (const char* flag : {"config",
                           "network",
                           "num-layers",
                           "dataset",
                           "data-dir",
                           "batch-size",
                           "val-batch-size",
                           "lr",
                           "lr-schedule",
                           "lr-step-epochs",
                           "lr-factor",
                           "warmup-epochs",
                           "mom",
                           "nesterov",
                           "wd",
                           "num-epochs",
                           "seed",
                           "threads",
                           "shards",
                           "slice-bytes",
                           "group-bytes",
                           "no-overlap",
                           "no-priority",
                           "prefetch",
                           "random-crop-pad",
                           "random-mirror",
                           "image-shape",
                           "num-classes",
                           "num-examples",
                           "no-validation",
                           "eval-every",
                           "metrics",
                           "top-k",
                           "disp-batches",
                           "progress",
                           "data-train",
                           "data-train-idx",
                           "data-val",
                           "data-val-idx",
                           "rgb-mean",
                           "rgb-std",
                           "skip-bad-records",
                           "random-crop",
                           "min-random-area",
                           "max-random-area"})
    CHECK_THAT(help, Catch::Contains(std::string("  --") + flag + "\n")
                       || Catch::Contains(std::string("  --") + flag + " "));
}

TEST_CASE("an empty config trains the job of no config at all, at any length") {
  temp_config empty("empty", "");
  CHECK(describe(parse_train_flags({})) == describe(parse_train_flags({"--config", empty.path()})));
  for (const char* epochs : {"1", "3", "30"})
    CHECK(describe(parse_train_flags({"--num-epochs", epochs}))
          == describe(parse_train_flags({"--config", empty.path(), "--num-epochs", epochs})));
}

TEST_CASE(
  "the default warm-up is a tenth of the run, at most an epoch, and ends before any decay") {
  for (const char* epochs : {"1", "2", "5", "10", "90"}) {
    const auto s = parse_train_flags({"--num-epochs", epochs}).job.optimizer.schedule;
    const double n = std::stod(epochs);
    CHECK(s.warmup_epochs == Approx(std::min(1.0, n / 10)));
    REQUIRE(s.step_epochs.size() == 2);
    CHECK(s.warmup_epochs < s.step_epochs[0]);
  }
}

TEST_CASE("checkpoint flags and train keys reach the session's checkpoint options") {
  const auto none = parse_train_flags({}).output.checkpoint;
  CHECK(none.prefix.empty());
  CHECK(none.save_period == 1);
  CHECK(none.load_epoch == -1);
  const auto flags =
    parse_train_flags({"--model-prefix", "runs/m", "--save-period", "3", "--load-epoch", "2"})
      .output.checkpoint;
  CHECK(flags.prefix == "runs/m");
  CHECK(flags.save_period == 3);
  CHECK(flags.load_epoch == 2);
  temp_config config("checkpoint_keys",
                     "train { model_prefix = \"c/m\"  save_period = 2  load_epoch = 1 }\n");
  const auto from_config = parse_train_flags({"--config", config.path()}).output.checkpoint;
  CHECK(from_config.prefix == "c/m");
  CHECK(from_config.save_period == 2);
  CHECK(from_config.load_epoch == 1);
  const auto overridden =
    parse_train_flags({"--config", config.path(), "--model-prefix", "f/m", "--load-epoch", "4"})
      .output.checkpoint;
  CHECK(overridden.prefix == "f/m");
  CHECK(overridden.save_period == 2);
  CHECK(overridden.load_epoch == 4);
}

TEST_CASE("bad checkpoint values are refused naming the flag or key") {
  CHECK_THROWS_WITH(parse_train_flags({"--save-period", "0"}), Catch::Contains("--save-period"));
  CHECK_THROWS_WITH(parse_train_flags({"--load-epoch", "-1"}), Catch::Contains("--load-epoch"));
  CHECK_THROWS_WITH(parse_train_flags({"--load-epoch", "1"}),
                    Catch::Contains("load_epoch needs model_prefix"));
  temp_config zero("checkpoint_zero_period", "train { save_period = 0 }\n");
  CHECK_THROWS_WITH(parse_train_flags({"--config", zero.path()}),
                    Catch::Contains("save_period must be"));
}

TEST_CASE(
  "the top-k flag and the train top_k key reach the job, 0 is off, beyond the classes is refused") {
  CHECK(parse_train_flags({}).job.top_k == 0);
  CHECK(parse_train_flags({"--top-k", "5"}).job.top_k == 5);
  CHECK(parse_train_flags({"--top-k", "10"}).job.top_k == 10); // fashion-mnist: 10 classes
  CHECK(parse_train_flags({"--top-k", "0"}).job.top_k == 0);
  CHECK_THROWS_WITH(parse_train_flags({"--top-k", "11"}),
                    "--top-k must be at most the 10 classes, got 11");
  CHECK_THROWS_WITH(parse_train_flags({"--top-k", "-1"}),
                    "--top-k must not be negative (0: off), got -1");
  CHECK_THROWS_WITH(
    parse_train_flags({"--dataset", "synthetic", "--num-classes", "3", "--top-k", "4"}),
    "--top-k must be at most the 3 classes, got 4");
  temp_config config("top_k_key", "train { top_k = 3 }\n");
  CHECK(parse_train_flags({"--config", config.path()}).job.top_k == 3);
  CHECK(parse_train_flags({"--config", config.path(), "--top-k", "0"}).job.top_k == 0);
}

TEST_CASE(
  "the worker processes default the compute count, read once, and the topology follows it") {
  temp_config config("compute_count",
                     "cluster { server_nodes = 1  worker_nodes = 2 }\ntopology backup(1)\n");
  int asked = 0;
  cluster_settings seen;
  auto node = [&](std::vector<std::string> args, int processes) {
    return parse_train_flags(args, "node", "test", {}, [&, processes](const cluster_settings& s) {
      ++asked;
      seen = s;
      return processes;
    });
  };
  // As troupe node under a launcher of 4 worker processes: 4 computes, backup(1) needs 3.
  auto cli = node({"--config", config.path(), "--worker-nodes", "4"}, 4);
  CHECK(asked == 1);
  CHECK(seen.worker_nodes == 4); // the flag over the config
  CHECK(seen.server_nodes == 1);
  CHECK(seen.given.count("worker-nodes") == 1);
  CHECK(cli.job.topology.workers == 4);
  CHECK(cli.job.topology.levels == std::vector<aggregation_level>{{aggregation_scope::all, 3}});
  CHECK_FALSE(cli.workers_given);
  CHECK(cli.given.count("workers") == 0);
  // --workers stands; the place is still asked for.
  auto given = node({"--config", config.path(), "--workers", "6"}, 2);
  CHECK(asked == 2);
  CHECK(given.job.topology.workers == 6);
  CHECK(given.job.topology.levels == std::vector<aggregation_level>{{aggregation_scope::all, 5}});
  CHECK(given.workers_given);
  // Without the question, the flags' and config's worker processes.
  CHECK(parse_train_flags({"--config", config.path()}).job.topology.workers == 2);
}

TEST_CASE("subset flags on file data set the statement's subset and the model's classes") {
  const auto cli = parse_train_flags({"--classes", "0-4", "--num-examples", "1000"});
  CHECK(cli.job.train_data.subset.classes == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(cli.job.train_data.subset.first == 1000);
  CHECK(cli.job.validation_data.subset.classes == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(cli.job.validation_data.subset.first == 0); // validation keeps its whole split
  CHECK(cli.job.model.classes == 10);               // labels keep their indices
  const auto wide = parse_train_flags({"--dataset", "mnist", "--num-classes", "12"});
  CHECK(wide.job.train_data.subset.class_count == 12);
  CHECK(wide.job.validation_data.subset.class_count == 12);
  CHECK(wide.job.model.classes == 12);
  CHECK(parse_train_flags({}).job.train_data.subset.class_count == 0);
  const auto synthetic = parse_train_flags({"--dataset", "synthetic", "--num-examples", "600"});
  CHECK(synthetic.job.train_data.synthetic_size == 600);
  CHECK(synthetic.job.train_data.subset.first == 0);
}

TEST_CASE("subset and fine-tuning flags refuse what cannot be meant") {
  CHECK_THROWS_WITH(parse_train_flags({"--classes", "4-2"}),
                    Catch::Contains("--classes: classes \"4-2\": the range 4-2 runs backwards"));
  CHECK_THROWS_WITH(parse_train_flags({"--num-examples", "-1"}),
                    Catch::Contains("--num-examples must be between 0"));
  CHECK_THROWS_WITH(parse_train_flags({"--image-shape", "1,8,8"}),
                    Catch::Contains("fashion-mnist takes its shape from its files"));
  CHECK_THROWS_WITH(parse_train_flags({"--data-train", "t.rec", "--classes", "0-4"}),
                    Catch::Contains("--classes keeps the examples of a dataset held in memory"));
  temp_config config("subset", "model lenet\n");
  CHECK_THROWS_WITH(parse_train_flags({"--config", config.path(), "--classes", "0-4"}),
                    Catch::Contains("--classes cannot be combined with --config"));
  CHECK_THROWS_WITH(parse_train_flags({"--reset-layers", "fc2"}),
                    Catch::Contains("reset_layers needs init_from"));
  CHECK_THROWS_WITH(parse_train_flags({"--init-from", "r/m-1", "--reset-layers", "fc1,,fc2"}),
                    Catch::Contains("reset_layers \"fc1,,fc2\": an empty name"));
  CHECK_THROWS_WITH(
    parse_train_flags({"--init-from", "r/m-1", "--load-epoch", "1", "--model-prefix", "r/m"}),
    Catch::Contains("give one of them"));
  const auto tune = parse_train_flags({"--init-from", "r/m-1", "--reset-layers", "fc1,fc2"});
  CHECK(tune.job.init_from == "r/m-1");
  CHECK(tune.job.reset_layers == std::vector<std::string>{"fc1", "fc2"});
}
