// The `topology` statement: a preset name with its arguments, optionally followed by explicit
// wiring. Presets expand to their canonical routes; explicit routes are checked for what makes
// training impossible (no batches, no weights, a gradient path that never reaches a shard, a
// cycle without a shard) and then classified, and the class must match the preset's name so
// that the first word of the statement always says what runs.
#include <algorithm>
#include <map>
#include <set>

#include <troupe/graph/config/job_config.hpp>
#include "graph/config/value_reader.hpp"

namespace troupe {

namespace {

using role = actor_role;
const std::vector<std::string> presets{"bsp", "async", "ssp", "hierarchical", "backup"};

std::vector<wiring_route> preset_routes(topology_kind kind) {
  std::vector<wiring_route> r{{role::loader, role::compute, "", {}}};
  if (kind == topology_kind::async || kind == topology_kind::ssp) {
    r.push_back({role::compute, role::shard, "", {}});
    r.push_back({role::shard, role::compute, "sender", {}});
    return r;
  }
  if (kind == topology_kind::hierarchical) {
    r.push_back({role::compute, role::machine_aggregator, "", {}});
    r.push_back({role::machine_aggregator, role::aggregator, "", {}});
  } else {
    r.push_back({role::compute, role::aggregator, "", {}});
  }
  r.push_back({role::aggregator, role::shard, "", {}});
  r.push_back({role::shard, role::compute, "all", {}});
  return r;
}

void read_preset(const value_reader& r, const syntax_value& head, job_config& c) {
  auto& t = c.topology;
  auto kind = static_cast<topology_kind>(std::find(presets.begin(), presets.end(), head.text)
                                         - presets.begin());
  t.kind = kind;
  std::vector<std::string> keys, positional;
  if (kind == topology_kind::ssp) keys = positional = {"staleness"};
  if (kind == topology_kind::hierarchical) keys = positional = {"machines"};
  if (kind == topology_kind::backup) keys = positional = {"backups"};
  if (kind != topology_kind::async && kind != topology_kind::ssp)
    keys.push_back("deterministic");
  keyed_values k(r, head.text, head.arguments, keys, positional);
  const int workers = c.cluster.workers.value;
  if (kind == topology_kind::ssp) {
    t.staleness.value = 2;
    if (auto* v = k.find("staleness"))
      r.set(t.staleness, static_cast<int>(r.integer(*v, "staleness", 1, 1000000)), *v);
  }
  if (kind == topology_kind::hierarchical) {
    t.machines.value = 2;
    if (auto* v = k.find("machines"))
      r.set(t.machines, static_cast<int>(r.integer(*v, "machines", 1, 1024)), *v);
    if (workers % t.machines.value != 0)
      r.fail(t.machines.given ? t.machines.span : head.span,
             "hierarchical needs workers (" + std::to_string(workers)
               + ") to split evenly over machines (" + std::to_string(t.machines.value) + ")");
  }
  if (kind == topology_kind::backup) {
    t.backup_workers.value = 1;
    if (auto* v = k.find("backups"))
      r.set(t.backup_workers, static_cast<int>(r.integer(*v, "backups", 1, 1024)), *v);
    if (t.backup_workers.value >= workers)
      r.fail(t.backup_workers.given ? t.backup_workers.span : head.span,
             "backup workers (" + std::to_string(t.backup_workers.value)
               + ") must be fewer than workers (" + std::to_string(workers) + ")");
  }
  if (auto* v = k.find("deterministic"))
    r.set(t.deterministic, r.boolean(*v, "deterministic"), *v);
}

struct endpoint {
  role which;
  std::string fan;
  int need = 0;  ///< aggregate(all, need = N) / aggregate(first = N); 0: all workers
  source_span span;
};

endpoint read_endpoint(const value_reader& r, const syntax_value& v, bool is_target) {
  static const std::vector<std::string> actors{"loader", "compute", "aggregate", "shard"};
  if (std::find(actors.begin(), actors.end(), v.text) == actors.end())
    r.fail(v.span, "unknown actor '" + v.text + "' (actors: " + join_names(actors) + ")");
  endpoint e{role::loader, "", 0, v.span};
  if (v.text == "loader" || v.text == "shard") {
    keyed_values(r, v.text, v.arguments, {}, {});
    e.which = v.text == "loader" ? role::loader : role::shard;
  } else if (v.text == "compute") {
    e.which = role::compute;
    keyed_values k(r, "compute", v.arguments, is_target ? std::vector<std::string>{"fan"}
                                                        : std::vector<std::string>{},
                   is_target ? std::vector<std::string>{"fan"} : std::vector<std::string>{});
    if (auto* f = k.find("fan")) {
      e.fan = r.name(*f, "compute's fan");
      if (e.fan != "all" && e.fan != "sender")
        r.fail(f->span, "compute(...) takes all (broadcast) or sender (reply), got '" + e.fan + "'");
    }
  } else {
    keyed_values k(r, "aggregate", v.arguments, {"scope", "need", "first"}, {"scope"});
    e.which = role::aggregator;
    if (auto* s = k.find("scope")) {
      auto scope = r.name(*s, "aggregate's scope");
      if (scope != "all" && scope != "machine")
        r.fail(s->span, "aggregate(...) takes all or machine, got '" + scope + "'");
      e.which = scope == "all" ? role::aggregator : role::machine_aggregator;
    }
    for (const char* key : {"need", "first"})
      if (auto* n = k.find(key)) {
        if (e.need != 0 || e.which != role::aggregator)
          r.fail(n->span, std::string(key) + " applies once, to aggregate(all)");
        e.need = static_cast<int>(r.integer(*n, key, 1, 1024));
      }
  }
  return e;
}

} // namespace

namespace {

// Reads the written routes (chains become consecutive pairs) and applies the per-route rules.
std::vector<wiring_route> read_routes(const value_reader& r, const syntax_statement& st,
                                      int& need) {
  std::vector<wiring_route> out;
  std::set<std::pair<role, role>> seen;
  for (const auto& written : st.routes) {
    auto from = read_endpoint(r, written.endpoints[0], false);
    for (std::size_t i = 1; i < written.endpoints.size(); ++i) {
      auto to = read_endpoint(r, written.endpoints[i], true);
      if (to.which == role::loader)
        r.fail(to.span, "nothing can send to a loader: it only reads data");
      if (from.which == role::loader && to.which != role::compute)
        r.fail(to.span, "a loader sends batches only to compute");
      if (from.which == role::shard && to.which != role::compute)
        r.fail(to.span, "a shard sends weights only to compute");
      if (to.which == role::compute && from.which != role::loader && to.fan.empty())
        r.fail(to.span, "say compute(all) to broadcast or compute(sender) to reply to the sender");
      if (from.which == role::loader && !to.fan.empty())
        r.fail(to.span, "loader i feeds compute i: write 'loader -> compute'");
      if (!seen.insert({from.which, to.which}).second)
        r.fail(written.span, "duplicate route " + std::string(to_string(from.which)) + " -> "
                               + to_string(to.which));
      for (const auto* e : {&from, &to})
        if (e->need != 0) {
          if (need != 0 && need != e->need)
            r.fail(e->span, "aggregate(all) is given two different need values");
          need = e->need;
        }
      out.push_back({from.which, to.which, to.fan, written.span});
      from = to;
    }
  }
  return out;
}

bool has_route(const std::vector<wiring_route>& routes, role from, role to) {
  return std::any_of(routes.begin(), routes.end(),
                     [&](const wiring_route& w) { return w.from == from && w.to == to; });
}

// Whether `from` reaches a shard following routes; and cycle detection that avoids shards.
bool reaches_shard(const std::vector<wiring_route>& routes, role from, std::set<role> visiting = {}) {
  if (from == role::shard)
    return true;
  if (!visiting.insert(from).second)
    return false;
  for (const auto& w : routes)
    if (w.from == from && reaches_shard(routes, w.to, visiting))
      return true;
  return false;
}

const wiring_route* cycle_without_shard(const std::vector<wiring_route>& routes, role at,
                                        std::vector<role>& path) {
  for (const auto& w : routes) {
    if (w.from != at || w.to == role::shard)
      continue;
    if (std::find(path.begin(), path.end(), w.to) != path.end())
      return &w;
    path.push_back(w.to);
    if (auto* found = cycle_without_shard(routes, w.to, path))
      return found;
    path.pop_back();
  }
  return nullptr;
}

void check_wiring(const value_reader& r, const syntax_statement& st,
                  const std::vector<wiring_route>& routes) {
  for (role start : {role::compute, role::machine_aggregator, role::aggregator}) {
    std::vector<role> path{start};
    if (auto* w = cycle_without_shard(routes, start, path))
      r.fail(w->span, "this route closes a cycle without a shard: gradients would circulate "
                      "without ever being applied");
  }
  if (!has_route(routes, role::loader, role::compute))
    r.fail(st.block_span, "no 'loader -> compute' route: compute actors would get no batches");
  if (!has_route(routes, role::shard, role::compute))
    r.fail(st.block_span, "no route brings weights to compute: add 'shard -> compute(all)' "
                          "or 'shard -> compute(sender)'");
  // Aggregators first: when one is a dead end, that is the route to point at.
  auto sorted = routes;
  std::stable_partition(sorted.begin(), sorted.end(), [](const wiring_route& w) {
    return w.from == role::aggregator || w.from == role::machine_aggregator;
  });
  for (const auto& w : routes)
    if ((w.to == role::aggregator || w.to == role::machine_aggregator)
        && !reaches_shard(routes, w.to))
      r.fail(w.span, std::string(to_string(w.to)) + " never reaches a shard: the gradients "
                       "it sums would never be applied");
  for (const auto& w : sorted)
    if (w.from != role::loader && w.from != role::shard && !reaches_shard(routes, w.from))
      r.fail(w.span, std::string(to_string(w.from)) + " never reaches a shard: its gradients "
                       "would never be applied");
  if (!reaches_shard(routes, role::compute))
    r.fail(st.block_span, "compute's gradients never reach a shard");
}

// What the checked routes amount to; must agree with the preset name written.
topology_kind classify(const value_reader& r, const syntax_statement& st,
                       const std::vector<wiring_route>& routes, int need, job_config& c) {
  const bool direct = has_route(routes, role::compute, role::shard);
  const bool machine = has_route(routes, role::compute, role::machine_aggregator);
  const bool global = has_route(routes, role::compute, role::aggregator) || machine;
  if (direct && global)
    r.fail(st.block_span, "compute sends gradients both to a shard and to an aggregator: "
                          "choose one path");
  std::string fan;
  for (const auto& w : routes)
    if (w.from == role::shard)
      fan = w.to == role::compute ? w.fan : fan;
  if (direct && fan != "sender")
    r.fail(st.block_span, "without an aggregator each push is answered alone: use "
                          "'shard -> compute(sender)'");
  if (!direct && fan != "all")
    r.fail(st.block_span, "after aggregation every worker needs the new weights: use "
                          "'shard -> compute(all)'");
  const int workers = c.cluster.workers.value;
  if (need > workers)
    r.fail(st.block_span, "aggregate(all) needs " + std::to_string(need) + " contributions but "
                          "there are only " + std::to_string(workers) + " workers");
  if (direct)
    return c.topology.kind == topology_kind::ssp ? topology_kind::ssp : topology_kind::async;
  if (machine)
    return topology_kind::hierarchical;
  if (need != 0 && need < workers) {
    c.topology.backup_workers.value = workers - need;
    c.topology.backup_workers.given = true;
    return topology_kind::backup;
  }
  return topology_kind::bsp;
}

} // namespace

void resolve_topology(job_config& c, const syntax_statement* st) {
  auto& t = c.topology;
  if (!st) {
    t.kind = topology_kind::bsp;
    t.routes = preset_routes(t.kind);
    return;
  }
  syntax_file file{c.path, c.text, {}};
  value_reader r(file);
  if (!st->head)
    r.fail(st->section_span, "topology needs a preset name: " + join_names(presets));
  if (std::find(presets.begin(), presets.end(), st->head->text) == presets.end())
    r.fail(st->head->span, "unknown topology '" + st->head->text + "' (presets: "
                             + join_names(presets) + ")");
  if (!st->assignments.empty())
    r.fail(st->assignments.front().key_span, "a topology body holds routes 'a -> b', not keys");
  t.span = st->head->span;
  r.set(t.preset, st->head->text, *st->head);
  const int backups_written = [&] { read_preset(r, *st->head, c); return t.backup_workers.value; }();
  if (!st->has_block) {
    t.routes = preset_routes(t.kind);
    return;
  }
  t.explicit_wiring = true;
  int need = 0;
  t.routes = read_routes(r, *st, need);
  check_wiring(r, *st, t.routes);
  auto kind = classify(r, *st, t.routes, need, c);
  if (kind != t.kind)
    r.fail(st->head->span, std::string("the wiring below is ") + to_string(kind)
                             + ", but the topology says " + st->head->text);
  if (kind == topology_kind::backup && t.backup_workers.value != backups_written
      && st->head->arguments.size() > 0)
    r.fail(st->head->span, "backup(" + std::to_string(backups_written) + ") disagrees with "
                             "aggregate's need (" + std::to_string(t.backup_workers.value)
                             + " backups)");
  if (kind == topology_kind::hierarchical && t.machines.value < 2 && c.cluster.workers.value > 1)
    r.fail(st->head->span, "hierarchical wiring needs machines >= 2");
}

const char* to_string(actor_role role) {
  switch (role) {
    case actor_role::loader: return "loader";
    case actor_role::compute: return "compute";
    case actor_role::machine_aggregator: return "aggregate(machine)";
    case actor_role::aggregator: return "aggregate(all)";
    case actor_role::shard: return "shard";
  }
  return "?";
}

} // namespace troupe
