// How model parameters become the keys that parameter shards own, and how a compute actor
// bundles those keys into pushes. Shared by the training session (which spawns the shards and
// wires the compute actors) and `troupe check` / `troupe graph` (which label routes with each
// shard's keys and bytes), so both always agree.
//
//   1. Slicing: a parameter above `slice_bytes` is cut into near-equal contiguous slices (of
//      its flattened elements), each at most `slice_bytes`, so one big tensor (VGG's fc6: 400
//      MB) is spread over every shard instead of making one shard the hot spot, and so its
//      update pipelines slice by slice through aggregator and shard. With slice_bytes >= 64,
//      every slice starts on a 64-byte boundary and all but a parameter's last hold a multiple
//      of 16 floats, so frames send them without a copy.
//   2. Placement: keys go largest first onto the least loaded shard (ties to the lowest index),
//      so every shard holds a similar number of bytes.
//   3. Grouping: a compute actor pushes a group as soon as backward has produced all its keys.
//      Keys of at least `group_bytes` travel alone; smaller ones (biases, batch-norm scales) are
//      bundled per shard, in backward order, up to `group_bytes`, so a step is a handful of
//      messages rather than one per bias.
//
// Thread-safety: pure functions; key_view/place_key touch only the tensors passed in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

/// One key: a contiguous run of a parameter's flattened elements.
struct key_slice {
  std::size_t slot = 0;    ///< the parameter's slot in the model
  std::int64_t offset = 0; ///< first element
  std::int64_t length = 0; ///< elements
  bool whole = false;      ///< the slice is the entire parameter (kept in its own shape)
};

/// Keys that one push carries to one shard.
struct push_group {
  std::size_t shard = 0;         ///< index into key_plan::shards
  std::vector<std::size_t> keys; ///< indices into that shard's keys, ascending
  std::int64_t elements = 0;     ///< total elements pushed
};

struct key_plan_options {
  /// The largest slice_bytes / group_bytes configs and flags accept (1 TiB): exact in the
  /// config parser's doubles and far inside int64.
  static constexpr std::int64_t max_bytes = std::int64_t{1} << 40;
  std::int64_t slice_bytes = 4 << 20;  ///< larger parameters are cut into slices of at most this
  std::int64_t group_bytes = 64 << 10; ///< smaller keys are bundled into pushes of up to this
};

/// Fields in declaration order, for CAF's serializers and value_hash.hpp (no CAF here).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, key_plan_options& x) {
  return f(x.slice_bytes, x.group_bytes);
}

struct key_plan {
  std::vector<std::vector<key_slice>> shards; ///< each shard's keys, in the shard's order
  std::vector<push_group> groups;             ///< in the order backward completes them
};

/// The plan for parameters of `sizes` elements (float32) over `shards` shards. Shards that
/// would be empty are dropped. Deterministic. Throws std::invalid_argument if shards < 1,
/// slice_bytes < 4, group_bytes < 0 or a size is not positive.
key_plan plan_keys(const std::vector<std::int64_t>& sizes, int shards,
                   const key_plan_options& options = {});

/// The forward work each of `groups` carries: a key carries its slot's `slot_work` in proportion
/// to its elements among all of that slot's keys in `groups` (a whole key all of it). Not
/// normalized. Shared by the compute stand-in's timing and the push order's light layers, so
/// both price a group alike. Expects valid wiring (callers check it and name what is wrong):
/// an index out of range throws std::out_of_range.
std::vector<double> group_work(const std::vector<double>& slot_work,
                               const std::vector<std::vector<key_slice>>& shard_keys,
                               const std::vector<push_group>& groups);

/// The key's part of a parameter-shaped tensor (value or gradient): the tensor itself for a
/// whole key, a flat view of its range for a slice. Shares storage; copies nothing.
tensor key_view(const tensor& parameter, const key_slice& key);

/// Puts a key's values into a parameter-shaped tensor: a whole key replaces the handle, a slice
/// is copied into its range (into a private copy first if another handle shares `parameter`).
/// Throws std::invalid_argument, naming the key and both sizes and leaving `parameter`
/// untouched, unless `values` holds key.length elements and the key's range lies inside
/// `parameter`.
void place_key(tensor& parameter, const key_slice& key, tensor values);

/// "fc6.weight" for a whole key, "fc6.weight[0:1048576]" for a slice (element range).
std::string key_name(const std::string& parameter, const key_slice& key);

} // namespace troupe
