// Batch assembly: epoch permutation, part selection, crop / mirror, normalization.
//
// Two things make make(epoch, index) both pure and cheap. The epoch's permutation depends only
// on (seed, epoch) and is drawn with our own Fisher-Yates over a seeded mt19937_64, so every
// worker on every platform gets the same order; it is cached for the two most recent epochs,
// because a 60k shuffle per batch would dominate and loaders prefetch across an epoch
// boundary. Each example's augmentation draws come from a stream keyed by (seed, epoch, its
// position in the epoch), never from a shared generator, so the thread that builds it and the
// order in which examples are built do not matter.
#include <troupe/io/batch_source.hpp>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <troupe/io/image_augment.hpp>

#include "io/random_streams.hpp"

namespace troupe {

namespace {

constexpr std::uint64_t order_tag = 0x6f72646572ULL;     // keys the epoch permutation
constexpr std::uint64_t augment_tag = 0x6175676d656eULL; // keys per-example augmentation
// oneTBB grain within a batch, in pixels: a task of fewer costs more to hand to a worker (and
// wakes it, beside the compute step's threads) than to run. 28x28 examples go 84 to a task.
constexpr std::int64_t pixels_per_task = std::int64_t{1} << 16;
constexpr std::size_t cached_epochs = 2;

std::string invalid(const std::string& what) {
  return "batch_source: " + what;
}

// Hints the first `bytes` (at most 16 KiB) at `p` into the cache, a line at a time.
void prefetch_bytes(const std::uint8_t* p, std::int64_t bytes) {
  constexpr std::int64_t line = 64, most = 16 * 1024;
  for (std::int64_t offset = 0; offset < std::min(bytes, most); offset += line)
    __builtin_prefetch(p + offset);
}

void check_channel_values(const std::vector<float>& values, const char* name, std::int64_t channels,
                          bool positive) {
  if (static_cast<std::int64_t>(values.size()) != channels)
    throw std::invalid_argument(
      invalid(std::string("augment.") + name + " has " + std::to_string(values.size())
              + " values but the dataset has " + std::to_string(channels) + " channels"));
  for (std::size_t c = 0; c < values.size(); ++c) {
    if (!std::isfinite(values[c]) || (positive && !(values[c] > 0)))
      throw std::invalid_argument(invalid(std::string("augment.") + name + "[" + std::to_string(c)
                                          + "] must be " + (positive ? "positive and " : "")
                                          + "finite, got " + std::to_string(values[c])));
  }
}

void validate_options(const batch_source_options& options, std::int64_t channels) {
  if (options.batch_size <= 0)
    throw std::invalid_argument(
      invalid("batch_size must be > 0, got " + std::to_string(options.batch_size)));
  if (options.parts < 1)
    throw std::invalid_argument(
      invalid("parts must be >= 1, got " + std::to_string(options.parts)));
  if (options.part < 0 || options.part >= options.parts)
    throw std::invalid_argument(invalid("part must be in [0, " + std::to_string(options.parts)
                                        + "), got " + std::to_string(options.part)));
  const auto& augment = options.augment;
  if (!augment.mean.empty() || !augment.stdev.empty()) {
    check_channel_values(augment.mean, "mean", channels, false);
    check_channel_values(augment.stdev, "stdev", channels, true);
  }
  if (augment.pad_crop < 0)
    throw std::invalid_argument(
      invalid("augment.pad_crop must be >= 0, got " + std::to_string(augment.pad_crop)));
  if (augment.resize_shorter < 0 || augment.resize_shorter > 65535)
    throw std::invalid_argument(invalid("augment.resize_shorter must be in 0..65535, got "
                                        + std::to_string(augment.resize_shorter)));
  try {
    check_resized_crop({augment.crop_scale_min, augment.crop_scale_max, augment.crop_ratio_min,
                        augment.crop_ratio_max});
    check_jitter({augment.brightness, augment.contrast, augment.saturation},
                 augment.max_rotate_angle);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(invalid(std::string("augment: ") + e.what()));
  }
}

// Pixel byte -> normalized float for every channel, computed once with the exact formula
// (v / 255 - mean) / stdev, so a table lookup replaces two divisions per element.
std::vector<float> normalization_table(const augment_options& augment, std::int64_t channels) {
  std::vector<float> table(static_cast<std::size_t>(channels) * 256);
  for (std::int64_t c = 0; c < channels; ++c) {
    for (int v = 0; v < 256; ++v) {
      float value = static_cast<float>(v) / 255.0f;
      if (!augment.mean.empty())
        value = (value - augment.mean[std::size_t(c)]) / augment.stdev[std::size_t(c)];
      table[std::size_t(c) * 256 + std::size_t(v)] = value;
    }
  }
  return table;
}

} // namespace

std::int64_t examples_in_part(std::int64_t examples, int part, int parts) {
  if (examples < 0)
    throw std::invalid_argument(invalid("examples must be >= 0, got " + std::to_string(examples)));
  if (parts < 1)
    throw std::invalid_argument(invalid("parts must be >= 1, got " + std::to_string(parts)));
  if (part < 0 || part >= parts)
    throw std::invalid_argument(
      invalid("part must be in [0, " + std::to_string(parts) + "), got " + std::to_string(part)));
  return part < examples ? (examples - part + parts - 1) / parts : 0;
}

std::int64_t batches_for_part(std::int64_t examples, std::int64_t batch_size, int part, int parts,
                              bool drop_last) {
  if (batch_size <= 0)
    throw std::invalid_argument(
      invalid("batch_size must be > 0, got " + std::to_string(batch_size)));
  const std::int64_t samples = examples_in_part(examples, part, parts);
  return drop_last ? samples / batch_size : (samples + batch_size - 1) / batch_size;
}

// The last epochs' permutations, most recently used first.
struct batch_source::epoch_order_cache {
  std::mutex mutex;
  std::vector<std::pair<std::int64_t, std::shared_ptr<const std::vector<std::int64_t>>>> epochs;
};

batch_source::batch_source(std::shared_ptr<const dataset> data, batch_source_options options)
    : data_(std::move(data)), options_(std::move(options)),
      order_cache_(std::make_shared<epoch_order_cache>()) {
  if (!data_)
    throw std::invalid_argument(invalid("dataset is null"));
  const std::int64_t channels = data_->sample_shape()[0];
  validate_options(options_, channels);
  if (data_->records() && options_.augment.pad_crop > 0)
    throw std::invalid_argument(invalid("augment.pad_crop applies to in-memory images; "
                                        + data_->description()
                                        + " is streamed (use the random "
                                          "resized crop)"));
  const auto& a = options_.augment;
  if (!data_->records()
      && (a.brightness > 0 || a.contrast > 0 || a.saturation > 0 || a.max_rotate_angle > 0))
    throw std::invalid_argument(invalid("colour jitter and rotation apply to decoded images; "
                                        + data_->description() + " is held in memory"));

  const std::int64_t size = data_->size();
  const int parts = options_.parts, part = options_.part;
  samples_ = examples_in_part(size, part, parts);
  if (samples_ == 0)
    throw std::invalid_argument(
      invalid("part " + std::to_string(part) + " of " + std::to_string(parts) + " has no examples ("
              + data_->description() + " has " + std::to_string(size) + ")"));
  const std::int64_t batch_size = options_.batch_size;
  batches_ = batches_for_part(size, batch_size, part, parts, options_.drop_last);
  if (batches_ == 0)
    throw std::invalid_argument(invalid("batch_size " + std::to_string(batch_size)
                                        + " with drop_last leaves no batch: part "
                                        + std::to_string(part) + " of " + std::to_string(parts)
                                        + " has only " + std::to_string(samples_) + " examples"));
  normalized_ = normalization_table(options_.augment, channels);
}

std::shared_ptr<const std::vector<std::int64_t>>
batch_source::epoch_order(std::int64_t epoch) const {
  // Held while shuffling too: a second caller for the same epoch waits ~1 ms rather than
  // repeating the work, and callers for a cached epoch only pay the lookup.
  std::lock_guard<std::mutex> lock(order_cache_->mutex);
  auto& epochs = order_cache_->epochs;
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    if (epochs[i].first == epoch) {
      std::rotate(epochs.begin(), epochs.begin() + std::ptrdiff_t(i),
                  epochs.begin() + std::ptrdiff_t(i) + 1);
      return epochs.front().second;
    }
  }
  auto order = std::make_shared<std::vector<std::int64_t>>(std::size_t(data_->size()));
  std::iota(order->begin(), order->end(), std::int64_t(0));
  std::mt19937_64 generator(mix_seed({options_.seed, order_tag, std::uint64_t(epoch)}));
  fisher_yates(*order, generator);
  epochs.insert(epochs.begin(), {epoch, order});
  if (epochs.size() > cached_epochs)
    epochs.pop_back();
  return order;
}

void batch_source::fill_example(const std::uint8_t* pixels, std::int64_t epoch,
                                std::int64_t position, float* out) const {
  const auto& shape = data_->sample_shape();
  const std::int64_t channels = shape[0], height = shape[1], width = shape[2];
  const std::int64_t pad = options_.augment.pad_crop;
  // (offset_y, offset_x) is the crop window's corner in the padded image; pad, pad is the
  // unshifted image.
  std::int64_t offset_y = pad, offset_x = pad;
  bool flip = false;
  if (pad > 0 || options_.augment.mirror) {
    splitmix_stream draws(
      mix_seed({options_.seed, augment_tag, std::uint64_t(epoch), std::uint64_t(position)}));
    if (pad > 0) {
      offset_y = static_cast<std::int64_t>(uniform_below(draws, std::uint64_t(2 * pad + 1)));
      offset_x = static_cast<std::int64_t>(uniform_below(draws, std::uint64_t(2 * pad + 1)));
    }
    if (options_.augment.mirror)
      flip = (draws() >> 63) != 0;
  }
  if (offset_y == pad && offset_x == pad && !flip) {
    // Unaugmented: one lookup per pixel, no bounds to check (the common case, and the loop
    // the compiler unrolls).
    const std::int64_t plane = height * width;
    for (std::int64_t c = 0; c < channels; ++c) {
      const float* table = normalized_.data() + c * 256;
      const std::uint8_t* in = pixels + c * plane;
      float* plane_out = out + c * plane;
      for (std::int64_t i = 0; i < plane; ++i)
        plane_out[i] = table[in[i]];
    }
    return;
  }
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* table = normalized_.data() + c * 256;
    for (std::int64_t y = 0; y < height; ++y) {
      float* row_out = out + (c * height + y) * width;
      const std::int64_t source_y = y + offset_y - pad;
      if (source_y < 0 || source_y >= height) {
        std::fill(row_out, row_out + width, table[0]); // a padding row
        continue;
      }
      const std::uint8_t* row_in = pixels + (c * height + source_y) * width;
      for (std::int64_t x = 0; x < width; ++x) {
        // Mirroring flips the cropped window, so it is applied before the crop shift.
        const std::int64_t source_x = (flip ? width - 1 - x : x) + offset_x - pad;
        row_out[x] = (source_x < 0 || source_x >= width) ? table[0] : table[row_in[source_x]];
      }
    }
  }
}

batch batch_source::start_batch(std::int64_t epoch, std::int64_t index, std::int64_t count,
                                const shape_t& sample, tensor reuse) {
  batch result;
  const shape_t images_shape{count, sample[0], sample[1], sample[2]};
  result.images = reuse.unique() && reuse.shape() == images_shape
                    ? std::move(reuse)
                    : tensor::uninitialized(images_shape);
  result.labels.resize(std::size_t(count));
  result.epoch = epoch;
  result.index = index;
  return result;
}

batch batch_source::make(std::int64_t epoch, std::int64_t index) const {
  return make(epoch, index, tensor{});
}

batch batch_source::make(std::int64_t epoch, std::int64_t index, tensor reuse) const {
  if (epoch < 0 || index < 0 || index >= batches_)
    throw std::out_of_range("batch_source::make: epoch " + std::to_string(epoch) + ", batch "
                            + std::to_string(index) + " is outside epoch >= 0, [0, "
                            + std::to_string(batches_) + ")");
  if (data_->records())
    return make_from_records(epoch, index, std::move(reuse));
  const auto& shape = data_->sample_shape();
  const std::int64_t first = index * options_.batch_size;
  const std::int64_t count = std::min(options_.batch_size, samples_ - first);
  const std::int64_t numel = data_->sample_numel();
  const auto order = options_.shuffle ? epoch_order(epoch) : nullptr;

  batch result = start_batch(epoch, index, count, shape, std::move(reuse));
  float* images = result.images.data();
  const std::int64_t grain =
    std::max<std::int64_t>(1, pixels_per_task / std::max<std::int64_t>(1, numel));
  tbb::parallel_for(
    tbb::blocked_range<std::int64_t>(0, count, grain),
    [&](const tbb::blocked_range<std::int64_t>& range) {
      // Position in the epoch's order; part p owns p, p + n, p + 2n, ...
      auto example_at = [&](std::int64_t i) {
        const std::int64_t position = options_.part + (first + i) * options_.parts;
        return std::pair{position, order ? (*order)[std::size_t(position)] : position};
      };
      for (auto i = range.begin(); i != range.end(); ++i) {
        const auto [position, example] = example_at(i);
        // Shuffled examples are scattered over the whole set: ask for the
        // next one's pixels while this one is written.
        if (i + 1 != range.end())
          prefetch_bytes(data_->pixels(example_at(i + 1).second), numel);
        result.labels[std::size_t(i)] = data_->label(example);
        fill_example(data_->pixels(example), epoch, position, images + i * numel);
      }
    });
  return result;
}

} // namespace troupe
