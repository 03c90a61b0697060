// `troupe train` flags resolve into the options the actors run with.
#include <catch2/catch.hpp>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/train_flags.hpp"

using namespace troupe;

TEST_CASE("train defaults: LeNet on Fashion-MNIST, network-dependent lr, steps at 50%/75%") {
  auto cli = parse_train_flags({});
  const auto& o = cli.options;
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
  CHECK(mlp.options.optimizer.schedule.base_lr == Approx(0.1f));
  CHECK(mlp.options.optimizer.schedule.step_epochs == std::vector<double>{1, 3});
}

TEST_CASE("train flags for CIFAR-10 turn on crop and mirror, synthetic parses its shape") {
  auto cifar = parse_train_flags({"--dataset", "cifar10", "--data-dir", "/data/cifar",
                                  "--network", "resnet", "--num-layers", "20"});
  CHECK(cifar.options.train_batches.augment.pad_crop == 4);
  CHECK(cifar.options.train_batches.augment.mirror);
  CHECK_FALSE(cifar.options.validation_batches.augment.mirror);
  CHECK(cifar.options.model.num_layers == 20);
  auto syn = parse_train_flags({"--dataset", "synthetic", "--image-shape", "3,32,32"});
  CHECK(syn.options.train_data.synthetic_shape == shape_t{3, 32, 32});
  // Both splits come from the same prototypes: same seed and size, io picks the split.
  CHECK(syn.options.validation_data.synthetic_seed == syn.options.train_data.synthetic_seed);
  CHECK(syn.options.validation_data.synthetic_size == syn.options.train_data.synthetic_size);
  CHECK(syn.options.validation_data.which == split::test);
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
