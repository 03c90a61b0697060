// Internal plumbing shared by the oneDNN-backed CPU ops.
//
// - One engine for the process and one stream per thread (CPU streams are cheap handles, and a
//   per-thread one keeps concurrent actors from sharing one).
// - Primitives are created with a user-managed scratchpad: oneDNN's default library scratchpad
//   is a hidden per-creating-thread buffer that two actors on two threads could both write.
// - `staged_arg` joins a caller's plain NCHW buffer to a primitive argument. When the primitive
//   wants another layout it owns a reorder and an inner buffer; otherwise it points the
//   primitive straight at the caller's memory, with no copy.
// - `scratch_arena` is a per-thread buffer for what lives only during one call (blocked copies
//   of activations, scratchpads), so caching many shapes does not multiply activation memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include <troupe/kernels/tensor.hpp>

namespace troupe::cpu {

using dnnl::memory;
using dnnl_args = std::unordered_map<int, memory>;

const dnnl::engine& engine();
/// This thread's stream on the shared engine.
dnnl::stream& stream();

memory::dims to_dims(const shape_t& shape);
memory::desc plain_desc(const memory::dims& dims, memory::format_tag tag);

/// Attributes asking for a user-provided scratchpad.
dnnl::primitive_attr user_scratchpad_attr();

/// A per-thread buffer of at least `bytes`, 64-byte aligned. Its contents do not survive the
/// next call; the pointer changes only when it grows.
std::uint8_t* scratch_arena(std::size_t bytes);

/// Byte offsets of the transient buffers of one op call inside the scratch arena.
class arena_plan {
public:
  /// Reserves `bytes` (rounded up to 64) and returns the offset.
  std::size_t add(std::size_t bytes);
  std::size_t total() const { return total_; }

private:
  std::size_t total_ = 0;
};

/// One primitive argument: a plain caller buffer and the layout the primitive wants.
class staged_arg {
public:
  enum class role { input, output };

  staged_arg() = default;
  /// Owns its inner buffer when the layouts differ and `persistent` is set; otherwise the inner
  /// buffer lives in the scratch arena at `arena_offset` (see `bind_arena`).
  staged_arg(const memory::desc& user, const memory::desc& inner, role r, bool persistent,
             arena_plan& plan);

  bool reorders() const { return reorder_ != nullptr; }
  /// The memory to hand to the primitive.
  const memory& inner() const { return reorders() ? inner_ : user_; }
  /// Points the inner buffer into the arena at `base` (no-op for persistent or direct args).
  void bind_arena(std::uint8_t* base);
  /// Moves the inner buffer out of the arena into one of its own, so its contents survive
  /// other ops' calls (no-op when already persistent or when no reorder is needed).
  void make_persistent();
  bool persistent() const { return persistent_; }
  /// Points the plain side at the caller's buffer.
  void bind_user(const float* data);
  /// For inputs: reorders the caller's buffer into the inner layout (if they differ).
  void load(dnnl::stream& s);
  /// For outputs: reorders the inner buffer back into the caller's (if they differ).
  void store(dnnl::stream& s);

private:
  memory user_;
  memory inner_;
  std::unique_ptr<dnnl::reorder> reorder_;
  std::shared_ptr<void> owned_; // the inner buffer after make_persistent
  bool persistent_ = false;
  std::size_t arena_offset_ = 0;
  void* bound_user_ = nullptr;
  std::uint8_t* bound_arena_ = nullptr;
};

/// A scratchpad memory for `pd` placed in the arena (or an empty memory when none is needed).
class scratchpad_arg {
public:
  scratchpad_arg() = default;
  scratchpad_arg(const memory::desc& desc, arena_plan& plan);
  void bind_arena(std::uint8_t* base);
  void add_to(dnnl_args& args) const;

private:
  memory memory_;
  std::size_t arena_offset_ = 0;
  std::uint8_t* bound_arena_ = nullptr;
};

/// A memory whose handle is rebound to caller data per call (plain layouts only).
memory unbound_memory(const memory::desc& desc);
void bind(const memory& m, const void* data);

} // namespace troupe::cpu
