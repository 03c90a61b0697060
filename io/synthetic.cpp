// Synthetic data: class prototypes of smooth waves plus per-pixel noise (see synthetic.hpp).
//
// Every example seeds its own counter-based stream from (seed, split, index), which is what
// lets oneTBB fill examples in any order while the bytes stay identical.
#include <troupe/io/synthetic.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "io/random_streams.hpp"

namespace troupe {

namespace {

constexpr int waves_per_channel = 3;
constexpr double prototype_amplitude = 70.0; // pixels swing 128 +- 70 around mid-grey
constexpr double noise_amplitude = 64.0;     // triangular noise in [-64, 64]
// Distinct stream tags so prototypes, train and test examples never share randomness.
constexpr std::uint64_t prototype_tag = 0x70726f746fULL;
constexpr std::uint64_t train_tag = 0x747261696eULL;
constexpr std::uint64_t test_tag = 0x74657374ULL;

void validate(const synthetic_options& options) {
  bool shape_ok = options.sample_shape.size() == 3;
  for (auto extent : options.sample_shape)
    shape_ok = shape_ok && extent > 0;
  if (!shape_ok)
    throw std::invalid_argument("synthetic dataset: sample shape "
                                + shape_string(options.sample_shape)
                                + " must be C x H x W with positive extents");
  if (options.classes < 1)
    throw std::invalid_argument("synthetic dataset: classes must be >= 1, got "
                                + std::to_string(options.classes));
  if (options.train_size < 0)
    throw std::invalid_argument("synthetic dataset: size must be >= 0, got "
                                + std::to_string(options.train_size));
}

// One float image per class, [classes][C*H*W], values in 128 +- prototype_amplitude; only the
// classes marked in `needed` are drawn (the rest stay zero: no example reads them). Every
// (class, channel) has a stream of its own, so the classes are drawn in parallel and each
// comes out the same whichever others are drawn.
std::vector<float> class_prototypes(const synthetic_options& options,
                                    const std::vector<char>& needed) {
  const auto channels = options.sample_shape[0];
  const auto height = options.sample_shape[1];
  const auto width = options.sample_shape[2];
  const auto plane = height * width;
  const double two_pi = 6.283185307179586;
  std::vector<float> prototypes(static_cast<std::size_t>(options.classes * channels * plane));
  tbb::parallel_for(0, options.classes, [&](int k) {
    if (!needed[static_cast<std::size_t>(k)])
      return;
    for (std::int64_t c = 0; c < channels; ++c) {
      splitmix_stream gen(
        mix_seed({options.seed, prototype_tag, std::uint64_t(k), std::uint64_t(c)}));
      double freq_y[waves_per_channel], freq_x[waves_per_channel], phase[waves_per_channel];
      for (int w = 0; w < waves_per_channel; ++w) {
        // Low integer frequencies keep the pattern smooth, so a convolution can pick it up.
        freq_y[w] = static_cast<double>(uniform_below(gen, 4));
        freq_x[w] = static_cast<double>(uniform_below(gen, 4));
        phase[w] = two_pi * unit_interval(gen());
      }
      float* out = prototypes.data() + (k * channels + c) * plane;
      for (std::int64_t y = 0; y < height; ++y) {
        for (std::int64_t x = 0; x < width; ++x) {
          double sum = 0;
          for (int w = 0; w < waves_per_channel; ++w)
            sum += std::cos(two_pi * (freq_y[w] * y / height + freq_x[w] * x / width) + phase[w]);
          out[y * width + x] =
            static_cast<float>(128.0 + prototype_amplitude * sum / waves_per_channel);
        }
      }
    }
  });
  return prototypes;
}

// The stream of example `index`: its first draw is the label (make_example).
splitmix_stream example_stream(const synthetic_options& options, std::uint64_t split_tag,
                               std::int64_t index) {
  return splitmix_stream(mix_seed({options.seed, split_tag, std::uint64_t(index)}));
}

// Fills example `index`: its label and its noisy copy of the class prototype.
void make_example(const synthetic_options& options, const std::vector<float>& prototypes,
                  std::uint64_t split_tag, std::int64_t index, std::int64_t numel,
                  std::uint8_t* pixels, std::int32_t& label) {
  auto gen = example_stream(options, split_tag, index);
  label = static_cast<std::int32_t>(uniform_below(gen, std::uint64_t(options.classes)));
  const float* prototype = prototypes.data() + label * numel;
  for (std::int64_t i = 0; i < numel; ++i) {
    const std::uint64_t bits = gen();
    // The sum of two 16-bit uniforms is triangular on [0, 2]: bounded, centred noise.
    const double noise = ((bits & 0xffff) + ((bits >> 16) & 0xffff)) / 65535.0 - 1.0;
    const double value = std::round(prototype[i] + noise_amplitude * noise);
    pixels[i] = static_cast<std::uint8_t>(std::clamp(value, 0.0, 255.0));
  }
}

} // namespace

std::int64_t synthetic_split_size(const synthetic_options& options, split which) {
  if (which == split::train)
    return options.train_size;
  return std::max<std::int64_t>(1, options.train_size / 6);
}

std::shared_ptr<const dataset> make_synthetic(const synthetic_options& options, split which) {
  validate(options);
  const auto count = synthetic_split_size(options, which);
  const auto numel = shape_numel(options.sample_shape);
  const auto split_tag = which == split::train ? train_tag : test_tag;
  // Only the classes the examples draw get a prototype: with many classes and few examples
  // (a benchmark's 1000-class 224 x 224 set) the prototypes' cosines are most of the work.
  std::vector<char> needed(static_cast<std::size_t>(options.classes), 0);
  for (std::int64_t i = 0; i < count; ++i) {
    auto gen = example_stream(options, split_tag, i);
    needed[uniform_below(gen, std::uint64_t(options.classes))] = 1;
  }
  const auto prototypes = class_prototypes(options, needed);

  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(count * numel));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(count));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count, 256),
                    [&](const tbb::blocked_range<std::int64_t>& range) {
                      for (auto i = range.begin(); i != range.end(); ++i)
                        make_example(options, prototypes, split_tag, i, numel,
                                     pixels.data() + i * numel, labels[std::size_t(i)]);
                    });

  std::ostringstream description;
  description << "synthetic " << (which == split::train ? "train" : "test") << " ("
              << shape_string(options.sample_shape) << ", " << options.classes << " classes, seed "
              << options.seed << ")";
  return std::make_shared<const dataset>(description.str(), options.sample_shape, options.classes,
                                         std::move(pixels), std::move(labels));
}

} // namespace troupe
