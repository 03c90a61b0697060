// The flags declared from the key table (apps/key_flags.hpp): each plain key's flag lands on its
// key's field, marked given, with the value the flag said; a value outside the key's range is
// refused naming the flag; and troupe train declares a flag for every key with a flag.
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/key_flags.hpp"
#include "apps/train_flags.hpp"

using namespace troupe;

namespace {

// A value of T for `key` that is not its default and lies in its range.
template <typename T> std::string other_value(const config_key& key, const T& current) {
  if constexpr (std::is_same_v<T, std::string>) {
    return current + "x";
  } else {
    double v = static_cast<double>(current) + 1;
    if (key.range && !key.range->contains(v))
      v = key.range->integral ? std::floor((key.range->min + key.range->max) / 2)
                              : (key.range->min + key.range->max) / 2;
    if (key.range && (!key.range->contains(v) || v == static_cast<double>(current)))
      v = key.range->min_open ? key.range->min + 1 : key.range->min;
    return shortest_number(v);
  }
}

// What the field of `key` holds in `config`, as text; "" for a key that is no plain value.
std::string field_text(const config_key& key, job_config& config, bool& given) {
  key_target target{config, config.train_data};
  std::string out;
  std::visit(
    [&](auto field) {
      using F = decltype(field);
      if constexpr (!std::is_same_v<F, std::monostate>) {
        auto& slot = field(target);
        using T = std::decay_t<decltype(slot.value)>;
        given = slot.given;
        if constexpr (std::is_same_v<T, std::string>)
          out = slot.value;
        else if constexpr (std::is_arithmetic_v<T>)
          out = shortest_number(static_cast<double>(slot.value));
      }
    },
    key.field);
  return out;
}

// The keys of how a node reaches its peers, which only troupe node reads.
bool network_flag(const std::string& flag) {
  for (const char* f : {"scheduler", "listen", "join-timeout", "heartbeat", "peer-timeout",
                        "request-timeout", "tcp-congestion", "link-mbit", "backward-ms"})
    if (flag == f)
      return true;
  return false;
}

} // namespace

TEST_CASE("a plain key's flag lands on its key's field, given, as the flag said", "[key_flags]") {
  key_flags flags({});
  const auto names = flags.names();
  REQUIRE(names.size() >= 20); // every key of the table with a flag and a plain value
  for (const auto& name : names) {
    const auto& key = *config_key_of_flag(name);
    job_config defaults;
    bool given = true;
    const auto before = field_text(key, defaults, given);
    CHECK_FALSE(given);
    flag_set f("test", "");
    key_flags declared({});
    declared.declare(f);
    std::vector<std::string> args{"--" + name};
    std::string expected = "1";
    if (key.type != key_type::boolean) {
      std::visit(
        [&](auto field) {
          using F = decltype(field);
          if constexpr (!std::is_same_v<F, std::monostate>) {
            key_target t{defaults, defaults.train_data};
            using T = std::decay_t<decltype(field(t).value)>;
            if constexpr (std::is_same_v<T, std::string> || std::is_arithmetic_v<T>)
              expected = other_value<T>(key, field(t).value);
          }
        },
        key.field);
      args.push_back(expected);
    }
    INFO("--" << name << " " << expected << " (" << key.path() << ")");
    REQUIRE(f.parse(args));
    declared.check(f);
    job_config config;
    if (!key.taken_by(config.train_data.dataset.value)) { // a key of other statements only
      const std::string only = key.only;
      config.train_data.dataset.value = only.substr(0, only.find(' '));
    }
    declared.apply(config, f);
    const auto after = field_text(key, config, given);
    CHECK(given);
    CHECK(after == expected);
    CHECK(after != before);
  }
}

TEST_CASE("a plain key's flag outside its key's range is refused, naming the flag and the range",
          "[key_flags]") {
  int ranged = 0;
  for (const auto& name : key_flags({}).names()) {
    const auto& key = *config_key_of_flag(name);
    if (!key.range || key.type == key_type::boolean || !std::isfinite(key.range->max)
        || key.range->max > 1e15)
      continue;
    ++ranged;
    flag_set f("test", "");
    key_flags declared({});
    declared.declare(f);
    const auto above = shortest_number(key.range->max + 1);
    INFO("--" << name << " " << above);
    REQUIRE(f.parse({"--" + name, above}));
    CHECK_THROWS_WITH(declared.check(f), Catch::StartsWith("--" + name + " must be ")
                                           && Catch::EndsWith(", got " + above));
  }
  CHECK(ranged >= 10);
}

TEST_CASE("a data key's flag is refused for a dataset whose statement does not take the key",
          "[key_flags]") {
  flag_set f("test", "");
  key_flags declared({});
  declared.declare(f);
  REQUIRE(f.parse({"--brightness", "0.3"}));
  job_config fashion;
  CHECK_THROWS_WITH(declared.apply(fashion, f),
                    "--brightness applies to recordio data, not fashion_mnist");
  job_config records;
  records.train_data.dataset.value = "recordio";
  declared.apply(records, f);
  CHECK(records.train_data.brightness.value == 0.3);
}

TEST_CASE("troupe train or troupe node declares a flag for every key with a flag", "[key_flags]") {
  const auto train = parse_train_flags({"--help"}).help_text;
  std::ostringstream node;
  auto* was = std::cout.rdbuf(node.rdbuf());
  node_command({"--help"});
  std::cout.rdbuf(was);
  int keys = 0;
  for (const auto& key : config_keys()) {
    if (*key.flag == '\0')
      continue;
    ++keys;
    const auto line = std::string("  --") + key.flag + " ";
    INFO(key.path() << " --" << key.flag);
    CHECK(node.str().find(line) != std::string::npos); // node reads every training flag too
    if (!network_flag(key.flag))
      CHECK(train.find(line) != std::string::npos);
  }
  CHECK(keys >= 40);
}
