// stand_in_timing: a group's share of a stand-in's step is its keys' share of the forward work
// (a slice carrying its part of the slot), forward runs the groups in reverse, the step ends
// exactly on time, and bad wiring is refused naming the group.
#include <catch2/catch.hpp>

#include <chrono>
#include <limits>

#include <troupe/actors/stand_in_timing.hpp>
#include <troupe/graph/zoo.hpp>

using namespace troupe;
using std::chrono::milliseconds;

namespace {

// Slot 0 (work 6) whole on route 0; slot 1 (work 2) cut into slices of 30 and 10 elements, one
// on each route; slot 2 (work 0) whole on route 1. Groups in backward order: slot 2 with the
// 10-element slice, the 30-element slice, slot 0.
struct three_slots {
  std::vector<double> work{6.0, 2.0, 0.0};
  std::vector<std::vector<key_slice>> routes{
    {key_slice{0, 0, 4, true}, key_slice{1, 0, 30, false}},
    {key_slice{1, 30, 10, false}, key_slice{2, 0, 5, true}}};
  std::vector<push_group> groups{push_group{1, {0, 1}, 15}, push_group{0, {1}, 30},
                                 push_group{0, {0}, 4}};
};

} // namespace

TEST_CASE("stand-in timing gives each group its keys' share of the work", "[actors][stand_in]") {
  three_slots t;
  stand_in_timing timing(t.work, t.routes, t.groups);
  REQUIRE(timing.groups() == 3);
  CHECK(timing.share(0) == Approx(0.5 / 8)); // a quarter of slot 1's 2, and slot 2's nothing
  CHECK(timing.share(1) == Approx(1.5 / 8));
  CHECK(timing.share(2) == Approx(6.0 / 8));
  // backward: groups in order; forward: in reverse (segment 0 is group 2)
  const auto step = milliseconds(800);
  CHECK(timing.backward_due(step, 0) == milliseconds(50));
  CHECK(timing.backward_due(step, 1) == milliseconds(200));
  CHECK(timing.backward_due(step, 2) == step);
  CHECK(timing.forward_end(step, 0) == milliseconds(600));
  CHECK(timing.forward_end(step, 1) == milliseconds(750));
  CHECK(timing.forward_end(step, 2) == step);
}

TEST_CASE("stand-in timing ends exactly on time and shares equally without work",
          "[actors][stand_in]") {
  three_slots t;
  const caf::timespan odd{999'999'937};
  stand_in_timing timing(t.work, t.routes, t.groups);
  CHECK(timing.backward_due(odd, 2) == odd);
  CHECK(timing.forward_end(odd, 2) == odd);
  stand_in_timing idle({0.0, 0.0, 0.0}, t.routes, t.groups);
  for (std::size_t g = 0; g < 3; ++g)
    CHECK(idle.share(g) == Approx(1.0 / 3));
  CHECK(idle.backward_due(milliseconds(300), 0) == milliseconds(100));
}

// ResNet-50 at 224: the last stage holds most of the bytes but a small part of the work, so
// spreading by work, not by group, shortens what the forward does after the last layers'
// weights are in.
TEST_CASE("stand-in timing of ResNet-50 gives the last layers less than their bytes",
          "[actors][stand_in]") {
  auto m = build_model(model_spec{"resnet", 50, {3, 224, 224}, 1000, 0});
  const auto& params = m->parameters();
  std::vector<key_slice> keys;
  std::vector<push_group> groups;
  for (std::size_t slot = 0; slot < params.size(); ++slot)
    keys.push_back(key_slice{slot, 0, params[slot]->value.numel(), true});
  for (std::size_t k = keys.size(); k-- > 0;)
    groups.push_back(push_group{0, {k}, keys[k].length});
  stand_in_timing timing(m->forward_work_by_slot(), {keys}, groups);
  REQUIRE(timing.groups() == params.size());
  // the groups backward completes first that hold a third of the bytes
  double bytes = 0, work = 0;
  std::size_t g = 0;
  for (; bytes < static_cast<double>(m->parameter_count()) / 3; ++g) {
    bytes += static_cast<double>(groups[g].elements);
    work += timing.share(g);
  }
  CHECK(g < groups.size() / 4);
  CHECK(work < 0.15);
  CHECK(work > 0.0);
}

TEST_CASE("stand-in timing refuses wiring it cannot price, naming the group",
          "[actors][stand_in]") {
  three_slots t;
  auto refused = [&](std::vector<double> work, std::vector<push_group> groups, const char* says) {
    CHECK_THROWS_WITH(stand_in_timing(work, t.routes, groups), Catch::Contains(says));
  };
  refused(t.work, {push_group{2, {0}, 4}}, "group 0 names route 2 of 2");
  refused(t.work, {push_group{0, {0}, 4}, push_group{1, {7}, 4}},
          "group 1 names key 7 of route 1, which has 2");
  refused({6.0, 2.0}, t.groups, "group 0 holds a key of slot 2 of 2");
  refused({6.0, -1.0, 0.0}, t.groups, "the work of slot 1 is -1");
  refused({6.0, std::numeric_limits<double>::quiet_NaN(), 0.0}, t.groups,
          "the work of slot 1 is nan");
}
