// The exposition's shape as Prometheus reads it; a real Prometheus and promtool read a running
// job's in prometheus_scrape.py.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include <troupe/status/prometheus_text.hpp>

using namespace troupe;

namespace {

status_snapshot cluster_snapshot() {
  status_snapshot s;
  s.run = {{"network", "mlp"}, {"config", "a \"quoted\" path\\x"}};
  s.state = "training";
  s.plan.topology = "bsp";
  s.plan.nodes = {{"scheduler", "scheduler"}, {"worker_0", "worker"}};
  s.plan.actors = {{"compute_0", "compute", 1}};
  rank_figures r;
  r.rank = 0;
  r.samples_total = 640;
  r.samples_per_s = 1234.5;
  r.steps = 2;
  r.step_seconds = 0.5;
  s.ranks = {r};
  node_figures scheduler{"scheduler", "scheduler", "", "ready", "", {}, 0};
  node_figures worker{"worker_0", "worker", "h", "lost", "", {{"push", {{"tx", 99}}}}, 1.5};
  s.nodes = {scheduler, worker};
  s.nodes_lost = 1;
  s.warning_counts = {{"rising", 2}};
  return s;
}

} // namespace

TEST_CASE("prometheus_text: every family has its HELP and TYPE before its samples") {
  const auto text = prometheus_text(cluster_snapshot());
  std::istringstream lines(text);
  std::set<std::string> typed;
  std::string current;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# HELP ", 0) == 0)
      continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      const auto type = line.substr(line.rfind(' ') + 1);
      CHECK(typed.insert(current).second); // each family once
      CHECK((type == "gauge" || type == "counter"));
      if (type == "counter")
        CHECK_THAT(current, Catch::EndsWith("_total"));
      continue;
    }
    INFO(line);
    CHECK(line.rfind(current, 0) == 0); // a sample of the family just opened
  }
  CHECK(typed.count("troupe_rank_samples_per_second") == 1);
  CHECK(typed.count("troupe_node_bytes_total") == 1);
}

TEST_CASE("prometheus_text: ranks and nodes are labelled with the node they run on") {
  const auto text = prometheus_text(cluster_snapshot());
  CHECK_THAT(
    text, Catch::Contains("troupe_rank_samples_per_second{rank=\"0\",node=\"worker_0\"} 1234.5\n"));
  CHECK_THAT(text,
             Catch::Contains("troupe_rank_step_seconds{rank=\"0\",node=\"worker_0\"} 0.25\n"));
  CHECK_THAT(text, Catch::Contains("troupe_node_up{node=\"scheduler\",role=\"scheduler\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("troupe_node_up{node=\"worker_0\",role=\"worker\"} 0\n"));
  CHECK_THAT(text,
             Catch::Contains(
               "troupe_node_bytes_total{node=\"worker_0\",kind=\"push\",direction=\"tx\"} 99\n"));
  CHECK_THAT(text, Catch::Contains("troupe_nodes_lost_total 1\n"));
  CHECK_THAT(text, Catch::Contains("troupe_warnings_total{kind=\"rising\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("troupe_warnings_total{kind=\"near_chance\"} 0\n"));
  CHECK_THAT(text, Catch::Contains("troupe_run_state{state=\"training\"} 1\n"));
}

TEST_CASE("prometheus_text: label values are escaped, a NaN loss is written by name") {
  auto s = cluster_snapshot();
  s.loss = std::numeric_limits<double>::quiet_NaN();
  const auto text = prometheus_text(s);
  CHECK_THAT(text, Catch::Contains("config=\"a \\\"quoted\\\" path\\\\x\""));
  CHECK_THAT(text, Catch::Contains("troupe_train_loss NaN\n"));
  CHECK(prometheus_label_value("a\nb") == "a\\nb");
}

TEST_CASE("prometheus_text: one process has no node families, ranks say process") {
  status_snapshot s;
  rank_figures r;
  s.ranks = {r};
  const auto text = prometheus_text(s);
  CHECK_THAT(text, !Catch::Contains("troupe_node_up"));
  CHECK_THAT(text, Catch::Contains("node=\"process\""));
}
