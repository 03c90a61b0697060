// The run's own warnings (run_watch.hpp). The bounds are wide on purpose: a warning that cries
// wolf on a slow but healthy start (VGG's first epoch, ImageNet's 1000 classes) would teach
// users to ignore it, so each asks for a whole epoch that is plainly no better than guessing,
// plainly worse, or getting worse.
#include <troupe/actors/run_watch.hpp>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace troupe {

namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string shortest(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

} // namespace

run_watch::run_watch(run_watch_options options) : options_(options) {}

std::string run_watch::cause(const std::string& kind) const {
  const auto lr = shortest(options_.learning_rate);
  if (options_.two_bit_threshold > 0)
    return "the 2-bit threshold " + shortest(options_.two_bit_threshold)
           + " is likely far above the gradients, so the hop sends almost nothing (or only "
             "clipped values): compress with \"2bit\" (a scale fitted to each block) or a "
             "smaller threshold";
  if (options_.asynchronous)
    return std::string("stale gradients")
           + (options_.staleness >= 0 ? " (staleness " + std::to_string(options_.staleness) + ")"
                                      : " (async)")
           + " at lr " + lr + " likely overshoot: try a lower --lr ("
           + shortest(options_.learning_rate / 4) + ") or less staleness";
  if (kind == "near_chance")
    return "the lr " + lr + " is likely too high (or too low to move): try --lr "
           + shortest(options_.learning_rate / 10) + " or a longer --warmup-epochs";
  return "the lr " + lr + " is likely too high: try --lr " + shortest(options_.learning_rate / 10)
         + " or a longer --warmup-epochs";
}

std::optional<run_warning> run_watch::near_chance(std::int64_t epoch, const char* phase,
                                                  double loss, double accuracy) const {
  const double k = options_.classes, chance_loss = std::log(k);
  if (!(accuracy < 2.5 / k && loss >= 0.9 * chance_loss))
    return std::nullopt;
  return run_warning{epoch, "near_chance",
                     "epoch " + std::to_string(epoch) + ": " + phase + " accuracy "
                       + fixed(accuracy, 4) + " and loss " + fixed(loss, 4)
                       + " are near chance for " + std::to_string(options_.classes)
                       + " classes (accuracy 1/" + std::to_string(options_.classes) + ", loss ln "
                       + std::to_string(options_.classes) + " = " + fixed(chance_loss, 4)
                       + "): the run is not learning; " + cause("near_chance")};
}

// Below this share of values sent, a hop's updates vanish: a fitted 2-bit hop sends the values
// beyond its block's scale and carries the rest as residual, well above it on every network
// measured (docs/operations.md, "A run that is not learning").
constexpr double vanishing_share = 0.01;

std::optional<run_warning> run_watch::vanishing(std::int64_t epoch, push_counts pushed) const {
  if (pushed.values <= 0)
    return std::nullopt;
  const double share = static_cast<double>(pushed.sent) / static_cast<double>(pushed.values);
  if (!(share < vanishing_share))
    return std::nullopt;
  return run_warning{
    epoch, "vanishing",
    "epoch " + std::to_string(epoch) + ": the compressed pushes sent " + fixed(100 * share, 3)
      + "% of their gradient values (" + std::to_string(pushed.sent) + " of "
      + std::to_string(pushed.values) + ") non-zero: the updates vanish in the hop; "
      + (options_.two_bit_threshold > 0
           ? cause("vanishing")
           : "the gradients are likely too small for the hop's encoding: a larger --lr or "
             "batch, or a hop without compression")};
}

std::vector<run_warning> run_watch::trained(std::int64_t epoch, double loss, double accuracy,
                                            bool validated, push_counts pushed) {
  std::vector<run_warning> out;
  if (auto w = vanishing(epoch, pushed))
    out.push_back(*w);
  if (options_.classes < 2)
    return out;
  train_losses_.push_back(loss);
  const double chance_loss = std::log(static_cast<double>(options_.classes));
  if (!(loss <= 1.5 * chance_loss)) // NaN too (a compute stops on one itself)
    out.push_back({epoch, "diverging",
                   "epoch " + std::to_string(epoch) + ": the training loss " + fixed(loss, 4)
                     + " is above 1.5 ln " + std::to_string(options_.classes) + " = "
                     + fixed(1.5 * chance_loss, 4) + ", worse than guessing: the run is diverging; "
                     + cause("diverging")});
  const auto n = static_cast<std::size_t>(options_.rising_epochs);
  const auto& l = train_losses_;
  bool rising = n > 0 && l.size() > n;
  for (std::size_t i = l.size() - n; rising && i < l.size(); ++i)
    rising = l[i] > l[i - 1];
  if (rising)
    out.push_back({epoch, "rising",
                   "epoch " + std::to_string(epoch) + ": the training loss rose for "
                     + std::to_string(n) + (n == 1 ? " epoch" : " epochs") + " ("
                     + fixed(l[l.size() - 1 - n], 4) + " to " + fixed(loss, 4) + "); "
                     + cause("rising")});
  if (!validated)
    if (auto w = near_chance(epoch, "training", loss, accuracy))
      out.push_back(*w);
  return out;
}

std::vector<run_warning> run_watch::validated(std::int64_t epoch, double loss, double accuracy) {
  std::vector<run_warning> out;
  if (options_.classes < 2)
    return out;
  if (auto w = near_chance(epoch, "validation", loss, accuracy))
    out.push_back(*w);
  return out;
}

std::string warning_json(const run_warning& w) {
  nlohmann::ordered_json j;
  j["epoch"] = w.epoch;
  j["kind"] = w.kind;
  j["message"] = w.message;
  return j.dump();
}

} // namespace troupe
