// One range per value, for flags and config alike:
// for each value a flag and a config key both set, the values at and just beyond the ends of
// its range are either accepted by both `troupe train --FLAG V` and `train { key = V }` (and the
// other sections' keys), or refused by both. Written against the two front doors only, not
// against the shared table, so a flag check that drifts from the config's reader fails here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "apps/flags.hpp"
#include "apps/train_flags.hpp"
#include <troupe/graph/config/job_config.hpp>

using namespace troupe;

namespace {

struct shared_value {
  std::vector<std::string>
    flags;            ///< the flags, "{}" where the value goes (also inside one: "1,{},8")
  std::string config; ///< the config text, "{}" where the value goes
  std::vector<std::string> values;
};

std::string filled(std::string text, const std::string& value) {
  return text.replace(text.find("{}"), 2, value);
}

bool flag_accepts(const shared_value& c, const std::string& value) {
  std::vector<std::string> args;
  for (const auto& a : c.flags)
    args.push_back(a.find("{}") != std::string::npos ? filled(a, value) : a);
  try {
    parse_train_flags(args);
    return true;
  } catch (const usage_error&) {
    return false;
  }
}

bool config_accepts(const shared_value& c, const std::string& value) {
  try {
    parse_job_config("t.troupe", filled(c.config, value));
    return true;
  } catch (const config_error&) {
    return false;
  }
}

// The compute thread limit of this machine: 4 per hardware thread, at least 64.
std::string threads_limit(int above) {
  const unsigned limit = std::min(4096u, std::max(64u, 4 * std::thread::hardware_concurrency()));
  return std::to_string(limit + above);
}

} // namespace

TEST_CASE("a flag and the config key it overrides accept the same values") {
  const std::vector<shared_value> cases{
    {{"--threads", "{}"},
     "train { threads = {} }",
     {"0", "1", threads_limit(0), threads_limit(1), "100", "4096", "5000"}},
    {{"--eval-every", "{}"},
     "train { eval_every = {} }",
     {"-1", "0", "1", "1000000000", "1000000001"}},
    {{"--num-epochs", "{}"}, "train { epochs = {} }", {"0", "1", "1000000000", "1000000001"}},
    {{"--prefetch", "{}"}, "train { prefetch = {} }", {"0", "1", "1024", "1025"}},
    {{"--seed", "{}"}, "train { seed = {} }", {"-1", "0", "9007199254740992", "9007199254740994"}},
    {{"--disp-batches", "{}"}, "train { display = {} }", {"-1", "0", "1000000000", "1000000001"}},
    {{"--top-k", "{}"}, "train { top_k = {} }", {"-1", "0", "10", "11"}},
    {{"--save-period", "{}"}, "train { save_period = {} }", {"0", "1", "1000000000", "1000000001"}},
    {{"--load-epoch", "{}", "--model-prefix", "m"},
     "train { load_epoch = {}  model_prefix = \"m\" }",
     {"-2", "0", "1000000000", "1000000001"}},
    {{"--batch-size", "{}"},
     "data train = fashion_mnist(batch = {})",
     {"0", "1", "1000000000", "1000000001"}},
    {{"--val-batch-size", "{}"}, "data val = fashion_mnist(batch = {})", {"0", "1", "1000000001"}},
    {{"--random-crop-pad", "{}"}, "data train = fashion_mnist(crop_pad = {})", {"0", "64", "65"}},
    {{"--dataset", "synthetic", "--num-classes", "{}"},
     "data train = synthetic(classes = {})",
     {"1", "2", "100000", "100001"}},
    {{"--dataset", "synthetic", "--num-examples", "{}"},
     "data train = synthetic(examples = {})",
     {"5", "6", "1000000001"}},
    // mlp: the flags also plan the job, and lenet's pooling needs 8 rows.
    {{"--network", "mlp", "--dataset", "synthetic", "--image-shape", "1,{},8"},
     "model mlp\ndata train = synthetic(shape = [1, {}, 8])",
     {"0", "1", "4096", "4097"}},
    {{"--network", "mlp", "--data-train", "t.rec", "--image-shape", "3,{},8"},
     "model mlp\ndata train = recordio(\"t.rec\", shape = [3, {}, 8])",
     {"0", "1", "4096", "4097", "65535"}},
    {{"--data-train", "t.rec", "--rgb-mean", "{},1,1"},
     "data train = recordio(\"t.rec\", rgb_mean = [{}, 1, 1])",
     {"-1", "0", "255", "255.5"}},
    {{"--data-train", "t.rec", "--rgb-std", "{},1,1"},
     "data train = recordio(\"t.rec\", rgb_std = [{}, 1, 1])",
     {"0", "0.5", "255", "256"}},
    {{"--lr", "{}"}, "optimizer sgd(lr = {})", {"0", "0.001", "100", "100.5"}},
    {{"--mom", "{}"}, "optimizer sgd(momentum = {})", {"-0.1", "0", "0.9999995", "1"}},
    {{"--wd", "{}"}, "optimizer sgd(wd = {})", {"-0.1", "0", "1", "1.5"}},
    {{"--optimizer", "adam", "--beta1", "{}"},
     "optimizer adam(beta1 = {})",
     {"-0.1", "0", "0.9999995", "1"}},
    {{"--optimizer", "lamb", "--beta2", "{}"}, "optimizer lamb(beta2 = {})", {"0", "0.999", "1"}},
    {{"--optimizer", "adagrad", "--epsilon", "{}"},
     "optimizer adagrad(eps = {})",
     {"0", "1e-10", "1", "2"}},
    {{"--optimizer", "rmsprop", "--alpha", "{}"}, "optimizer rmsprop(alpha = {})", {"0.5", "1"}},
    {{"--optimizer", "lars", "--lars-trust", "{}"},
     "optimizer lars(trust = {})",
     {"0", "0.001", "1", "1.5"}},
    {{"--lr-factor", "{}"}, "schedule multi_step(factor = {})", {"0", "0.5", "1", "1.5"}},
    {{"--warmup-epochs", "{}"},
     "schedule multi_step(warmup = {})",
     {"-1", "0", "1000000", "2000000"}},
    {{"--shards", "{}"}, "cluster { shards = {} }", {"0", "1", "1025"}},
    {{"--slice-bytes", "{}"},
     "cluster { slice_bytes = {} }",
     {"3", "4", "1099511627776", "1099511627777"}},
    {{"--group-bytes", "{}"},
     "cluster { group_bytes = {} }",
     {"-1", "0", "1099511627776", "1099511627777"}},
  };
  for (const auto& c : cases)
    for (const auto& value : c.values) {
      std::string flags;
      for (const auto& a : c.flags)
        flags += (a.find("{}") != std::string::npos ? filled(a, value) : a) + " ";
      INFO(flags << " vs " << filled(c.config, value));
      CHECK(flag_accepts(c, value) == config_accepts(c, value));
    }
}

TEST_CASE("eval-every 0 on the command line means no validation, as eval_every = 0 does") {
  CHECK_FALSE(parse_train_flags({"--eval-every", "0"}).job.validate);
  CHECK(parse_train_flags({"--eval-every", "3"}).job.validate);
}

TEST_CASE("config values out of range are called out of range, in full digits") {
  auto error_of = [](const std::string& text) {
    try {
      parse_job_config("t.troupe", text);
    } catch (const config_error& e) {
      return e.headline();
    }
    return std::string("accepted");
  };
  // 1e30 is a whole number, too large: not "not a whole number".
  CHECK(error_of("train { epochs = 1e30 }")
        == "t.troupe:1:18: epochs must be between 1 and 1000000000, got 1e+30");
  CHECK(error_of("train { epochs = 10000000000 }")
        == "t.troupe:1:18: epochs must be between 1 and 1000000000, got 10000000000");
  CHECK(error_of("cluster { heartbeat = 0.01 }")
        == "t.troupe:1:23: heartbeat must be at least 0.05 and at most 600, got 0.01");
  CHECK(error_of("train { epochs = 2.5 }")
        == "t.troupe:1:18: epochs must be a whole number, got '2.5'");
  CHECK(error_of("train { epochs = 50% }")
        == "t.troupe:1:18: epochs takes a plain number, not a percentage");
}
