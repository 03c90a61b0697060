// The receive pool: a buffer comes back when its last handle goes and is handed out again for
// the same size; the pool keeps no more idle bytes than its cap; buffers do not keep their
// pool alive.
#include <catch2/catch.hpp>

#include <memory>

#include "cluster/receive_pool.hpp"

using namespace troupe;

TEST_CASE("buffers are reused by size once their last handle is gone", "[cluster][pool]") {
  auto pool = std::make_shared<receive_pool>(1 << 20);
  auto first = pool->acquire(4096);
  REQUIRE(first->size() == 4096);
  const char* storage = first->data();
  auto view = first; // a tensor view would hold it like this
  first.reset();
  CHECK(pool->idle_bytes() == 0); // still held
  view.reset();
  CHECK(pool->idle_bytes() == 4096);
  auto again = pool->acquire(4096);
  CHECK(again->data() == storage);
  CHECK(pool->idle_bytes() == 0);
  auto other = pool->acquire(8192); // another size: a new buffer
  CHECK(other->size() == 8192);
  CHECK(other->data() != storage);
}

TEST_CASE("the pool keeps at most its cap of idle bytes", "[cluster][pool]") {
  auto pool = std::make_shared<receive_pool>(10000);
  auto a = pool->acquire(6000), b = pool->acquire(6000);
  a.reset();
  b.reset(); // would make 12000: freed instead
  CHECK(pool->idle_bytes() == 6000);
}

TEST_CASE("buffers do not keep their pool alive", "[cluster][pool]") {
  // A tensor may outlive the channel that received it: the channel's pool must still go with the
  // channel, and the buffer is then freed when its tensor goes.
  auto pool = std::make_shared<receive_pool>(1 << 20);
  std::weak_ptr<receive_pool> watch = pool;
  auto buffer = pool->acquire(100);
  pool.reset();
  CHECK(watch.expired());
  CHECK(buffer->size() == 100);
  buffer.reset();
}

TEST_CASE("of several idle buffers of a size, the one given back last comes first",
          "[cluster][pool]") {
  auto pool = std::make_shared<receive_pool>(1 << 20);
  auto a = pool->acquire(1024);
  auto b = pool->acquire(1024);
  auto c = pool->acquire(1024);
  REQUIRE(a->data() != b->data());
  const char* last_given_back = b->data();
  a.reset();
  c.reset();
  b.reset();
  CHECK(pool->idle_bytes() == 3 * 1024);
  auto again = pool->acquire(1024);
  CHECK(again->data() == last_given_back);
}
