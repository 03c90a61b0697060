// Storage is allocated 64-byte aligned so oneDNN and AVX-512 loads never straddle lines.
#include <troupe/kernels/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <stdexcept>

#include "kernels/device_memory.hpp"

namespace troupe {

namespace {

constexpr std::size_t alignment = 64;

std::shared_ptr<float> allocate_floats(std::int64_t count, bool zero) {
  std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  bytes = (bytes + alignment - 1) / alignment * alignment;
  void* raw = std::aligned_alloc(alignment, std::max(bytes, alignment));
  if (raw == nullptr)
    throw std::bad_alloc();
  if (zero)
    std::memset(raw, 0, bytes);
  return std::shared_ptr<float>(static_cast<float*>(raw), [](float* p) { std::free(p); });
}

} // namespace

std::int64_t shape_numel(const shape_t& shape) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0)
      throw std::invalid_argument("negative extent in shape " + shape_string(shape));
    n *= d;
  }
  return n;
}

std::string shape_string(const shape_t& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i)
    out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

std::size_t dtype_size(dtype type) {
  switch (type) {
  case dtype::f32:
    return 4;
  case dtype::f16:
  case dtype::bf16:
    return 2;
  }
  return 4;
}

tensor::tensor(shape_t shape) : tensor(std::move(shape), true) {}

tensor::tensor(shape_t shape, bool zero) : shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  if (numel_ > 0)
    storage_ = allocate_floats(numel_, zero);
}

tensor tensor::uninitialized(shape_t shape) {
  return tensor(std::move(shape), false);
}

tensor tensor::from_values(shape_t shape, const std::vector<float>& values) {
  tensor t(std::move(shape), false);
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    throw std::invalid_argument("tensor::from_values: " + std::to_string(values.size())
                                + " values for shape " + shape_string(t.shape()));
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

std::int64_t tensor::dim(std::size_t i) const {
  if (i >= shape_.size())
    throw std::out_of_range("tensor::dim(" + std::to_string(i) + ") of shape "
                            + shape_string(shape_));
  return shape_[i];
}

void tensor::require_f32_cpu() const {
  if (type_ != dtype::f32 || device_ != device_kind::cpu)
    throw std::logic_error("tensor: float32 CPU access to a tensor of another type or device");
}

float* tensor::data() {
  require_f32_cpu();
  return storage_.get();
}

const float* tensor::data() const {
  require_f32_cpu();
  return storage_.get();
}

tensor tensor::on_gpu(shape_t shape, int device) {
  if (device < 0)
    throw std::invalid_argument("tensor::on_gpu: GPU index " + std::to_string(device));
  tensor t;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.device_ = device_kind::cuda;
  t.device_index_ = device;
  if (t.numel_ > 0)
    t.storage_ = device_memory::allocate(device, t.numel_, true);
  return t;
}

float* tensor::device_data() {
  if (type_ != dtype::f32)
    throw std::logic_error("tensor: float32 access to a tensor of another type");
  return storage_.get();
}

const float* tensor::device_data() const {
  return const_cast<tensor*>(this)->device_data();
}

tensor tensor::to_host() const {
  if (device_ == device_kind::cpu)
    return *this;
  tensor host(shape_, false);
  host.copy_from(*this);
  return host;
}

tensor tensor::to_gpu(int device) const {
  if (device_ == device_kind::cuda && device_index_ == device)
    return *this;
  tensor there = on_gpu(shape_, device);
  there.copy_from(*this);
  return there;
}

tensor tensor::clone() const {
  if (device_ == device_kind::cuda) {
    tensor copy = on_gpu(shape_, device_index_);
    copy.copy_from(*this);
    return copy;
  }
  tensor copy(shape_, false);
  if (numel_ > 0)
    std::memcpy(copy.storage_.get(), storage_.get(), bytes());
  return copy;
}

tensor tensor::reshaped(shape_t shape) const {
  if (shape_numel(shape) != numel_)
    throw std::invalid_argument("tensor::reshaped: " + shape_string(shape_) + " to "
                                + shape_string(shape) + " changes the element count");
  tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

tensor tensor::view_of(std::shared_ptr<void> owner, float* first, shape_t shape) {
  if (!owner)
    throw std::invalid_argument("tensor::view_of: no owner for the memory");
  if (reinterpret_cast<std::uintptr_t>(first) % alignof(float) != 0)
    throw std::invalid_argument("tensor::view_of: the memory is not aligned for float");
  tensor view;
  view.numel_ = shape_numel(shape);
  view.shape_ = std::move(shape);
  // The aliasing constructor: the owner's reference count, the floats' address.
  view.storage_ = std::shared_ptr<float>(std::move(owner), first);
  return view;
}

tensor tensor::flat_slice(std::int64_t offset, std::int64_t length) const {
  if (offset < 0 || length < 0 || offset + length > numel_)
    throw std::out_of_range("tensor::flat_slice: elements [" + std::to_string(offset) + ", "
                            + std::to_string(offset + length) + ") of a tensor of "
                            + std::to_string(numel_));
  if (type_ != dtype::f32)
    throw std::logic_error("tensor::flat_slice: float32 only");
  tensor view = *this;
  // The aliasing constructor: same control block (one reference count), offset pointer (a
  // device address works the same: nothing is read here).
  view.storage_ = std::shared_ptr<float>(storage_, storage_.get() + offset);
  view.shape_ = {length};
  view.numel_ = length;
  return view;
}

void tensor::fill(float value) {
  if (device_ == device_kind::cuda)
    return device_memory::fill(device_data(), numel_, value, device_index_);
  std::fill_n(data(), numel_, value);
}

void tensor::copy_from(const tensor& src) {
  if (src.numel() != numel_)
    throw std::invalid_argument("tensor::copy_from: " + shape_string(src.shape()) + " into "
                                + shape_string(shape_));
  if (numel_ == 0)
    return;
  if (device_ == device_kind::cpu && src.device() == device_kind::cpu)
    std::memcpy(data(), src.data(), bytes());
  else
    device_memory::copy(device_data(), device_, src.device_data(), src.device(), bytes(),
                        device_ == device_kind::cuda ? device_index_ : src.device_index());
}

} // namespace troupe
