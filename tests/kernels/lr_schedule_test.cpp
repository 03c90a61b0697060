// Learning-rate schedules: multi-step boundaries (inclusive), cosine end points and middle,
// linear warm-up into each policy, policy names, and validation messages naming the field.
#include <catch2/catch.hpp>

#include <cmath>

#include <troupe/kernels/lr_schedule.hpp>

using namespace troupe;

TEST_CASE("constant schedule", "[lr_schedule]") {
  lr_schedule s({});
  CHECK(s.at(0) == Approx(0.1f));
  CHECK(s.at(123.4) == Approx(0.1f));
}

TEST_CASE("multi-step schedule drops at each boundary", "[lr_schedule]") {
  lr_schedule_options o;
  o.policy = lr_policy::multi_step;
  o.base_lr = 0.4f;
  o.step_epochs = {30, 60, 80};
  o.factor = 0.1f;
  lr_schedule s(o);
  CHECK(s.at(0) == Approx(0.4));
  CHECK(s.at(29.999) == Approx(0.4));
  CHECK(s.at(30) == Approx(0.04)); // the boundary epoch already has the reduced rate
  CHECK(s.at(59.5) == Approx(0.04));
  CHECK(s.at(60) == Approx(0.004));
  CHECK(s.at(80) == Approx(0.0004));
  CHECK(s.at(500) == Approx(0.0004));
}

TEST_CASE("cosine schedule end points and middle", "[lr_schedule]") {
  lr_schedule_options o;
  o.policy = lr_policy::cosine;
  o.base_lr = 0.2f;
  o.final_lr = 0.002f;
  o.total_epochs = 90;
  lr_schedule s(o);
  CHECK(s.at(0) == Approx(0.2));
  CHECK(s.at(45) == Approx(0.101));
  CHECK(s.at(90) == Approx(0.002));
  CHECK(s.at(200) == Approx(0.002));
  CHECK(s.at(22.5) == Approx(0.002 + 0.198 * (1 + std::cos(M_PI / 4)) / 2));
}

TEST_CASE("warm-up ramps linearly into the schedule", "[lr_schedule]") {
  lr_schedule_options o;
  o.policy = lr_policy::multi_step;
  o.base_lr = 1.0f;
  o.step_epochs = {10};
  o.warmup_epochs = 5;
  o.warmup_begin_factor = 0.1f;
  lr_schedule s(o);
  CHECK(s.at(0) == Approx(0.1));
  CHECK(s.at(2.5) == Approx(0.55));
  CHECK(s.at(5) == Approx(1.0));
  CHECK(s.at(10) == Approx(0.1));

  o.policy = lr_policy::cosine;
  o.total_epochs = 20;
  o.final_lr = 0;
  o.warmup_begin_factor = 0;
  lr_schedule c(o);
  double at_end = (1 + std::cos(M_PI * 5 / 20)) / 2;
  CHECK(c.at(0) == Approx(0.0).margin(1e-7));
  CHECK(c.at(2.5) == Approx(at_end / 2));
  CHECK(c.at(5) == Approx(at_end));
}

TEST_CASE("lr policy names", "[lr_schedule]") {
  CHECK(parse_lr_policy("constant") == lr_policy::constant);
  CHECK(parse_lr_policy("multi-step") == lr_policy::multi_step);
  CHECK(parse_lr_policy("cosine") == lr_policy::cosine);
  REQUIRE_THROWS_WITH(parse_lr_policy("Cosine"), Catch::Contains("\"Cosine\""));
}

TEST_CASE("lr schedule validation names the field", "[lr_schedule][errors]") {
  lr_schedule_options o;
  o.base_lr = -1;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("base_lr"));
  o = {};
  o.policy = lr_policy::multi_step;
  o.step_epochs = {10, 5};
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("step_epochs"));
  o.step_epochs = {-1};
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("step_epochs"));
  o.step_epochs = {10};
  o.factor = 0;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("factor"));
  o = {};
  o.policy = lr_policy::cosine;
  o.total_epochs = 0;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("total_epochs"));
  o.total_epochs = 10;
  o.final_lr = -0.1f;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("final_lr"));
  o = {};
  o.warmup_epochs = -2;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("warmup_epochs"));
  o = {};
  o.warmup_begin_factor = -0.5f;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("warmup_begin_factor"));
}
