// The /status object is built from the snapshot alone, so what the page draws and what a
// script reads are the same figures. A rank's node comes from the plan: the node its compute
// actor is placed on (null in one process).
#include <troupe/status/status_json.hpp>

#include <nlohmann/json.hpp>

#include "status/rank_figures.hpp"

namespace troupe {

namespace {

using json = nlohmann::json;
using status_parts::node_of_rank;
using status_parts::per_step;

json plan_json(const status_plan& p) {
  json nodes = json::array(), actors = json::array(), routes = json::array();
  for (const auto& [name, role] : p.nodes)
    nodes.push_back({{"name", name}, {"role", role}});
  for (const auto& a : p.actors)
    actors.push_back(
      {{"name", a.name}, {"role", a.role}, {"node", a.node >= 0 ? json(a.node) : json(nullptr)}});
  for (const auto& r : p.routes)
    routes.push_back({{"from", r.from}, {"to", r.to}, {"label", r.label}, {"side", r.side}});
  return {{"topology", p.topology}, {"workers", p.workers}, {"steps_per_epoch", p.steps_per_epoch},
          {"nodes", nodes},         {"actors", actors},     {"routes", routes}};
}

json ranks_json(const status_snapshot& s) {
  json ranks = json::array();
  for (const auto& r : s.ranks) {
    const auto node = node_of_rank(s, r.rank);
    ranks.push_back({{"rank", r.rank},
                     {"node", node.empty() ? json(nullptr) : json(node)},
                     {"epoch", r.epoch},
                     {"batch", r.batch},
                     {"batches", r.batches},
                     {"samples", r.samples},
                     {"samples_total", r.samples_total},
                     {"samples_per_s", r.samples_per_s},
                     {"step_s", per_step(r.step_seconds, r)},
                     {"wait_s", per_step(r.wait_seconds, r)},
                     {"seen", r.seen}});
  }
  return ranks;
}

json nodes_json(const status_snapshot& s) {
  json nodes = json::array();
  for (const auto& n : s.nodes) {
    json bytes = json::object();
    std::uint64_t rx = 0, tx = 0;
    for (const auto& [kind, both] : n.bytes) {
      const auto in = both.count("rx") ? both.at("rx") : 0,
                 out = both.count("tx") ? both.at("tx") : 0;
      bytes[kind] = {{"rx", in}, {"tx", out}};
      rx += in;
      tx += out;
    }
    double speed = 0;
    json ranks = json::array();
    for (const auto& r : s.ranks)
      if (node_of_rank(s, r.rank) == n.name) {
        speed += r.samples_per_s;
        ranks.push_back(r.rank);
      }
    nodes.push_back({{"name", n.name},
                     {"role", n.role},
                     {"host", n.host},
                     {"state", n.state},
                     {"adopted_by", n.adopted_by.empty() ? json(nullptr) : json(n.adopted_by)},
                     {"ranks", ranks},
                     {"samples_per_s", speed},
                     {"rx", rx},
                     {"tx", tx},
                     {"bytes", bytes},
                     {"waited_for_s", n.waited_for_s}});
  }
  return nodes;
}

json history_json(const status_snapshot& s) {
  json history = json::array();
  for (const auto& e : s.history)
    history.push_back({{"epoch", e.epoch},
                       {"train_loss", e.train_loss},
                       {"train_accuracy", e.train_accuracy},
                       {"val_loss", e.validated ? json(e.val_loss) : json(nullptr)},
                       {"val_accuracy", e.validated ? json(e.val_accuracy) : json(nullptr)},
                       {"learning_rate", e.learning_rate},
                       {"samples_per_s", e.samples_per_s},
                       {"time_s", e.time_s},
                       {"straggler", e.straggler.empty() ? json(nullptr) : json(e.straggler)}});
  return history;
}

json events_json(const std::vector<status_event>& events) {
  json list = json::array();
  for (const auto& e : events)
    list.push_back(
      {{"time", e.time}, {"epoch", e.epoch}, {"kind", e.kind}, {"message", e.message}});
  return list;
}

json changes_json(const std::vector<status_change>& changes) {
  json list = json::array();
  for (const auto& c : changes)
    list.push_back({{"epoch", c.epoch}, {"step", c.step}, {"change", c.change}, {"by", c.by}});
  return list;
}

} // namespace

std::string status_json(const status_snapshot& s) {
  json run = json::object();
  for (const auto& [key, value] : s.run)
    run[key] = value;
  json curve = json::array();
  for (const auto& p : s.curve)
    curve.push_back({{"step", p.step},
                     {"epoch_progress", p.epoch_progress},
                     {"loss", p.loss},
                     {"accuracy", p.accuracy},
                     {"learning_rate", p.learning_rate},
                     {"time", p.time}});
  json doc = {{"schema", status_schema_version},
              {"state", s.state},
              {"failure", s.failure.empty() ? json(nullptr) : json(s.failure)},
              {"time", s.now},
              {"started", s.started},
              {"run", run},
              {"epochs", s.epochs},
              {"position",
               {{"epoch", s.epoch}, {"batch", s.batch}, {"batches", s.batches}, {"step", s.step}}},
              {"current",
               {{"loss", s.loss},
                {"accuracy", s.accuracy},
                {"learning_rate", s.learning_rate},
                {"samples_per_s", s.samples_per_s}}},
              {"plan", plan_json(s.plan)},
              {"ranks", ranks_json(s)},
              {"nodes", nodes_json(s)},
              {"history", history_json(s)},
              {"curve", curve},
              {"warnings", events_json(s.warnings)},
              {"faults", events_json(s.faults)},
              {"changes", changes_json(s.changes)},
              {"nodes_lost", s.nodes_lost}};
  // A NaN loss (a run that diverged) is written null; text that is not UTF-8 (a path) is
  // replaced, never thrown.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace troupe
