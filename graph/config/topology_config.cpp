// The `topology` statement compiles its routes into the route program the plan wires
// (topology_options: aggregation levels, their needs, the shard's staleness bound). A preset
// name without a block expands to its routes; a block is compiled as written. Every route set
// the grammar accepts either compiles or is refused at the route that makes it untrainable:
// a loader feeding anything but compute, a push path that forks, loops or never reaches a
// shard, aggregates in an order that sums nothing, an answer that does not go back the way the
// gradients came, a barrier that can never fill. A preset name above a block is a promise: the
// block must compile to the preset's program, or the statement is refused (a route set of
// one's own takes a name of one's own), so the first word never misstates what runs.
#include <algorithm>
#include <set>

#include "graph/config/value_reader.hpp"
#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/graph/config/key_table.hpp>

namespace troupe {

namespace {

using role = plan_role;
const std::vector<std::string> presets{"bsp", "async", "ssp", "hierarchical", "backup"};

std::optional<topology_kind> preset_of(const std::string& name) {
  auto at = std::find(presets.begin(), presets.end(), name);
  if (at == presets.end())
    return std::nullopt;
  return static_cast<topology_kind>(at - presets.begin());
}

// The canonical routes of a compiled program: loader, the push chain, the answer.
std::vector<wiring_route> routes_of(const std::vector<aggregation_level>& levels, int staleness,
                                    const std::vector<compression_spec>& compression = {}) {
  auto hop = [&](std::size_t i) {
    return i < compression.size() ? compression[i] : compression_spec{};
  };
  std::vector<wiring_route> out{{role::loader, role::compute, "", 0, -1, {}}};
  role from = role::compute;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const auto& l = levels[i];
    const role to =
      l.scope == aggregation_scope::machine ? role::machine_aggregator : role::aggregator;
    out.push_back({from, to, "", l.need, -1, {}, hop(i)});
    from = to;
  }
  out.push_back({from, role::shard, "", 0, -1, {}, hop(levels.size())});
  if (from == role::aggregator)
    out.push_back({role::shard, role::compute, "all", 0, -1, {}});
  else if (from == role::machine_aggregator)
    out.push_back({role::shard, role::machine_aggregator, "", 0, staleness, {}});
  else
    out.push_back({role::shard, role::compute, "sender", 0, staleness, {}});
  return out;
}

struct endpoint {
  role which = role::loader;
  std::string fan;
  int need = 0;
  int staleness = -1;
  compression_spec compression; // compress = "..." on the hop into this endpoint
  source_span span;
  source_span staleness_span, need_span, compress_span;
};

endpoint read_endpoint(const value_reader& r, const syntax_value& v) {
  static const std::vector<std::string> actors{"loader", "compute", "aggregate", "shard"};
  if (std::find(actors.begin(), actors.end(), v.text) == actors.end())
    r.fail(v.span, "unknown actor '" + v.text + "' (actors: " + join_names(actors) + ")");
  endpoint e;
  e.span = v.span;
  auto read_staleness = [&](const keyed_values& k) {
    if (auto* s = k.find("staleness")) {
      e.staleness = static_cast<int>(r.integer(*s, "staleness", 0, max_staleness));
      e.staleness_span = s->span;
    }
  };
  auto read_compress = [&](const keyed_values& k) {
    if (auto* c = k.find("compress")) {
      std::string why;
      const auto spec = parse_compression(r.string(*c, "compress"), why);
      if (!spec)
        r.fail(c->span, why);
      e.compression = *spec;
      e.compress_span = c->span;
    }
  };
  if (v.text == "loader") {
    keyed_values(r, v.text, v.arguments, {}, {});
    e.which = role::loader;
  } else if (v.text == "shard") {
    keyed_values k(r, v.text, v.arguments, {"compress"}, {});
    e.which = role::shard;
    read_compress(k);
  } else if (v.text == "compute") {
    e.which = role::compute;
    // Nothing compresses the hop into a compute (batches, answers): compress is refused here by
    // what it belongs to, and not offered among compute's keys.
    for (const auto& a : v.arguments)
      if (a.key == "compress")
        r.fail(a.value.span, "compress belongs on a gradient route ('compute -> aggregate(all, "
                             "compress = \"2bit\")'): it compresses that hop's pushes and, unless "
                             "push:, its answers, which travel back the same hop");
    keyed_values k(r, "compute", v.arguments, {"fan", "staleness"}, {"fan"});
    if (auto* f = k.find("fan")) {
      e.fan = r.name(*f, "compute's fan");
      if (e.fan != "all" && e.fan != "sender")
        r.fail(f->span,
               "compute(...) takes all (broadcast) or sender (reply), got '" + e.fan + "'");
    }
    read_staleness(k);
  } else {
    keyed_values k(r, "aggregate", v.arguments, {"scope", "need", "first", "staleness", "compress"},
                   {"scope"});
    read_compress(k);
    e.which = role::aggregator;
    if (auto* s = k.find("scope")) {
      auto scope = r.name(*s, "aggregate's scope");
      if (scope != "all" && scope != "machine")
        r.fail(s->span, "aggregate(...) takes all or machine, got '" + scope + "'");
      e.which = scope == "all" ? role::aggregator : role::machine_aggregator;
    }
    for (const char* key : {"need", "first"})
      if (auto* n = k.find(key)) {
        if (e.need != 0)
          r.fail(n->span, "need and first say the same: write one");
        e.need = static_cast<int>(r.integer(*n, key, 1, 1024));
        e.need_span = n->span;
      }
    read_staleness(k);
  }
  return e;
}

// How the language writes an endpoint.
std::string role_text(role which) {
  switch (which) {
  case role::machine_aggregator:
    return "aggregate(machine)";
  case role::aggregator:
    return "aggregate(all)";
  default:
    return to_string(which);
  }
}

// The written routes (chains become consecutive pairs), with the rules that concern one route.
struct written_routes {
  std::vector<wiring_route> routes;
  std::vector<endpoint> targets; // routes[i]'s target as written
  std::vector<endpoint> sources; // routes[i]'s source as written
};

written_routes read_routes(const value_reader& r, const syntax_statement& st) {
  written_routes out;
  std::set<std::pair<role, role>> seen;
  for (const auto& written : st.routes) {
    auto from = read_endpoint(r, written.endpoints[0]);
    for (std::size_t i = 1; i < written.endpoints.size(); ++i) {
      auto to = read_endpoint(r, written.endpoints[i]);
      if (to.which == role::loader)
        r.fail(to.span, "nothing can send to a loader: it only reads data");
      if (from.which == role::loader && to.which != role::compute)
        r.fail(to.span, "a loader sends batches only to compute");
      if (from.which == role::loader && (!to.fan.empty() || to.staleness >= 0))
        r.fail(to.span, "loader i feeds compute i: write 'loader -> compute'");
      if (from.which == role::shard && to.which != role::compute
          && to.which != role::machine_aggregator)
        r.fail(to.span, "a shard answers compute(all), compute(sender) or aggregate(machine): "
                        "weights go back the way the gradients came");
      if (to.which == role::compute && from.which != role::loader && to.fan.empty())
        r.fail(to.span, "say compute(all) to broadcast or compute(sender) to reply to the sender");
      if (to.which == role::compute && from.which != role::loader && from.which != role::shard)
        r.fail(to.span, "only a shard sends weights to compute; " + role_text(from.which)
                          + " sends its sums on toward a shard (and passes the answer back)");
      if (to.staleness >= 0 && from.which != role::shard)
        r.fail(to.staleness_span, "staleness bounds a shard's answers: write it on the shard's "
                                  "route, e.g. 'shard -> compute(sender, staleness = 2)'");
      if (from.which == role::shard && to.need != 0)
        r.fail(to.need_span, "need belongs to the aggregate's gradient route, not to the answer");
      if (from.which == role::shard && to.compress_span.line != 0)
        r.fail(to.compress_span,
               "compress belongs on a gradient route ('compute -> aggregate(all, compress = "
               "\"2bit\")'): it compresses that hop's pushes and, unless push:, its answers, "
               "which travel back the same hop");
      if (from.which == role::loader && to.compress_span.line != 0)
        r.fail(to.compress_span, "batches are not compressed: compress belongs on a gradient route "
                                 "('compute -> aggregate(all, compress = \"2bit\")')");
      if (!seen.insert({from.which, to.which}).second)
        r.fail(written.span,
               "duplicate route " + role_text(from.which) + " -> " + role_text(to.which));
      out.routes.push_back({from.which, to.which, to.fan, from.which == role::shard ? 0 : to.need,
                            to.staleness, written.span, to.compression});
      out.sources.push_back(from);
      out.targets.push_back(to);
      from = to;
    }
  }
  return out;
}

// What the checked routes compile to.
struct compiled {
  std::vector<aggregation_level> levels;
  int staleness = -1;
  std::vector<compression_spec> compression; // by hop; empty: none written
};

// Where the compute count came from, for a refusal that follows from it: a flag has no place
// in the config's text, so it is named ("--workers 1"); a key or the default says nothing.
std::string workers_origin(const job_config& c) {
  const auto& w = c.cluster.workers;
  if (!w.given || w.span.line != 0)
    return "";
  return std::string(" (--") + config_key_of("cluster.workers").flag + " " + std::to_string(w.value)
         + ")";
}

compiled compile(const value_reader& r, const syntax_statement& st, const written_routes& w,
                 int workers, int machines, const std::string& workers_said) {
  const auto& routes = w.routes;
  auto find = [&](role from, std::vector<std::size_t>& out) {
    out.clear();
    for (std::size_t i = 0; i < routes.size(); ++i)
      if (routes[i].from == from && from != role::loader)
        out.push_back(i);
  };
  auto reached_by = [&](role which) {
    std::size_t i = 0;
    while (i + 1 < routes.size() && routes[i].to != which)
      ++i;
    return i;
  };
  bool fed = false;
  for (const auto& x : routes)
    fed = fed || (x.from == role::loader && x.to == role::compute);
  if (!fed)
    r.fail(st.block_span, "no 'loader -> compute' route: compute actors would get no batches");
  // Follow the gradients from compute: each hop must be the only way on.
  compiled out;
  std::vector<std::size_t> next;
  std::vector<role> path{role::compute};
  std::vector<std::size_t> hops; // the route of each hop of the path, in order
  role at = role::compute;
  while (at != role::shard) {
    find(at, next);
    if (next.empty())
      r.fail(at == role::compute ? st.block_span : routes[reached_by(at)].span,
             at == role::compute
               ? std::string("compute's gradients go nowhere: add 'compute -> shard' or "
                             "'compute -> aggregate(all) -> shard'")
               : role_text(at)
                   + " never reaches a shard: the gradients it sums would never be applied");
    if (next.size() > 1)
      r.fail(routes[next[1]].span, role_text(at) + " sends gradients both to "
                                     + role_text(routes[next[0]].to) + " and to "
                                     + role_text(routes[next[1]].to) + ": choose one path");
    const auto& hop = routes[next[0]];
    if (std::find(path.begin(), path.end(), hop.to) != path.end())
      r.fail(hop.span, "this route closes a cycle without a shard: gradients would circulate "
                       "without ever being applied");
    if (hop.to == role::machine_aggregator && at == role::aggregator)
      r.fail(hop.span, "aggregate(machine) after aggregate(all) would sum a single source: "
                       "sum each machine first, then all of them");
    if (hop.to == role::aggregator || hop.to == role::machine_aggregator) {
      const auto scope =
        hop.to == role::aggregator ? aggregation_scope::all : aggregation_scope::machine;
      out.levels.push_back({scope, hop.need});
      // A need may also be written where the aggregate starts the next route.
      for (std::size_t i = 0; i < routes.size(); ++i)
        if (routes[i].from == hop.to && w.sources[i].need != 0) {
          if (out.levels.back().need != 0 && out.levels.back().need != w.sources[i].need)
            r.fail(w.sources[i].need_span,
                   role_text(hop.to) + " is given two different need values");
          out.levels.back().need = w.sources[i].need;
        }
    }
    path.push_back(hop.to);
    at = hop.to;
    hops.push_back(next[0]);
  }
  // Compressed answers need a hop that answers all its sources alike (check_topology says why).
  bool compressed = false;
  for (std::size_t h = 0; h < hops.size(); ++h) {
    const auto& spec = w.targets[hops[h]].compression;
    compressed = compressed || spec.active();
    out.compression.push_back(spec);
    if (spec.answers == value_encoding::none)
      continue;
    if (!answers_sources_alike(out.levels, h))
      r.fail(w.targets[hops[h]].compress_span,
             "compressed answers are deltas against what every source of the hop holds, and "
               + role_text(routes[hops[h]].to) + (h < out.levels.size() ? " with need" : "")
               + " answers its sources at different steps: write \"push:" + to_string(spec.pushes)
               + "\" to compress the pushes only");
  }
  if (!compressed)
    out.compression.clear();
  // Needs: a barrier that can never fill is refused.
  for (std::size_t i = 0; i < out.levels.size(); ++i) {
    const int sources = level_sources(out.levels, i, workers, machines);
    if (out.levels[i].need > sources) {
      source_span where = st.block_span;
      for (std::size_t j = 0; j < routes.size(); ++j)
        for (const auto* e : {&w.sources[j], &w.targets[j]})
          if (e->need == out.levels[i].need && e->need_span.line != 0)
            where = e->need_span;
      r.fail(where,
             std::string("aggregate(") + to_string(out.levels[i].scope) + ") needs "
               + std::to_string(out.levels[i].need) + " contributions per step but has only "
               + std::to_string(sources)
               + (out.levels[i].scope == aggregation_scope::machine ? " computes on a machine"
                                                                    : " sources")
               + workers_said + ": the barrier could never fill");
    }
  }
  // The answer: one route from the shard, back the way the gradients came.
  find(role::shard, next);
  if (next.empty())
    r.fail(st.block_span, "no route brings weights to compute: add 'shard -> compute(all)' "
                          "or 'shard -> compute(sender)'");
  if (next.size() > 1)
    r.fail(routes[next[1]].span,
           "a shard answers once, whoever pushed to it: keep one route from shard");
  const auto& answer = routes[next[0]];
  const role last = path[path.size() - 2];
  const char* expected = last == role::aggregator           ? "shard -> compute(all)"
                         : last == role::machine_aggregator ? "shard -> aggregate(machine)"
                                                            : "shard -> compute(sender)";
  const bool matches = last == role::aggregator ? answer.to == role::compute && answer.fan == "all"
                       : last == role::machine_aggregator
                         ? answer.to == role::machine_aggregator
                         : answer.to == role::compute && answer.fan == "sender";
  if (!matches)
    r.fail(answer.span, std::string("the shard answers whoever pushed to it, here ")
                          + role_text(last) + ": write '" + expected + "'");
  if (answer.staleness >= 0 && last == role::aggregator)
    r.fail(w.targets[next[0]].staleness_span,
           "aggregate(all) is the shard's one source: a staleness "
           "bound needs several (computes or machines)");
  // Every aggregate written must lie on the path.
  for (std::size_t i = 0; i < routes.size(); ++i)
    for (role end : {routes[i].from, routes[i].to})
      if ((end == role::aggregator || end == role::machine_aggregator)
          && std::find(path.begin(), path.end(), end) == path.end())
        r.fail(routes[i].span, role_text(end)
                                 + " receives no gradients: no route from compute "
                                   "leads to it");
  out.staleness = answer.staleness;
  return out;
}

// The preset's head arguments and defaults; the user's own name takes machines and
// deterministic.
struct head_values {
  int argument = -1; // ssp: staleness, hierarchical: machines, backup: backups
  bool argument_given = false;
};

head_values read_head(const value_reader& r, const syntax_value& head, job_config& c) {
  auto& t = c.topology;
  head_values h;
  std::vector<std::string> keys, positional;
  const auto kind = t.preset;
  if (kind == topology_kind::ssp)
    keys = positional = {"staleness"};
  if (kind == topology_kind::hierarchical)
    keys = positional = {"machines"};
  if (kind == topology_kind::backup)
    keys = positional = {"backups"};
  if (!kind)
    keys = {"machines"};
  if (kind != topology_kind::async && kind != topology_kind::ssp)
    keys.push_back("deterministic");
  keyed_values k(r, head.text, head.arguments, keys, positional);
  const int workers = c.cluster.workers.value;
  if (auto* v = k.find("staleness")) {
    h.argument = static_cast<int>(r.integer(*v, "staleness", 0, 1000000));
    h.argument_given = true;
  }
  t.machines.value = kind == topology_kind::hierarchical || !kind ? 2 : 1;
  if (auto* v = k.find("machines")) {
    r.set(t.machines, static_cast<int>(r.integer(*v, "machines", 1, 1024)), *v);
    h.argument = t.machines.value;
    h.argument_given = true;
  }
  if (auto* v = k.find("backups")) {
    h.argument = static_cast<int>(r.integer(*v, "backups", 1, 1024));
    h.argument_given = true;
    if (h.argument >= workers)
      r.fail(v->span, "backup workers (" + std::to_string(h.argument)
                        + ") must be fewer than workers (" + std::to_string(workers) + ")");
  }
  if (kind == topology_kind::backup && !h.argument_given && workers < 2)
    r.fail(head.span,
           "backup workers (1) must be fewer than workers (" + std::to_string(workers) + ")");
  if (auto* v = k.find("deterministic"))
    r.set(t.deterministic, r.boolean(*v, "deterministic"), *v);
  return h;
}

void check_machines(const value_reader& r, const syntax_value& head, const job_config& c,
                    const std::vector<aggregation_level>& levels) {
  const auto& t = c.topology;
  const bool machine_level =
    std::any_of(levels.begin(), levels.end(),
                [](const aggregation_level& l) { return l.scope == aggregation_scope::machine; });
  const int workers = c.cluster.workers.value;
  if (machine_level && workers % t.machines.value != 0)
    r.fail(t.machines.given ? t.machines.span : head.span,
           "aggregate(machine) needs workers (" + std::to_string(workers)
             + ") to split evenly over machines (" + std::to_string(t.machines.value) + ")");
  if (!machine_level && t.machines.given && t.preset != topology_kind::hierarchical)
    r.fail(t.machines.span, "machines group computes for aggregate(machine), which no route names");
}

// What a preset promises, for the refusal of a block that compiles to something else.
std::string difference(const topology_options& want) {
  std::string text;
  for (const auto& x : routes_of(want.levels, want.staleness))
    text += (text.empty() ? "" : ", ") + to_string(x);
  return "these routes are not the preset's, which is: " + text
         + " (give a route set of your own a name of your own, e.g. 'topology mine { ... }')";
}

} // namespace

std::string to_string(const wiring_route& w) {
  std::vector<std::string> args;
  if (w.to == role::machine_aggregator)
    args.push_back("machine");
  if (w.to == role::aggregator)
    args.push_back("all");
  if (!w.fan.empty())
    args.push_back(w.fan);
  if (w.need != 0)
    args.push_back("need = " + std::to_string(w.need));
  if (w.staleness >= 0)
    args.push_back("staleness = " + std::to_string(w.staleness));
  if (w.compression.active())
    args.push_back("compress = \"" + to_string(w.compression) + "\"");
  std::string target =
    w.to == role::machine_aggregator || w.to == role::aggregator ? "aggregate" : role_text(w.to);
  std::string joined;
  for (const auto& a : args)
    joined += (joined.empty() ? "" : ", ") + a;
  return role_text(w.from) + " -> " + target + (joined.empty() ? "" : "(" + joined + ")");
}

void resolve_topology(job_config& c, const syntax_statement* st) {
  auto& t = c.topology;
  const int workers = c.cluster.workers.value;
  auto expand = [&](topology_kind kind, int argument) {
    topology_options o;
    o.workers = workers;
    use_preset(o, kind, argument);
    t.levels = o.levels;
    t.staleness = o.staleness;
    t.routes = routes_of(t.levels, t.staleness);
    return o;
  };
  if (!st) {
    t.preset = topology_kind::bsp;
    expand(topology_kind::bsp, -1);
    return;
  }
  syntax_file file{c.path, c.text, {}};
  value_reader r(file);
  if (!st->head)
    r.fail(st->section_span, "topology needs a name: a preset (" + join_names(presets)
                               + ") or, before a block of routes, a name of your own");
  if (!st->assignments.empty())
    r.fail(st->assignments.front().key_span, "a topology body holds routes 'a -> b', not keys");
  t.span = st->head->span;
  t.preset = preset_of(st->head->text);
  if (!t.preset && !st->has_block)
    r.fail(st->head->span, "unknown topology '" + st->head->text
                             + "' (presets: " + join_names(presets)
                             + "; a topology of your own writes its routes in a block)");
  r.set(t.name, st->head->text, *st->head);
  const auto head = read_head(r, *st->head, c);
  if (!st->has_block) {
    const auto want = expand(*t.preset, head.argument);
    check_machines(r, *st->head, c, want.levels);
    return;
  }
  t.explicit_wiring = true;
  const auto written = read_routes(r, *st);
  auto got = compile(r, *st, written, workers, t.machines.value, workers_origin(c));
  check_machines(r, *st->head, c, got.levels);
  if (got.levels.empty() && (t.deterministic.given))
    r.fail(t.deterministic.span, "deterministic orders an aggregate's sum, and no route names one");
  if (t.preset) {
    topology_options want;
    want.workers = workers;
    use_preset(want, *t.preset, head.argument);
    // The head's argument fills what the block leaves unwritten (ssp(2): the staleness).
    if (got.staleness < 0 && want.staleness >= 0)
      got.staleness = want.staleness;
    if (got.levels.size() == want.levels.size())
      for (std::size_t i = 0; i < got.levels.size(); ++i)
        if (got.levels[i].scope == want.levels[i].scope && got.levels[i].need == 0)
          got.levels[i].need = want.levels[i].need;
    if (got.levels != want.levels || got.staleness != want.staleness)
      r.fail(st->head->span, difference(want));
  }
  t.levels = got.levels;
  t.staleness = got.staleness;
  t.compression = got.compression;
  t.routes = routes_of(t.levels, t.staleness, t.compression);
}

void resolve_topology(job_config& c, const topology_override& o) {
  auto& t = c.topology;
  const int workers = c.cluster.workers.value;
  auto refuse = [&](const std::string& why) {
    const auto message = o.said + ": " + why + workers_origin(c);
    throw config_error(message, message);
  };
  const int argument = o.argument;
  if (o.preset == topology_kind::ssp && argument > 1000000)
    refuse("staleness must be between 0 and 1000000, got " + std::to_string(argument));
  const int machines = argument < 0 ? 2 : argument;
  if (o.preset == topology_kind::hierarchical
      && (machines < 1 || machines > 1024 || workers % machines != 0))
    refuse("aggregate(machine) needs workers (" + std::to_string(workers)
           + ") to split evenly over machines (" + std::to_string(machines) + ")");
  const int backups = argument < 0 ? 1 : argument;
  if (o.preset == topology_kind::backup && (backups < 1 || backups >= workers))
    refuse("backup workers (" + std::to_string(backups) + ") must be at least 1 and fewer than "
           + "workers (" + std::to_string(workers) + ")");
  topology_options want;
  want.workers = workers;
  use_preset(want, o.preset, argument);
  t = topology_config{};
  t.name = located<std::string>{to_string(o.preset), source_span{}, true};
  t.preset = o.preset;
  t.machines.value = want.machines;
  t.machines.given = o.preset == topology_kind::hierarchical && argument >= 0;
  t.levels = want.levels;
  t.staleness = want.staleness;
  t.routes = routes_of(t.levels, t.staleness);
}

void compress_machine_exit(topology_config& t, const compression_spec& spec) {
  t.compression.clear();
  if (spec.active()) {
    t.compression.assign(t.levels.size() + 1, compression_spec{});
    t.compression[machine_exit_hop(t.levels)] = spec;
  }
  t.routes = routes_of(t.levels, t.staleness, t.compression);
}

} // namespace troupe
