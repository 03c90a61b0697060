// The schedule a run resolves to, as a user meets it: every shipped example reaches its
// configured rate in its first epoch whatever --num-epochs says (a warm-up written for the
// config's own run is shortened with a shorter one, and a line says so), and a warm-up that
// would never reach the rate is refused naming the flag or the key that gave it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/commands.hpp"
#include "apps/train_flags.hpp"
#include "tests/apps/temp_config.hpp"
#include <troupe/kernels/lr_schedule.hpp>

using namespace troupe;
using test::temp_config;

namespace {

std::vector<std::string> example_configs() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(TROUPE_EXAMPLES_DIR))
    if (entry.path().extension() == ".troupe")
      paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The highest rate of epoch 0, sampled at every step of a 1000-step epoch and where the
// warm-up ends inside it (where a ramp peaks).
float first_epoch_peak(const lr_schedule_options& options) {
  const lr_schedule s(options);
  float peak = options.warmup_epochs < 1 ? s.at(options.warmup_epochs) : 0.0f;
  for (int i = 0; i < 1000; ++i)
    peak = std::max(peak, s.at(i / 1000.0));
  return peak;
}

std::string usage_error_of(const std::vector<std::string>& args) {
  try {
    parse_train_flags(args);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("every shipped example reaches its rate in epoch 0 at 1, 2, 3 and 10 epochs") {
  const auto examples = example_configs();
  REQUIRE(examples.size() >= 10);
  for (const auto& path : examples)
    for (const char* epochs : {"1", "2", "3", "10"}) {
      INFO(path << " --num-epochs " << epochs);
      const auto cli = parse_train_flags({"--config", path, "--num-epochs", epochs});
      const auto& s = cli.job.optimizer.schedule;
      // within a step of a 400-step epoch: a warm-up of exactly one epoch peaks at its last step
      CHECK(first_epoch_peak(s) == Approx(s.base_lr).epsilon(0.0025));
      for (const auto& note : cli.notes) // each names the key it changed
        CHECK_THAT(note, Catch::StartsWith(path + ":") && Catch::Contains("warm-up shortened"));
    }
}

TEST_CASE("a config's warm-up keeps its share of the config's run when a flag shortens it") {
  const auto path = std::string(TROUPE_EXAMPLES_DIR) + "/fashion_bsp.troupe";
  const auto one = parse_train_flags({"--config", path, "--num-epochs", "1"});
  CHECK(one.job.optimizer.schedule.warmup_epochs == Approx(0.1));
  REQUIRE(one.notes.size() == 1);
  CHECK(one.notes[0]
        == path
             + ":9:65: warm-up shortened from 1 epoch to 0.1 epochs, its share of the "
               "config's 10 epochs: 1 epoch would not end before the first decay at epoch 0.5 "
               "(50% of 1 epoch), and the lr would never reach its rate");
  const auto two = parse_train_flags({"--config", path, "--num-epochs", "2"});
  CHECK(two.job.optimizer.schedule.warmup_epochs == Approx(0.2));
  const auto three = parse_train_flags({"--config", path, "--num-epochs", "3"});
  CHECK(three.job.optimizer.schedule.warmup_epochs == 1); // ends before the decay at 1.5
  CHECK(three.notes.empty());
  CHECK(parse_train_flags({"--config", path}).notes.empty());
}

TEST_CASE("a warm-up that would never reach the rate is refused naming what gave it") {
  CHECK(usage_error_of({"--num-epochs", "1", "--warmup-epochs", "0.5"})
        == "--warmup-epochs 0.5: a warm-up of 0.5 epochs does not end before the first decay at "
           "epoch 0.5 (50% of 1 epoch), so the lr would never reach its rate: give a shorter "
           "warm-up or later steps");
  CHECK_THAT(
    usage_error_of({"--lr-schedule", "cosine", "--num-epochs", "2", "--warmup-epochs", "2"}),
    Catch::Contains("--warmup-epochs 2: a warm-up of 2 epochs does not end before the "
                    "run's end at epoch 2"));
  // the config's warm-up, met by the flag's earlier steps: refused at the key, naming the flag
  temp_config config("steps", "schedule multi_step(warmup = 2)\ntrain { epochs = 10 }");
  CHECK_THAT(usage_error_of({"--config", config.path(), "--lr-step-epochs", "1,5"}),
             Catch::Contains(config.path()
                             + ":1:30: a warm-up of 2 epochs does not end before "
                               "the first decay at epoch 1, so")
               && Catch::Contains("(--lr-step-epochs)"));
  CHECK_THAT(usage_error_of({"--lr-schedule", "one-cycle", "--warmup-epochs", "1"}),
             Catch::Contains("--warmup-epochs does not apply to one_cycle"));
  CHECK_THAT(usage_error_of({"--lr-schedule", "cosine", "--lr-factor", "0.5"}),
             Catch::Contains("--lr-factor applies to the multi-step schedule and step only, not "
                             "cosine"));
  CHECK_THAT(usage_error_of({"--lr-schedule", "step", "--lr-step-epochs", "1"}),
             Catch::Contains("--lr-step-epochs applies to the multi-step schedule only, not step"));
  CHECK_THAT(usage_error_of({"--lr-schedule", "linear"}),
             Catch::Contains("--lr-schedule: 'linear' is not one of multi-step, step, cosine"));
}

TEST_CASE("each schedule policy reaches the session from the flag") {
  for (const char* name : {"multi-step", "step", "cosine", "poly", "one-cycle", "constant"}) {
    INFO(name);
    const auto s = parse_train_flags({"--lr-schedule", name}).job.optimizer.schedule;
    CHECK(std::string(to_string(s.policy)) == name);
  }
}
