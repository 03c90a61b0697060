// A synthetic, learnable image dataset of any C x H x W shape, for tests and benchmarks that
// must run without dataset files.
//
// Each class owns a smooth prototype image (a sum of a few random 2-D cosine waves per
// channel, drawn from the seed); an example is its class prototype plus independent pixel
// noise. The classes are therefore separable by a linear model or a small CNN, yet no single
// pixel gives the label away, so training curves look like training. The train and test
// splits share the prototypes and draw their examples from disjoint random streams.
// Everything is a pure function of the options: the same seed gives the same bytes on every
// machine and for every thread count.
//
// Thread-safety: make_synthetic may run concurrently; the result is immutable.
#pragma once

#include <cstdint>
#include <memory>

#include <troupe/io/dataset.hpp>

namespace troupe {

struct synthetic_options {
  shape_t sample_shape{1, 28, 28}; ///< C x H x W, all extents positive
  int classes = 10;                ///< at least 1
  std::int64_t train_size = 60000; ///< the test split holds max(1, train_size / 6)
  std::uint64_t seed = 0;
};

/// Builds the split `which`; throws std::invalid_argument naming a bad option.
std::shared_ptr<const dataset> make_synthetic(const synthetic_options& options, split which);

/// Number of examples make_synthetic gives for a split.
std::int64_t synthetic_split_size(const synthetic_options& options, split which);

} // namespace troupe
