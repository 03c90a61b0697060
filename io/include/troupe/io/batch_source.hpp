// Cuts a dataset into training or validation batches: seeded shuffling, "part i of n"
// partitioning for workers, per-channel mean/std normalization, random crop with zero padding
// and horizontal mirroring. For a streamed dataset (RecordIO images) a batch reads and
// decodes its records and resamples each to the sample shape: a random resized crop for
// training, the shorter side resized then a centre crop for validation (image_augment.hpp).
//
// `make(epoch, index)` is a pure function of (seed, epoch, index): any thread may build any
// batch in any order and gets the same bytes, which is what lets loader actors prefetch ahead
// and lets several workers agree on the epoch's permutation without talking. Per epoch the
// permutation of the whole dataset is drawn from (seed, epoch); part p of n takes every n-th
// position starting at p, then batches are consecutive runs of that part.
//
// Thread-safety: const methods may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <troupe/io/dataset.hpp>
#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct batch {
  tensor images;                    ///< [B, C, H, W] float32, normalized / augmented
  std::vector<std::int32_t> labels; ///< B labels
  std::int64_t epoch = 0;
  std::int64_t index = 0; ///< batch number within the epoch (and part)
  /// Bad records left out of this batch (streamed data with skip_bad_records); images and
  /// labels then hold that many fewer examples than the batch size.
  std::int64_t skipped = 0;
};

struct augment_options {
  /// Per-channel normalization applied to pixel/255: (v - mean[c]) / stdev[c]. Empty = none.
  std::vector<float> mean, stdev;
  /// Random crop after zero padding by this many pixels; the padding is black (byte 0)
  /// before normalization, as in the usual CIFAR recipe, so it becomes -mean/stdev.
  std::int64_t pad_crop = 0;
  bool mirror = false; ///< random horizontal flip with probability 1/2
  /// Streamed (decoded) images only. Training: a random resized crop with these ranges.
  /// Otherwise the shorter side is resized to `resize_shorter` (0: the sample's shorter
  /// side) and the centre cropped.
  bool random_resized_crop = false;
  double crop_scale_min = 0.08, crop_scale_max = 1.0;
  double crop_ratio_min = 3.0 / 4.0, crop_ratio_max = 4.0 / 3.0;
  std::int64_t resize_shorter = 0;
  /// Streamed images only (image_augment.hpp): colour jitter bounds in [0, 1] and the largest
  /// rotation in degrees, [0, 180]; 0 leaves the images alone.
  double brightness = 0, contrast = 0, saturation = 0;
  double max_rotate_angle = 0;
};

/// Fields in declaration order, for CAF's serializers and graph's value_hash (no CAF here).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, augment_options& x) {
  return f(x.mean, x.stdev, x.pad_crop, x.mirror, x.random_resized_crop, x.crop_scale_min,
           x.crop_scale_max, x.crop_ratio_min, x.crop_ratio_max, x.resize_shorter, x.brightness,
           x.contrast, x.saturation, x.max_rotate_angle);
}

struct batch_source_options {
  std::int64_t batch_size = 128;
  bool shuffle = true;
  std::uint64_t seed = 0;
  int part = 0; ///< this worker's part, 0 <= part < parts
  int parts = 1;
  bool drop_last = false; ///< drop a final short batch instead of emitting it
  augment_options augment;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_source_options& x) {
  return f(x.batch_size, x.shuffle, x.seed, x.part, x.parts, x.drop_last, x.augment);
}

/// Examples that part `part` of `parts` holds of a dataset of `examples`: every parts-th
/// position from `part` on, so the first examples % parts parts hold one more. Throws
/// std::invalid_argument for examples < 0, parts < 1 or part outside [0, parts).
std::int64_t examples_in_part(std::int64_t examples, int part, int parts);

/// Batches per epoch of that part: a short last batch counts unless `drop_last`. 0 when the
/// part holds no example or drop_last leaves no batch. The arithmetic batch_source uses, so a
/// plan made without opening the data (troupe/graph/placement.hpp) counts the same steps.
/// Throws std::invalid_argument as examples_in_part does, and for batch_size < 1.
std::int64_t batches_for_part(std::int64_t examples, std::int64_t batch_size, int part, int parts,
                              bool drop_last);

class batch_source {
public:
  /// Throws std::invalid_argument naming the bad option (batch size 0, part out of range,
  /// mean/stdev not matching the channel count, stdev <= 0, negative pad_crop, a part with no
  /// examples, or drop_last leaving no batch at all).
  batch_source(std::shared_ptr<const dataset> data, batch_source_options options);

  std::int64_t batches_per_epoch() const { return batches_; }
  /// Examples this part yields per epoch.
  std::int64_t samples_per_epoch() const { return samples_; }
  const dataset& data() const { return *data_; }
  const batch_source_options& options() const { return options_; }

  /// Builds batch `index` (0 <= index < batches_per_epoch) of `epoch` (>= 0); throws
  /// std::out_of_range otherwise. Uses oneTBB across the examples of the batch. Streamed
  /// data: a bad record throws its io_error (the lowest such example of the batch, whatever
  /// the threads did), or with skip_bad_records is left out and counted in `skipped`; a batch
  /// whose records are all bad throws even then.
  batch make(std::int64_t epoch, std::int64_t index) const;
  /// The same batch, written into `reuse` when it has the batch's shape and no other handle
  /// sees it (a loader's recycled buffer: no allocation, no fresh pages to fault in);
  /// otherwise into new storage.
  batch make(std::int64_t epoch, std::int64_t index, tensor reuse) const;

private:
  struct epoch_order_cache;

  /// The epoch's permutation of all example indices (shuffle only); cached, see .cpp.
  std::shared_ptr<const std::vector<std::int64_t>> epoch_order(std::int64_t epoch) const;
  /// The example (dataset index) at `position` of the epoch's order.
  std::int64_t example_at(const std::vector<std::int64_t>* order, std::int64_t position) const {
    return order ? (*order)[std::size_t(position)] : position;
  }
  /// A batch of `count` examples of `sample` shape, labels sized, images in `reuse` when only
  /// the caller holds it and the shape fits (else new storage, uninitialized).
  static batch start_batch(std::int64_t epoch, std::int64_t index, std::int64_t count,
                           const shape_t& sample, tensor reuse);
  /// make() for a streamed dataset (record_batches.cpp).
  batch make_from_records(std::int64_t epoch, std::int64_t index, tensor reuse) const;
  /// Writes one augmented, normalized example ([C, H, W] floats) to `out`.
  void fill_example(const std::uint8_t* pixels, std::int64_t epoch, std::int64_t position,
                    float* out) const;

  std::shared_ptr<const dataset> data_;
  batch_source_options options_;
  std::int64_t samples_ = 0;
  std::int64_t batches_ = 0;
  /// Per channel, 256 entries: pixel byte -> normalized value.
  std::vector<float> normalized_;
  /// Shared by copies of this source, which compute the same orders; has its own mutex.
  std::shared_ptr<epoch_order_cache> order_cache_;
};

} // namespace troupe
