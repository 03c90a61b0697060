// The key plan: slices of big parameters, byte-balanced placement, and push groups in
// backward order that cover every key exactly once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>

#include <troupe/graph/config/key_assignment.hpp>

namespace troupe {
namespace {

// Elements of each slot covered by the plan, and how often each key is in a group.
void check_cover(const key_plan& plan, const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> covered(sizes.size(), 0);
  for (const auto& keys : plan.shards)
    for (const auto& k : keys)
      covered[k.slot] += k.length;
  CHECK(covered == sizes);
  std::map<std::pair<std::size_t, std::size_t>, int> grouped;
  for (const auto& g : plan.groups)
    for (auto k : g.keys)
      ++grouped[{g.shard, k}];
  std::size_t keys = 0;
  for (const auto& s : plan.shards)
    keys += s.size();
  CHECK(grouped.size() == keys);
  for (auto& [key, count] : grouped)
    CHECK(count == 1);
}

TEST_CASE("plan_keys balances whole parameters over shards, ties to the lowest") {
  const std::vector<std::int64_t> sizes{100, 10, 60, 50, 5};
  auto plan = plan_keys(sizes, 2, key_plan_options{1 << 20, 0});
  REQUIRE(plan.shards.size() == 2);
  // 100 -> A, 60 -> B, 50 -> B (110), 10 -> A (110), 5 -> A (tie goes to the first);
  // each shard lists its keys in backward order (descending slot).
  std::vector<std::size_t> a, b;
  for (auto& k : plan.shards[0])
    a.push_back(k.slot);
  for (auto& k : plan.shards[1])
    b.push_back(k.slot);
  CHECK(a == std::vector<std::size_t>{4, 1, 0});
  CHECK(b == std::vector<std::size_t>{3, 2});
  CHECK(plan.shards[0][0].whole);
  CHECK(plan.groups.size() == 5); // group_bytes 0: every key alone
  check_cover(plan, sizes);
  CHECK(plan_keys({1, 2}, 5).shards.size() == 2); // no empty shards
}

TEST_CASE("plan_keys cuts big parameters into near-equal slices spread over every shard") {
  const std::vector<std::int64_t> sizes{1000, 7};
  auto plan = plan_keys(sizes, 3, key_plan_options{4 * 300, 0}); // at most 300 elements
  std::vector<std::int64_t> lengths;
  for (auto& keys : plan.shards)
    for (auto& k : keys)
      if (k.slot == 0) {
        CHECK_FALSE(k.whole);
        lengths.push_back(k.length);
      }
  std::sort(lengths.begin(), lengths.end());
  // 300 elements round down to 288 (18 units of 16): 4 slices of 62 whole units and 8 over.
  CHECK(lengths == std::vector<std::int64_t>{240, 248, 256, 256});
  REQUIRE(plan.shards.size() == 3);
  for (auto& keys : plan.shards)
    CHECK_FALSE(keys.empty());
  check_cover(plan, sizes);
  CHECK(key_name("fc6.weight", key_slice{0, 250, 250, false}) == "fc6.weight[250:500]");
  CHECK(key_name("fc6.weight", key_slice{0, 0, 1000, true}) == "fc6.weight");
}

TEST_CASE("plan_keys cuts slices on 64-byte boundaries, each within the bound and none empty") {
  // Every slice starts on a multiple of 16 floats and all but a parameter's last hold whole
  // multiples of them (so frames send them without copying); the bound and near-equal sizes
  // hold for sizes that do and do not divide, and for bounds that are not multiples of 16.
  for (std::int64_t limit : {16, 17, 100, 300, 4096, 131072 + 5}) {
    for (std::int64_t n : {limit + 1, 2 * limit - 1, 2 * limit, 3 * limit + 7, 10 * limit + 15,
                           std::int64_t{2359296}}) {
      const auto plan = plan_keys({n}, 3, key_plan_options{4 * limit, 0});
      std::vector<key_slice> slices;
      for (auto& keys : plan.shards)
        slices.insert(slices.end(), keys.begin(), keys.end());
      std::sort(slices.begin(), slices.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
      REQUIRE(slices.size() >= 2);
      std::int64_t offset = 0, shortest = n, longest = 0;
      for (std::size_t i = 0; i < slices.size(); ++i) {
        INFO("limit " << limit << ", " << n << " elements, slice " << i << " of " << slices.size());
        const auto& k = slices[i];
        CHECK(k.offset == offset);
        CHECK(k.offset % 16 == 0);
        CHECK(k.length >= 1);
        CHECK(k.length <= limit);
        if (i + 1 < slices.size()) {
          CHECK(k.length % 16 == 0);
          shortest = std::min(shortest, k.length);
          longest = std::max(longest, k.length);
        }
        offset += k.length;
      }
      CHECK(offset == n);
      CHECK(longest - shortest <= 16);
    }
  }
  // Bounds below 16 floats cut per element, as before: 10 elements at most 3 each.
  const auto small = plan_keys({10}, 1, key_plan_options{4 * 3, 0});
  std::vector<std::int64_t> lengths;
  for (auto& k : small.shards[0])
    lengths.push_back(k.length);
  std::sort(lengths.begin(), lengths.end());
  CHECK(lengths == std::vector<std::int64_t>{2, 2, 3, 3});
}

TEST_CASE("plan_keys bundles small keys per shard up to the group bound, in backward order") {
  // A conv net's shape: weights of 4000, 2000 and 800 elements with small biases after each.
  const std::vector<std::int64_t> sizes{4000, 16, 2000, 32, 800, 10};
  auto plan = plan_keys(sizes, 1, key_plan_options{1 << 20, 4 * 1000});
  check_cover(plan, sizes);
  // Backward order: 10, 800 and 32 bundle (842 <= 1000); 2000 goes alone; 16 cannot join the
  // 4000 after it, which goes alone.
  std::vector<std::vector<std::size_t>> slots;
  for (auto& g : plan.groups) {
    slots.emplace_back();
    for (auto k : g.keys)
      slots.back().push_back(plan.shards[0][k].slot);
  }
  CHECK(slots == std::vector<std::vector<std::size_t>>{{5, 4, 3}, {2}, {1}, {0}});
  CHECK(plan.groups[0].elements == 842);
}

TEST_CASE("group_work prices each group by its keys' part of their parameters' work") {
  // Slot 0 (work 8) cut into slices of 300, 300 and 400 elements over two groups; slot 1 (work 2)
  // whole in the second; slot 2 has no work.
  const std::vector<std::vector<key_slice>> shards{
    {key_slice{0, 0, 300, false}, key_slice{1, 0, 10, true}},
    {key_slice{0, 300, 300, false}, key_slice{0, 600, 400, false}, key_slice{2, 0, 5, true}}};
  const std::vector<push_group> groups{push_group{1, {0, 2}, 305}, push_group{0, {0, 1}, 310},
                                       push_group{1, {1}, 400}};
  const auto work = group_work({8.0, 2.0, 0.0}, shards, groups);
  REQUIRE(work.size() == 3);
  CHECK(work[0] == Approx(8.0 * 0.3));
  CHECK(work[1] == Approx(8.0 * 0.3 + 2.0));
  CHECK(work[2] == Approx(8.0 * 0.4));
  CHECK(group_work({8.0, 2.0, 0.0}, shards, {}).empty());
  CHECK_THROWS_AS(group_work({8.0, 2.0, 0.0}, shards, {push_group{2, {0}, 1}}), std::out_of_range);
  CHECK_THROWS_AS(group_work({8.0, 2.0, 0.0}, shards, {push_group{0, {2}, 1}}), std::out_of_range);
  CHECK_THROWS_AS(group_work({8.0}, shards, {push_group{0, {1}, 1}}), std::out_of_range);
}

TEST_CASE("key_view and place_key move a key between a parameter and its shard") {
  tensor param = tensor::from_values({2, 3}, {0, 1, 2, 3, 4, 5});
  const key_slice middle{0, 2, 3, false}, whole{0, 0, 6, true};
  tensor view = key_view(param, middle);
  CHECK(view.shape() == shape_t{3});
  CHECK(view.shares_storage_with(param));
  CHECK(view.data()[0] == 2);
  CHECK(key_view(param, whole).shape() == param.shape());
  // A slice is copied into its range; a reader of the old values keeps them (copy-on-write).
  tensor reader = param;
  place_key(param, middle, tensor::from_values({3}, {20, 30, 40}));
  CHECK_FALSE(param.shares_storage_with(reader));
  CHECK(reader.data()[2] == 2);
  CHECK(std::vector<float>(param.data(), param.data() + 6)
        == std::vector<float>{0, 1, 20, 30, 40, 5});
  // A whole key replaces the handle.
  tensor fresh = tensor::from_values({2, 3}, {9, 9, 9, 9, 9, 9});
  place_key(param, whole, fresh);
  CHECK(param.shares_storage_with(fresh));
}

TEST_CASE("place_key refuses values or ranges that do not fit, leaving the parameter as it was") {
  tensor param = tensor::from_values({2, 3}, {0, 1, 2, 3, 4, 5});
  const tensor before = param;
  auto unchanged = [&] {
    CHECK(param.shares_storage_with(before));
    CHECK(std::vector<float>(param.data(), param.data() + 6)
          == std::vector<float>{0, 1, 2, 3, 4, 5});
  };
  // Too few and too many values for a slice: the message names the key and both sizes.
  const key_slice middle{1, 2, 3, false};
  CHECK_THROWS_AS(place_key(param, middle, tensor::from_values({2}, {20, 30})),
                  std::invalid_argument);
  CHECK_THROWS_WITH(place_key(param, middle, tensor::from_values({2}, {20, 30})),
                    Catch::Contains("parameter 1[2:5]") && Catch::Contains("2 values")
                      && Catch::Contains("3 elements"));
  CHECK_THROWS_WITH(place_key(param, middle, tensor::from_values({4}, {20, 30, 40, 50})),
                    Catch::Contains("4 values") && Catch::Contains("3 elements"));
  unchanged();
  // A range that runs past the end of the parameter, or starts before it.
  CHECK_THROWS_WITH(
    place_key(param, key_slice{0, 4, 3, false}, tensor::from_values({3}, {7, 8, 9})),
    Catch::Contains("parameter 0[4:7]") && Catch::Contains("parameter of 6"));
  CHECK_THROWS_AS(place_key(param, key_slice{0, -1, 3, false}, tensor::from_values({3}, {7, 8, 9})),
                  std::invalid_argument);
  CHECK_THROWS_AS(place_key(param, key_slice{0, std::int64_t{1} << 62, 3, false},
                            tensor::from_values({3}, {7, 8, 9})),
                  std::invalid_argument);
  unchanged();
  // A whole key whose values are the wrong size does not replace the handle.
  CHECK_THROWS_WITH(
    place_key(param, key_slice{0, 0, 6, true}, tensor::from_values({4}, {9, 9, 9, 9})),
    Catch::Contains("4 values") && Catch::Contains("6 elements"));
  CHECK_THROWS_AS(place_key(param, key_slice{0, 0, 8, true}, tensor(shape_t{8})),
                  std::invalid_argument);
  unchanged();
}

TEST_CASE("plan_keys refuses impossible bounds and sizes") {
  CHECK_THROWS_WITH(plan_keys({1}, 0), Catch::Contains("shards must be at least 1"));
  CHECK_THROWS_WITH(plan_keys({1}, 1, key_plan_options{2, 0}), Catch::Contains("slice bytes"));
  CHECK_THROWS_WITH(plan_keys({1}, 1, key_plan_options{4, -1}), Catch::Contains("group bytes"));
  CHECK_THROWS_WITH(plan_keys({0}, 1), Catch::Contains("has 0 elements"));
}

} // namespace
} // namespace troupe
