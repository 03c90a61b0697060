// RecordIO's augmentation flags (apps/record_flags.cpp and the data keys they share with the
// config language): each reaches the training batches' options, validation's stay plain, and
// values out of range, crossed ends or other data are refused naming the flag.
#include <catch2/catch.hpp>

#include "apps/flags.hpp"
#include "apps/train_flags.hpp"

using namespace troupe;

namespace {

train_command_line records(std::vector<std::string> more) {
  std::vector<std::string> args{"--data-train", "t.rec", "--data-val", "v.rec"};
  args.insert(args.end(), more.begin(), more.end());
  return parse_train_flags(args);
}

std::string refusal(std::vector<std::string> args) {
  try {
    parse_train_flags(args);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("MXNet's augmentation flags reach the training batches") {
  const auto cli =
    records({"--brightness", "0.4", "--contrast", "0.3", "--saturation", "0.2",
             "--max-rotate-angle", "15", "--min-aspect-ratio", "0.5", "--max-aspect-ratio", "2"});
  const auto& a = cli.job.train_batches.augment;
  CHECK(a.brightness == 0.4);
  CHECK(a.contrast == 0.3);
  CHECK(a.saturation == 0.2);
  CHECK(a.max_rotate_angle == 15);
  CHECK(a.crop_ratio_min == 0.5);
  CHECK(a.crop_ratio_max == 2);
  const auto& v = cli.job.validation_batches.augment;
  CHECK(v.brightness == 0);
  CHECK(v.max_rotate_angle == 0);
  // One end alone keeps the key's other end.
  const auto wide = records({"--max-aspect-ratio", "3"}).job.train_batches.augment;
  CHECK(wide.crop_ratio_min == 0.75);
  CHECK(wide.crop_ratio_max == 3);
  const auto plain = records({}).job.train_batches.augment;
  CHECK(plain.brightness == 0);
  CHECK(plain.crop_ratio_max == Approx(4.0 / 3.0));
}

TEST_CASE("augmentation flags out of range, crossed or on other data are refused") {
  CHECK(refusal({"--data-train", "t.rec", "--brightness", "1.5"})
        == "--brightness must be between 0 and 1, got 1.5");
  CHECK(refusal({"--data-train", "t.rec", "--contrast", "-0.1"})
        == "--contrast must be between 0 and 1, got -0.1");
  CHECK(refusal({"--data-train", "t.rec", "--saturation", "2"})
        == "--saturation must be between 0 and 1, got 2");
  CHECK(refusal({"--data-train", "t.rec", "--max-rotate-angle", "200"})
        == "--max-rotate-angle must be between 0 and 180, got 200");
  CHECK(refusal({"--data-train", "t.rec", "--min-aspect-ratio", "0"})
        == "--min-aspect-ratio must be in (0, 100], got 0");
  CHECK(refusal({"--data-train", "t.rec", "--min-aspect-ratio", "2", "--max-aspect-ratio", "1"})
        == "--min-aspect-ratio (2) must not exceed --max-aspect-ratio (1)");
  CHECK(refusal({"--brightness", "0.2"})
        == "--brightness applies to recordio data, not "
           "fashion_mnist");
  CHECK(refusal({"--max-aspect-ratio", "2"})
        == "--max-aspect-ratio shapes the random resized crop of RecordIO data, not "
           "fashion_mnist");
}
