// A dense tensor: a shape plus a reference-counted, 64-byte aligned buffer.
//
// Copies of a `tensor` share storage (like a shared_ptr), which is what lets actors in one
// process pass weights and gradients by reference: a message carries the handle, never the
// bytes. `clone()` makes a deep copy. `unique()` tells whether any other handle still sees the
// buffer, so a writer can copy-on-write instead of racing a reader in another actor.
//
// Element types: float32 today; the enum leaves room for float16/bfloat16. A tensor lives on
// the CPU or on one GPU (`on_gpu`, `to_gpu`: device memory, in a CUDA build); kernels check
// type and device and refuse what they do not implement. Copies between host and device
// here (to_host, to_gpu, clone, copy_from) are explicit and synchronous.
//
// Thread-safety: handles may be copied across threads (the count is atomic); concurrent
// writes to the elements are the caller's business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

enum class dtype : std::uint8_t { f32, f16, bf16 };
enum class device_kind : std::uint8_t { cpu, cuda };

using shape_t = std::vector<std::int64_t>;

/// Product of the extents; 1 for a rank-0 shape.
std::int64_t shape_numel(const shape_t& shape);
/// "[128, 1, 28, 28]" for error messages and logs.
std::string shape_string(const shape_t& shape);
/// Bytes taken by one element of `type`.
std::size_t dtype_size(dtype type);

class tensor {
public:
  /// An empty tensor: rank 0, no storage, numel() == 0.
  tensor() = default;
  /// A zero-filled float32 CPU tensor.
  explicit tensor(shape_t shape);
  /// A float32 CPU tensor whose elements are left unset (cheaper when they are overwritten).
  static tensor uninitialized(shape_t shape);
  /// A float32 tensor holding a copy of `values`; throws if the sizes disagree.
  static tensor from_values(shape_t shape, const std::vector<float>& values);
  /// A float32 CPU tensor over `numel(shape)` floats at `first`, memory that `owner` keeps
  /// alive (e.g. a received network frame): no copy, and the owner lives as long as any
  /// handle. `first` must be 4-byte aligned; throws std::invalid_argument if it is not or if
  /// `owner` is null.
  static tensor view_of(std::shared_ptr<void> owner, float* first, shape_t shape);
  /// A zero-filled float32 tensor on GPU `device`; throws std::runtime_error in a build
  /// without CUDA, troupe::cuda's error naming the call (and, out of memory, what was asked
  /// and what is free) when the device cannot give it.
  static tensor on_gpu(shape_t shape, int device);

  const shape_t& shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  /// Extent of dimension `i`; throws std::out_of_range past the rank.
  std::int64_t dim(std::size_t i) const;
  std::int64_t numel() const { return numel_; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel_) * dtype_size(type_); }
  dtype type() const { return type_; }
  device_kind device() const { return device_; }
  /// The GPU's index for a tensor on a GPU; 0 on the CPU.
  int device_index() const { return device_index_; }
  bool empty() const { return numel_ == 0; }

  /// Element access for float32 CPU tensors; throws std::logic_error otherwise.
  float* data();
  const float* data() const;

  /// The float32 elements wherever they are (host or device address): what GPU ops take.
  /// Throws std::logic_error for another element type.
  float* device_data();
  const float* device_data() const;
  /// A copy on the CPU (itself when already there: no copy).
  tensor to_host() const;
  /// A copy on GPU `device` (itself when already there: no copy).
  tensor to_gpu(int device) const;

  /// A deep copy with its own storage, on the same device.
  tensor clone() const;
  /// A view of the same storage with another shape of equal numel; throws if they differ.
  tensor reshaped(shape_t shape) const;
  /// A 1-D view [length] of the flattened elements [offset, offset + length), sharing the
  /// storage (and its reference count, so unique() sees the view); throws if out of range.
  tensor flat_slice(std::int64_t offset, std::int64_t length) const;
  /// True when no other handle shares the storage (safe to write in place).
  bool unique() const { return storage_.use_count() <= 1; }
  bool shares_storage_with(const tensor& other) const {
    // Owner-based: a flat_slice of a tensor shares its storage though it points elsewhere.
    return storage_ && !storage_.owner_before(other.storage_)
           && !other.storage_.owner_before(storage_);
  }

  void fill(float value);
  /// Copies the elements of `src` (same numel; either may be on the CPU or a GPU) into this
  /// tensor's storage.
  void copy_from(const tensor& src);

private:
  tensor(shape_t shape, bool zero);
  void require_f32_cpu() const;

  std::shared_ptr<float> storage_;
  shape_t shape_;
  std::int64_t numel_ = 0;
  dtype type_ = dtype::f32;
  device_kind device_ = device_kind::cpu;
  int device_index_ = 0;
};

/// The shape, then the elements as a std::vector<float> (float32 CPU tensors only: data()
/// throws otherwise). Loading gives `x` fresh storage of its own; a default (empty) tensor
/// comes back empty, a rank-0 scalar as a scalar; an element count that disagrees with the
/// shape throws std::invalid_argument (from tensor::from_values). A loading inspector's
/// result_type must be true on failure, as CAF's `error` is.
///
/// Cost: saving copies the elements once into that vector, and CAF 0.17 then writes a
/// vector<float> element by element (~70 MiB/s, see notes/toolchain.md) where a byte buffer
/// would be one memcpy. Fine for reports and final weights; per-step tensors stay local
/// handles or travel as Cap'n Proto (actors/messages.hpp).
template <class Inspector> typename Inspector::result_type inspect(Inspector& f, tensor& x) {
  if constexpr (Inspector::reads_state) {
    const tensor host = x.to_host(); // a GPU tensor is saved as its values
    const float* first = host.data();
    std::vector<float> values(first, first + x.numel());
    return f(x.shape(), values);
  } else {
    shape_t shape;
    std::vector<float> values;
    auto result = f(shape, values);
    if (result)
      return result;
    if (shape.empty() && values.empty())
      x = tensor();
    else
      x = tensor::from_values(std::move(shape), values);
    return result;
  }
}

} // namespace troupe
