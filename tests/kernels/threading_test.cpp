// The compute-thread cap: it is reported back, rejects nonsense, and ops still give the same
// results at 1 thread as at 2.
#include <catch2/catch.hpp>

#include <troupe/kernels/conv2d.hpp>
#include <troupe/kernels/elementwise.hpp>
#include <troupe/kernels/threading.hpp>
#include "test_util.hpp"

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
