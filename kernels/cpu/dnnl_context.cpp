// The shared oneDNN engine, per-thread streams and scratch arenas, and the staging helpers the
// ops use to move between plain NCHW and oneDNN's preferred layouts.
#include "kernels/cpu/dnnl_context.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

namespace troupe::cpu {

namespace {

constexpr std::size_t arena_alignment = 64;

std::size_t round_up(std::size_t bytes) {
  return (bytes + arena_alignment - 1) / arena_alignment * arena_alignment;
}

struct arena {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ~arena() { std::free(data); }
};

} // namespace

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

memory::dims to_dims(const shape_t& shape) {
  return memory::dims(shape.begin(), shape.end());
}

memory::desc plain_desc(const memory::dims& dims, memory::format_tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::uint8_t* scratch_arena(std::size_t bytes) {
  thread_local arena a;
  if (bytes > a.size) {
    // Grow geometrically so a model's first step settles the size after a few calls.
    std::size_t size = round_up(std::max(bytes, a.size + a.size / 2));
    void* fresh = std::aligned_alloc(arena_alignment, size);
    if (fresh == nullptr)
      throw std::bad_alloc();
    std::free(a.data);
    a.data = static_cast<std::uint8_t*>(fresh);
    a.size = size;
  }
  return a.data;
}

std::size_t arena_plan::add(std::size_t bytes) {
  std::size_t offset = total_;
  total_ += round_up(bytes);
  return offset;
}

staged_arg::staged_arg(const memory::desc& user, const memory::desc& inner, role r, bool persistent,
                       arena_plan& plan)
    : persistent_(persistent) {
  user_ = memory(user, engine(), DNNL_MEMORY_NONE);
  if (user == inner)
    return;
  if (persistent) {
    inner_ = memory(inner, engine());
  } else {
    inner_ = memory(inner, engine(), DNNL_MEMORY_NONE);
    arena_offset_ = plan.add(inner.get_size());
  }
  auto pd = r == role::input ? dnnl::reorder::primitive_desc(user_, inner_)
                             : dnnl::reorder::primitive_desc(inner_, user_);
  reorder_ = std::make_unique<dnnl::reorder>(pd);
}

void staged_arg::bind_arena(std::uint8_t* base) {
  if (!reorders() || persistent_ || base == bound_arena_)
    return;
  inner_.set_data_handle(base + arena_offset_);
  bound_arena_ = base;
}

void staged_arg::make_persistent() {
  if (!reorders() || persistent_)
    return;
  std::size_t bytes = round_up(inner_.get_desc().get_size());
  void* raw = std::aligned_alloc(arena_alignment, std::max(bytes, arena_alignment));
  if (raw == nullptr)
    throw std::bad_alloc();
  owned_ = std::shared_ptr<void>(raw, [](void* p) { std::free(p); });
  inner_.set_data_handle(raw);
  persistent_ = true;
}

void staged_arg::bind_user(const float* data) {
  void* p = const_cast<float*>(data);
  if (p == bound_user_)
    return;
  user_.set_data_handle(p);
  bound_user_ = p;
}

void staged_arg::load(dnnl::stream& s) {
  if (reorders())
    reorder_->execute(s, user_, inner_);
}

void staged_arg::store(dnnl::stream& s) {
  if (reorders())
    reorder_->execute(s, inner_, user_);
}

scratchpad_arg::scratchpad_arg(const memory::desc& desc, arena_plan& plan) {
  if (desc.get_size() == 0)
    return;
  memory_ = memory(desc, engine(), DNNL_MEMORY_NONE);
  arena_offset_ = plan.add(desc.get_size());
}

void scratchpad_arg::bind_arena(std::uint8_t* base) {
  if (!memory_ || base == bound_arena_)
    return;
  memory_.set_data_handle(base + arena_offset_);
  bound_arena_ = base;
}

void scratchpad_arg::add_to(dnnl_args& args) const {
  if (memory_)
    args[DNNL_ARG_SCRATCHPAD] = memory_;
}

memory unbound_memory(const memory::desc& desc) {
  return memory(desc, engine(), DNNL_MEMORY_NONE);
}

void bind(const memory& m, const void* data) {
  m.set_data_handle(const_cast<void*>(data));
}

} // namespace troupe::cpu
