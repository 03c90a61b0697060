// The compute-thread cap: it is reported back, rejects nonsense, and ops still give the same
// results at 1 thread as at 2.
#include <catch2/catch.hpp>

#include "test_util.hpp"
#include <troupe/kernels/conv2d.hpp>
#include <troupe/kernels/elementwise.hpp>
#include <troupe/kernels/threading.hpp>

#include <pthread.h>
#include <sched.h>

#include <thread>
#include <vector>

using namespace troupe;
using namespace troupe::test;

TEST_CASE("set_compute_threads caps and reports", "[threading]") {
  int before = compute_threads();
  REQUIRE(before >= 1);
  set_compute_threads(1);
  CHECK(compute_threads() == 1);
  set_compute_threads(2);
  CHECK(compute_threads() == 2);
  REQUIRE_THROWS_WITH(set_compute_threads(0), Catch::Contains("0"));
  set_compute_threads(before);
}

TEST_CASE("ops agree at one and two threads", "[threading]") {
  int before = compute_threads();
  shape_t xs{4, 16, 12, 12}, ws{16, 16, 3, 3};
  tensor x = random_tensor(xs, 1), w = random_tensor(ws, 2);
  auto run = [&](int threads) {
    set_compute_threads(threads);
    conv2d_op op({1, 1, 1, 1, 1});
    tensor y(op.output_shape(xs, ws));
    op.forward(x, w, nullptr, y);
    relu_forward(y, y);
    return y;
  };
  tensor one = run(1), two = run(2);
  set_compute_threads(before);
  require_close(one, two, 1e-5, 1e-6);
}

namespace {

// The CPUs the calling thread may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::pthread_getaffinity_np(::pthread_self(), sizeof set, &set) != 0)
    return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set))
      cpus.push_back(cpu);
  return cpus;
}

} // namespace

TEST_CASE("bind_this_thread binds the calling thread, and the threads it starts, to its CPUs") {
  std::vector<int> in_thread, in_child, before, after_refusals;
  bool bound = false, refused_empty = true, refused_bad = true;
  // On a thread of its own (the test's thread keeps its CPUs); Catch's checks stay on this one.
  std::thread([&] {
    before = allowed_cpus();
    if (before.empty())
      return;
    refused_empty = !bind_this_thread({});
    refused_bad = !bind_this_thread({-1});
    after_refusals = allowed_cpus();
    bound = bind_this_thread({before.back()});
    in_thread = allowed_cpus();
    std::thread([&] { in_child = allowed_cpus(); }).join();
  }).join();
  REQUIRE_FALSE(before.empty());
  CHECK(refused_empty);
  CHECK(refused_bad);
  CHECK(after_refusals == before); // a refused binding binds nothing
  REQUIRE(bound);
  REQUIRE(in_thread.size() == 1);
  CHECK(in_thread.front() == before.back());
  CHECK(in_child == in_thread);
  CHECK(allowed_cpus().size() >= before.size());
}
