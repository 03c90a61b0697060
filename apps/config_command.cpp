// `troupe check CONFIG` and `troupe graph CONFIG`: validate a job without training, a config
// with any of `troupe train`'s flags over it (config_command.hpp). check prints every resolved
// value (defaults marked) and the placement plan the session would spawn, with its hash; graph
// prints the plan as Graphviz DOT. A config's error prints its compiler-style diagnostic, exit 2.
// Neither opens data files: a config is checked, not the data it names, so the plan counts steps
// from the datasets' standard sizes (expected_data_facts); a run that opens the data plans again
// from what it finds. `troupe check CONFIG --push-groups` prints only the push groups, one line
// each, for tools that move the same messages with another system (scripts/bench_pslite.py), with
// each group's share of a compute stand-in's step (stand_in_timing.hpp), so such a tool times its
// steps as ours. `troupe check --reference` prints the key table (key_table.hpp) as docs/dsl.md
// holds it.
#include <iomanip>
#include <iostream>

#include "apps/config_command.hpp"

#include "apps/commands.hpp"
#include "apps/config_options.hpp"
#include "apps/flags.hpp"
#include <troupe/actors/stand_in_timing.hpp>
#include <troupe/graph/config/job_plan.hpp>
#include <troupe/graph/config/key_table.hpp>
#include <troupe/graph/zoo.hpp>

namespace troupe {

namespace {

const char* check_summary =
  "Checks a job, as a .troupe config (docs/dsl.md) with the training flags given over it, and "
  "prints every resolved value and the actor plan a run would spawn. Takes every flag troupe "
  "train takes.";
const char* graph_summary =
  "Prints the actor plan of a job, a .troupe config (docs/dsl.md) with the training flags "
  "given over it, as Graphviz DOT.";

// CONFIG as the first argument is --config CONFIG.
std::vector<std::string> with_config_flag(const std::vector<std::string>& args) {
  if (args.empty() || args[0].rfind("-", 0) == 0)
    return args;
  std::vector<std::string> out{"--config", args[0]};
  out.insert(out.end(), args.begin() + 1, args.end());
  return out;
}

int with_config(const char* command, const std::vector<std::string>& args,
                void (*body)(const job_config&, const placement_plan&, const check_request&)) {
  if (std::string(command) == "check" && args.size() == 1 && args[0] == "--reference") {
    std::cout << key_reference();
    return 0;
  }
  auto request = parse_check_args(command, args);
  if (request.cli.help) {
    std::cout << request.cli.help_text;
    return 0;
  }
  if (request.reference)
    throw usage_error("--reference prints every config key and reads no config: give it alone");
  const auto& cli = request.cli;
  try {
    body(cli.config, plan_config(cli.config, cli.job, expected_data_facts(cli.job)), request);
    return 0;
  } catch (const config_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
}

} // namespace

check_request parse_check_args(const std::string& command, const std::vector<std::string>& args) {
  check_request request;
  const bool check = command == "check";
  auto own = [&](flag_set& f) {
    f.set_operands("[CONFIG]");
    if (!check)
      return;
    f.add_switch("reference", request.reference,
                 "print every config key (default, range, flag, meaning) as docs/dsl.md's "
                 "tables, without a config");
    f.add_switch("push-groups", request.push_groups,
                 "print only the pushes a worker sends per step, in backward order, one line each: "
                 "`push_group G shard S node NODE elements N work W` (W: the group's share of a "
                 "compute stand-in's step) and every key as NAME=ELEMENTS");
  };
  request.cli =
    parse_train_flags(with_config_flag(args), command, check ? check_summary : graph_summary, own);
  // A check shows the language's default thread count, not this machine's (docs/dsl.md).
  auto& threads = request.cli.config.run.threads;
  if (!threads.given)
    threads.value = job_config{}.run.threads.value;
  return request;
}

// The push groups in the order backward completes them (the stand-in's order); NODE is the
// process holding the group's shard ("-" in one process); W the group's share of the step, from
// the model's work (built here, as a worker builds its replica).
void print_push_groups(std::ostream& out, const job_config& c, const placement_plan& p) {
  const auto replica = build_model(model_spec_of(c));
  const stand_in_timing timing(replica->forward_work_by_slot(), p.keys.shards, p.keys.groups);
  for (std::size_t g = 0; g < p.keys.groups.size(); ++g) {
    const auto& group = p.keys.groups[g];
    const auto& shard = p.actors[p.actor(plan_role::shard, static_cast<int>(group.shard))];
    out << "push_group " << g << " shard " << group.shard << " node "
        << (p.nodes.size() > 1 ? p.nodes[static_cast<std::size_t>(shard.node)].name : "-")
        << " elements " << group.elements << " work " << std::setprecision(9) << timing.share(g);
    for (auto k : group.keys)
      for (const auto& key : p.key_table)
        if (key.shard == group.shard && key.index == k)
          out << ' ' << key.name << '=' << key.slice.length;
    out << '\n';
  }
}

int check_command(const std::vector<std::string>& args) {
  return with_config("check", args,
                     [](const job_config& c, const placement_plan& p, const check_request& n) {
                       if (n.push_groups)
                         return print_push_groups(std::cout, c, p);
                       for (const auto& note : c.notes) // what resolving changed, as a run says
                         std::cout << "# Note: " << note << '\n';
                       print_config(std::cout, c);
                       print_plan(std::cout, p);
                     });
}

int graph_command(const std::vector<std::string>& args) {
  return with_config("graph", args,
                     [](const job_config& c, const placement_plan& p, const check_request&) {
                       std::cout << plan_to_dot(p, c.path);
                     });
}

} // namespace troupe
