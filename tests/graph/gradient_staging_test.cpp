// gradient_staging on host tensors: read in place, a parameter's gradient is its own `grad`;
// staged (as for a replica on a GPU), each gradient_ready copies the gradient into the slot's
// host buffer, which is reused while no one else holds it and replaced while a reader (a push
// in flight) does, so that reader keeps the values it was given.
#include <catch2/catch.hpp>

#include <algorithm>

#include <troupe/graph/gradient_staging.hpp>
#include <troupe/graph/zoo.hpp>

using namespace troupe;

namespace {

struct two_parameters {
  parameter weight{"fc.weight", tensor({2, 3}), tensor({2, 3})};
  parameter bias{"fc.bias", tensor({3}), tensor({3})};

  two_parameters() {
    set(weight.grad, 1.0f);
    set(bias.grad, 10.0f);
  }
  std::vector<parameter*> all() { return {&weight, &bias}; }

  // Element i of `t` becomes first + i.
  static void set(tensor& t, float first) {
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.data()[i] = first + static_cast<float>(i);
  }
};

bool same_values(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.numel(), b.data());
}

} // namespace

TEST_CASE("gradients read in place are the parameters' own", "[graph][gradient_staging]") {
  two_parameters p;
  gradient_staging staging(p.all(), false);
  CHECK_FALSE(staging.staged());
  staging.gradient_ready(0);
  CHECK(staging.host_gradient(0).data() == p.weight.grad.data());
  CHECK(staging.host_gradient(1).data() == p.bias.grad.data());
  CHECK_THROWS_AS(staging.host_gradient(2), std::out_of_range);
}

TEST_CASE("a host replica's gradients are read in place", "[graph][gradient_staging]") {
  model_spec spec;
  spec.network = "mlp";
  auto replica = build_model(spec);
  gradient_staging staging(*replica);
  CHECK_FALSE(staging.staged());
  auto* first = replica->parameters().front();
  CHECK(&staging.host_gradient(0) == &first->grad);
}

TEST_CASE("a staged gradient is copied once final into a buffer of its own",
          "[graph][gradient_staging]") {
  two_parameters p;
  gradient_staging staging(p.all(), true);
  CHECK(staging.staged());
  CHECK(staging.host_gradient(0).numel() == 0); // nothing final yet
  staging.gradient_ready(0);
  const auto& host = staging.host_gradient(0);
  REQUIRE(same_values(host, p.weight.grad));
  CHECK(host.data() != p.weight.grad.data());
  CHECK(staging.host_gradient(1).numel() == 0); // only the slot made final
  // backward goes on writing the gradient: the staged copy stays what it was
  two_parameters::set(p.weight.grad, 100.0f);
  CHECK(staging.host_gradient(0).data()[0] == 1.0f);
  staging.gradient_ready(7); // a slot past the parameters: nothing
  CHECK(staging.host_gradient(1).numel() == 0);
}

TEST_CASE("a staged buffer is reused unless a reader still holds it", "[graph][gradient_staging]") {
  two_parameters p;
  gradient_staging staging(p.all(), true);
  staging.gradient_ready(1);
  const float* first = staging.host_gradient(1).data();
  two_parameters::set(p.bias.grad, 20.0f);
  staging.gradient_ready(1); // no one else holds the buffer: the same storage, new values
  CHECK(staging.host_gradient(1).data() == first);
  CHECK(same_values(staging.host_gradient(1), p.bias.grad));
  tensor in_flight = staging.host_gradient(1); // a push of this step still holds it
  two_parameters::set(p.bias.grad, 30.0f);
  staging.gradient_ready(1);
  CHECK(staging.host_gradient(1).data() != in_flight.data());
  CHECK(same_values(staging.host_gradient(1), p.bias.grad));
  CHECK(in_flight.data()[0] == 20.0f); // the reader keeps the values it was given
}
