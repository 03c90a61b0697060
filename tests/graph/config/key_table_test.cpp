// The key table (graph/config/key_table.hpp) against what it drives: the reader reads every
// ranged key through its range, each statement accepts the keys the table gives it, and the
// reference has a row per key with the default job's values.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/key_table.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>

#include "config_errors.hpp"

namespace troupe {
namespace {

using test::error_of;

// A config that writes `key = value` where the key's section takes it.
std::string config_writing(const config_key& key, const std::string& value) {
  const std::string section = key.section, pair = std::string(key.name) + " = " + value;
  if (section == "cluster" || section == "train")
    return section + " { " + pair + " }";
  if (section == "optimizer")
    for (const auto& name : optimizer_names())
      if (key.taken_by(name))
        return "optimizer " + name + "(" + pair + ")";
  if (section == "model")
    return "model lenet(" + pair + ")";
  if (section == "schedule") { // the first policy that takes the key
    const std::string policies = *key.only != '\0' ? key.only : "multi_step";
    return "schedule " + policies.substr(0, policies.find(' ')) + "(" + pair + ")";
  }
  if (key.taken_by("recordio") && !key.taken_by("synthetic"))
    return "data train = recordio(path = \"t.rec\", " + pair + ")";
  if (key.taken_by("synthetic"))
    return "data train = synthetic(" + pair + ")";
  return "data train = fashion_mnist(" + pair + ")";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("every key has one path, and every flag sets one key") {
  std::set<std::string> paths, flags;
  for (const auto& key : config_keys()) {
    CHECK(paths.insert(key.path()).second);
    if (*key.flag != '\0')
      CHECK(flags.insert(key.flag).second);
    CHECK(*key.help != '\0');
  }
  CHECK(paths.size() == config_keys().size());
  CHECK(config_key_of_flag("threads") == &config_key_of("train.threads"));
  CHECK(config_key_of_flag("no-such-flag") == nullptr);
  CHECK_THROWS_AS(config_key_of("train.no_such_key"), std::out_of_range);
}

TEST_CASE("the reader reads every ranged number through its key's range") {
  for (const auto& key : config_keys()) {
    if (!key.range || (key.type != key_type::integer && key.type != key_type::real))
      continue;
    INFO(key.path());
    const double above = key.range->max * 2 + 1;
    const auto error = error_of(config_writing(key, shortest_number(above)));
    CHECK(contains(error, key.name));
    CHECK(contains(error, "must be"));
  }
}

TEST_CASE("a statement takes the keys the table gives it, and names them when refusing") {
  const auto recordio = section_keys("data", "recordio");
  CHECK(std::count(recordio.begin(), recordio.end(), "path") == 1);
  CHECK(std::count(recordio.begin(), recordio.end(), "dir") == 0);
  const auto error = error_of("data train = recordio(path = \"t.rec\", dir = \"d\")");
  CHECK(contains(error, "dir"));
  for (const auto& name : recordio)
    CHECK(contains(error, name));
  const auto cosine = section_keys("schedule", "cosine");
  CHECK(cosine == std::vector<std::string>{"warmup", "final_lr", "cycle", "cycle_mult"});
  CHECK(contains(error_of("schedule cosine(factor = 0.5)"), "final_lr"));
}

TEST_CASE("the reference has a block per section and a row per key, defaults from the job") {
  const auto text = key_reference();
  std::istringstream lines(text);
  std::size_t rows = 0, blocks = 0, ends = 0;
  for (std::string line; std::getline(lines, line);) {
    blocks += line.rfind("<!-- keys: ", 0) == 0;
    ends += line == "<!-- end keys -->";
    rows += line.rfind("| `", 0) == 0;
  }
  CHECK(blocks == 6);
  CHECK(ends == 6);
  CHECK(rows == config_keys().size());
  CHECK(default_text(config_key_of("train.epochs")) == "10");
  CHECK(default_text(config_key_of("cluster.listen")) == "`\"127.0.0.1\"`");
  CHECK(default_text(config_key_of("cluster.tcp_congestion")) == "`auto`");
  CHECK(default_text(config_key_of("cluster.overlap")) == "true");
  CHECK(contains(text, "| `threads` | `OMP_NUM_THREADS`"));
  CHECK(contains(text, "`--num-epochs`"));
}

} // namespace
} // namespace troupe
