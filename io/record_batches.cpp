// batch_source::make for streamed datasets: read, decode and resample the records of one
// batch, in parallel on oneTBB, one record per task (a decode is ~1 ms at ImageNet sizes,
// far above a task's cost).
//
// Determinism: each record's crop, mirror coin, rotation and colour jitter come from streams
// keyed by (seed, epoch, record index), and each example is written to its own slot, so neither
// thread count nor scheduling changes a batch. Failures are kept per slot and resolved after the
// loop in slot order, so the error reported (or the set of records skipped) is the same on every
// run too. Skipped records are squeezed out, keeping the others' order.
#include <troupe/io/batch_source.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <troupe/io/image_augment.hpp>
#include <troupe/io/record_dataset.hpp>

#include "io/random_streams.hpp"

namespace troupe {

namespace {

constexpr std::uint64_t crop_tag = 0x63726f70ULL;       // keys the random resized crop
constexpr std::uint64_t mirror_tag = 0x6d6972726fULL;   // keys the mirror coin
constexpr std::uint64_t rotate_tag = 0x726f74617465ULL; // keys the rotation's angle
constexpr std::uint64_t jitter_tag = 0x6a6974746572ULL; // keys the colour jitter's factors

// value * scale + shift == (value / 255 - mean) / stdev, per channel.
void affine_of(const augment_options& augment, float scale[3], float shift[3]) {
  for (int c = 0; c < 3; ++c) {
    const bool normalize = !augment.mean.empty();
    const float mean = normalize ? augment.mean[std::size_t(c)] : 0.0f;
    const float stdev = normalize ? augment.stdev[std::size_t(c)] : 1.0f;
    scale[c] = 1.0f / (255.0f * stdev);
    shift[c] = -mean / stdev;
  }
}

// Normalizes planar pixels in place: value * scale[c] + shift[c].
void normalize_planes(float* planes, std::size_t plane, const float scale[3],
                      const float shift[3]) {
  for (int c = 0; c < 3; ++c)
    for (float *v = planes + c * plane, *end = v + plane; v != end; ++v)
      *v = *v * scale[c] + shift[c];
}

} // namespace

batch batch_source::make_from_records(std::int64_t epoch, std::int64_t index, tensor reuse) const {
  const image_records& records = *data_->records();
  const auto& shape = data_->sample_shape();
  const int out_height = static_cast<int>(shape[1]), out_width = static_cast<int>(shape[2]);
  const std::int64_t first = index * options_.batch_size;
  const std::int64_t count = std::min(options_.batch_size, samples_ - first);
  const std::int64_t numel = data_->sample_numel();
  const auto order = options_.shuffle ? epoch_order(epoch) : nullptr;
  const auto& augment = options_.augment;
  const resized_crop_options crop{augment.crop_scale_min, augment.crop_scale_max,
                                  augment.crop_ratio_min, augment.crop_ratio_max};
  const int resize_shorter = augment.resize_shorter > 0 ? static_cast<int>(augment.resize_shorter)
                                                        : std::min(out_height, out_width);
  float scale[3], shift[3];
  affine_of(augment, scale, shift);
  const colour_jitter jitter{augment.brightness, augment.contrast, augment.saturation};
  const float unit_scale[3] = {1, 1, 1}, no_shift[3] = {0, 0, 0};

  batch result = start_batch(epoch, index, count, shape, std::move(reuse));
  std::vector<std::optional<io_error>> failures(static_cast<std::size_t>(count));
  float* images = result.images.data();
  tbb::parallel_for(
    tbb::blocked_range<std::int64_t>(0, count, 1),
    [&](const tbb::blocked_range<std::int64_t>& range) {
      for (auto i = range.begin(); i != range.end(); ++i) {
        const std::int64_t position = options_.part + (first + i) * options_.parts;
        const auto record = example_at(order.get(), position);
        try {
          auto example = records.read(record);
          const auto key = [&](std::uint64_t tag) {
            return mix_seed({options_.seed, tag, std::uint64_t(epoch), std::uint64_t(record)});
          };
          if (augment.max_rotate_angle > 0)
            example.image =
              rotate_image(example.image, draw_angle(augment.max_rotate_angle, key(rotate_tag)));
          const auto& image = example.image;
          const crop_box box =
            augment.random_resized_crop
              ? random_resized_crop(image.height, image.width, crop, key(crop_tag))
              : center_crop(image.height, image.width, resize_shorter, out_height, out_width);
          const bool flip = augment.mirror && (splitmix_stream(key(mirror_tag))() >> 63) != 0;
          float* out = images + i * numel;
          if (jitter.active()) { // jitter acts on pixel values, so normalization comes after
            resample_to_planes(image, box, flip, out_height, out_width, unit_scale, no_shift, out);
            apply_jitter(draw_jitter(jitter, key(jitter_tag)), out_height, out_width, out);
            normalize_planes(out, std::size_t(out_height) * out_width, scale, shift);
          } else {
            resample_to_planes(image, box, flip, out_height, out_width, scale, shift, out);
          }
          result.labels[std::size_t(i)] = example.label;
        } catch (const io_error& e) {
          failures[std::size_t(i)] = e;
        }
      }
    });

  const std::int64_t bad =
    std::count_if(failures.begin(), failures.end(), [](const auto& f) { return f.has_value(); });
  if (bad == 0)
    return result;
  const auto& first_failure =
    *std::find_if(failures.begin(), failures.end(), [](const auto& f) { return f.has_value(); });
  if (!records.options().skip_bad_records)
    throw *first_failure;
  if (bad == count)
    throw io_error(std::string(first_failure->what()) + " (and every other record of batch "
                   + std::to_string(index) + " of epoch " + std::to_string(epoch)
                   + " is bad too: nothing left to train on)");
  batch kept;
  kept.images = tensor::uninitialized({count - bad, shape[0], shape[1], shape[2]});
  kept.epoch = epoch;
  kept.index = index;
  kept.skipped = bad;
  for (std::int64_t i = 0, to = 0; i < count; ++i) {
    if (failures[std::size_t(i)])
      continue;
    std::memcpy(kept.images.data() + to * numel, images + i * numel,
                std::size_t(numel) * sizeof(float));
    kept.labels.push_back(result.labels[std::size_t(i)]);
    ++to;
  }
  return kept;
}

} // namespace troupe
