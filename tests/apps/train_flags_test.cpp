// `troupe train` flags resolve into the options the actors run with.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/train_flags.hpp"

using namespace troupe;

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
  CHECK(o.optimizer.schedule.warmup_epochs == 1);
  CHECK(o.optimizer.schedule.step_epochs == std::vector<double>{5, 7.5});
  CHECK(o.train_batches.augment.mean.size() == 1);
  CHECK(o.train_batches.augment.pad_crop == 0);
  CHECK(cli.threads == 2);

  auto mlp = parse_train_flags({"--network", "mlp", "--num-epochs", "4", "--lr-step-epochs", "1,3"});
  CHECK(mlp.job.optimizer.schedule.base_lr == Approx(0.1f));
  CHECK(mlp.job.optimizer.schedule.step_epochs == std::vector<double>{1, 3});
}

TEST_CASE("train flags for CIFAR-10 turn on crop and mirror, synthetic parses its shape") {
  auto cifar = parse_train_flags({"--dataset", "cifar10", "--data-dir", "/data/cifar",
                                  "--network", "resnet", "--num-layers", "20"});
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

TEST_CASE("train flags reject bad values with the flag's name") {
  CHECK_THROWS_WITH(parse_train_flags({"--network", "alexnet"}),
                    Catch::Contains("--network") && Catch::Contains("alexnet"));
  CHECK_THROWS_WITH(parse_train_flags({"--dataset", "svhn"}), Catch::Contains("svhn"));
  CHECK_THROWS_WITH(parse_train_flags({"--batch-size", "0"}), Catch::Contains("--batch-size"));
  CHECK_THROWS_WITH(parse_train_flags({"--mom", "1.5"}), Catch::Contains("--mom"));
  CHECK_THROWS_WITH(parse_train_flags({"--lr-step-epochs", "3,x"}), Catch::Contains("'x'"));
  CHECK_THROWS_WITH(parse_train_flags({"--lr-schedule", "poly"}), Catch::Contains("poly"));
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
  CHECK_THROWS_WITH(parse_train_flags({"--eval-every", "0"}), Catch::Contains("--eval-every must be positive"));
}
