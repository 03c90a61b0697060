// A run watching itself: after each epoch, whether its figures say it is not learning, and the
// likely cause. A run that collapses (2-bit compression whose fixed threshold swamps the
// gradients, SSP at a learning rate its staleness cannot take) otherwise ends with exit 0 and
// a weights file that is no better than chance; the metrics actor asks this after every phase
// and prints, records, and with --fail-on-stall stops on what it answers.
//
// What counts, for a classifier of K classes (ln K is the cross-entropy of a uniform guess):
//   near_chance  accuracy below 2.5 / K with loss at least 0.9 ln K, after a whole epoch
//                (validation's figures where the epoch is validated, training's otherwise)
//   diverging    the epoch's mean training loss above 1.5 ln K: worse than guessing
//   rising       the mean training loss rose in each of the last `rising_epochs` epochs
//   vanishing    the epoch's compressed pushes sent under 1% of their gradient values
//                non-zero: the updates vanish in the hop (a fixed 2-bit threshold above the
//                gradients, values too small for the encoding), measured where they are
//                quantized (compressed_hop.hpp), so it shows in the first epoch whatever the
//                accuracy does
// Each warning is said once per epoch and kind.
//
// Thread-safety: a plain value, used by one actor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct run_watch_options {
  int classes = 0;       ///< K; below 2: nothing to compare with, no warnings
  int rising_epochs = 2; ///< epochs of rising training loss that make `rising`
  // What names the likely cause:
  double learning_rate = 0;    ///< the schedule's base rate
  int staleness = -1;          ///< SSP's bound; -1: none
  bool asynchronous = false;   ///< shards answer each push alone (async, SSP)
  float two_bit_threshold = 0; ///< a hop's fixed 2-bit threshold; 0: none fixed
};

/// An epoch's compressed pushes: the gradient values they carried, and how many went out
/// non-zero (batch_report::values_pushed).
struct push_counts {
  std::int64_t values = 0, sent = 0;
};

struct run_warning {
  std::int64_t epoch = 0;
  std::string kind;    ///< near_chance, diverging, rising or vanishing
  std::string message; ///< what was seen and the likely cause, one line
};

class run_watch {
public:
  explicit run_watch(run_watch_options options);
  /// An epoch's training phase: its mean loss and accuracy. `validated` says whether a
  /// validation of this epoch follows (then near_chance waits for its figures). `pushed`:
  /// what its compressed pushes sent (none: nothing to say).
  std::vector<run_warning> trained(std::int64_t epoch, double loss, double accuracy, bool validated,
                                   push_counts pushed = {});
  /// An epoch's validation: its mean loss and accuracy.
  std::vector<run_warning> validated(std::int64_t epoch, double loss, double accuracy);

private:
  std::optional<run_warning> vanishing(std::int64_t epoch, push_counts pushed) const;
  std::optional<run_warning> near_chance(std::int64_t epoch, const char* phase, double loss,
                                         double accuracy) const;
  std::string cause(const std::string& kind) const;

  run_watch_options options_;
  std::vector<double> train_losses_; ///< by epoch, in the order reported
};

/// A warning as the metrics file holds it: {"epoch":E,"kind":"...","message":"..."}.
std::string warning_json(const run_warning& warning);

} // namespace troupe
