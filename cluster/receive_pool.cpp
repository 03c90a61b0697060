// See receive_pool.hpp.
#include "cluster/receive_pool.hpp"

#include <iterator>

namespace troupe {

std::shared_ptr<std::vector<char>> receive_pool::acquire(std::size_t size) {
  std::unique_ptr<std::vector<char>> buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The buffer given back last: its bytes are the likeliest still in cache (a shard that
    // consumed a gradient returns its buffer just before the next frame of that size lands).
    auto [first, last] = idle_.equal_range(size);
    if (first != last) {
      auto it = std::prev(last);
      buffer = std::move(it->second);
      idle_.erase(it);
      idle_bytes_ -= size;
    }
  }
  if (!buffer)
    buffer = std::make_unique<std::vector<char>>(size);
  // The deleter holds the pool weakly: a buffer outliving its channel is simply freed.
  std::weak_ptr<receive_pool> pool = weak_from_this();
  return std::shared_ptr<std::vector<char>>(buffer.release(), [pool](std::vector<char>* b) {
    if (auto alive = pool.lock())
      alive->give_back(b);
    else
      delete b;
  });
}

void receive_pool::give_back(std::vector<char>* buffer) {
  std::unique_ptr<std::vector<char>> owned(buffer);
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_bytes_ + owned->size() > max_bytes_)
    return; // freed
  idle_bytes_ += owned->size();
  const auto size = owned->size();
  idle_.emplace(size, std::move(owned));
}

unpacked_buffers unpacked_from(std::shared_ptr<receive_pool> pool) {
  return [pool = std::move(pool)](const shape_t& shape) {
    const auto numel = static_cast<std::size_t>(shape_numel(shape));
    if (numel == 0)
      return tensor::uninitialized(shape);
    auto buffer = pool->acquire(numel * sizeof(float));
    auto* first = reinterpret_cast<float*>(buffer->data());
    return tensor::view_of(std::move(buffer), first, shape);
  };
}

std::size_t receive_pool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_bytes_;
}

} // namespace troupe
