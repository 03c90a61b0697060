// Learning-rate schedules: multi-step and step boundaries (inclusive), cosine (with restarts),
// poly and one-cycle end points and middles, linear warm-up into each policy, policy names,
// and validation messages naming the field.
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

  // cosine decays over the epochs after the warm-up, so the ramp reaches base itself
  o.policy = lr_policy::cosine;
  o.total_epochs = 20;
  o.final_lr = 0;
  o.warmup_begin_factor = 0;
  lr_schedule c(o);
  CHECK(c.at(0) == Approx(0.0).margin(1e-7));
  CHECK(c.at(2.5) == Approx(0.5));
  CHECK(c.at(5) == Approx(1.0));
  CHECK(c.at(12.5) == Approx(0.5)); // half way through the 15 epochs of decay
  CHECK(c.at(20) == Approx(0.0).margin(1e-7));
}

TEST_CASE("step schedule decays every period", "[lr_schedule]") {
  lr_schedule_options o;
  o.policy = lr_policy::step;
  o.base_lr = 0.5f;
  o.period = 2.5;
  o.factor = 0.5f;
  lr_schedule s(o);
  CHECK(s.at(0) == Approx(0.5));
  CHECK(s.at(2.499) == Approx(0.5));
  CHECK(s.at(2.5) == Approx(0.25));
  CHECK(s.at(7.5) == Approx(0.0625));
}

TEST_CASE("poly schedule follows its power to final_lr", "[lr_schedule]") {
  lr_schedule_options o;
  o.policy = lr_policy::poly;
  o.base_lr = 1.0f;
  o.final_lr = 0.1f;
  o.power = 2;
  o.total_epochs = 12;
  o.warmup_epochs = 2;
  lr_schedule s(o);
  CHECK(s.at(1) == Approx(0.5)); // warm-up ramps to base
  CHECK(s.at(2) == Approx(1.0));
  CHECK(s.at(7) == Approx(0.1 + 0.9 * 0.25)); // half way: (1 - 1/2)^2
  CHECK(s.at(12) == Approx(0.1));
  CHECK(s.at(30) == Approx(0.1));
}

TEST_CASE("cosine with restarts starts each longer cycle at base", "[lr_schedule]") {
  lr_schedule_options o;
  o.policy = lr_policy::cosine;
  o.base_lr = 1.0f;
  o.final_lr = 0;
  o.total_epochs = 70;
  o.cycle = 10;
  o.cycle_mult = 2; // cycles [0, 10), [10, 30), [30, 70)
  lr_schedule s(o);
  CHECK(s.at(0) == Approx(1.0));
  CHECK(s.at(5) == Approx(0.5));
  CHECK(s.at(9.999) == Approx(0.0).margin(1e-6));
  CHECK(s.at(10) == Approx(1.0));
  CHECK(s.at(20) == Approx(0.5));
  CHECK(s.at(30) == Approx(1.0));
  CHECK(s.at(50) == Approx(0.5));
}

TEST_CASE("one-cycle rises to base then anneals far below it", "[lr_schedule]") {
  lr_schedule_options o;
  o.policy = lr_policy::one_cycle;
  o.base_lr = 1.0f;
  o.total_epochs = 10;
  o.pct_start = 0.3;
  o.div_factor = 25;
  o.final_div_factor = 1e4;
  lr_schedule s(o);
  CHECK(s.at(0) == Approx(0.04));
  CHECK(s.at(1.5) == Approx((0.04 + 1.0) / 2));
  CHECK(s.at(3) == Approx(1.0));
  CHECK(s.at(6.5) == Approx((1.0 + 4e-6) / 2));
  CHECK(s.at(10) == Approx(4e-6));
}

TEST_CASE("lr policy names", "[lr_schedule]") {
  CHECK(parse_lr_policy("constant") == lr_policy::constant);
  CHECK(parse_lr_policy("multi-step") == lr_policy::multi_step);
  CHECK(parse_lr_policy("cosine") == lr_policy::cosine);
  CHECK(parse_lr_policy("step") == lr_policy::step);
  CHECK(parse_lr_policy("poly") == lr_policy::poly);
  CHECK(parse_lr_policy("one_cycle") == lr_policy::one_cycle);
  CHECK(parse_lr_policy("one-cycle") == lr_policy::one_cycle);
  for (auto p : {lr_policy::constant, lr_policy::multi_step, lr_policy::step, lr_policy::cosine,
                 lr_policy::poly, lr_policy::one_cycle})
    CHECK(parse_lr_policy(to_string(p)) == p);
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
  o.final_lr = 0;
  o.warmup_epochs = 10; // nothing left of the run to decay over
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("warmup_epochs"));
  o.warmup_epochs = 0;
  o.cycle_mult = 0.5;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("cycle_mult"));
  o = {};
  o.policy = lr_policy::step;
  o.period = 0;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("period"));
  o = {};
  o.policy = lr_policy::poly;
  o.total_epochs = 5;
  o.power = 0;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("power"));
  o = {};
  o.policy = lr_policy::one_cycle;
  o.pct_start = 1;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("pct_start"));
  o.pct_start = 0.3;
  o.div_factor = 0.5;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("div_factor"));
  o.div_factor = 25;
  o.warmup_epochs = 1;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("its warm-up"));
  o = {};
  o.warmup_epochs = -2;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("warmup_epochs"));
  o = {};
  o.warmup_begin_factor = -0.5f;
  REQUIRE_THROWS_WITH(lr_schedule(o), Catch::Contains("warmup_begin_factor"));
}
