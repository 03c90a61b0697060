// `troupe timeline FILE PART...`: one trace from the timeline parts of a cluster's nodes (each
// `troupe node --timeline PART`), every part on the scheduler's clock by the offset it measured
// at join (troupe/io/timeline.hpp). `troupe launch --timeline` merges its nodes' parts itself;
// nodes started by hand (mpirun, Slurm, one per machine) are merged with this.
#include "apps/commands.hpp"

#include <cstdint>
#include <iostream>

#include <troupe/io/atomic_file.hpp>
#include <troupe/io/timeline.hpp>

#include "apps/flags.hpp"
#include "apps/run_output.hpp"

namespace troupe {

int timeline_command(const std::vector<std::string>& args) {
  flag_set f("timeline FILE PART...",
             "Merges the timeline parts of a cluster's nodes (troupe node --timeline PART) into "
             "FILE, a Chrome trace that Perfetto and chrome://tracing open: each part becomes one "
             "process, shifted onto the scheduler's clock by the offset its node measured when it "
             "joined (the scheduler's own part, and a part of a node that measured none, keep "
             "their clock). troupe launch --timeline does this itself.");
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") {
      std::cout << f.help();
      return 0;
    }
  for (const auto& arg : args)
    if (arg.rfind("-", 0) == 0)
      throw usage_error("unknown flag '" + arg + "' (it takes FILE and the parts only)");
  if (args.size() < 2)
    throw usage_error("expected FILE and at least one PART, e.g. troupe timeline run.json "
                      "scheduler.json worker0.json");
  std::vector<timeline_part> parts;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == args[0])
      throw usage_error("FILE " + args[0] + " is also a part: the merge would overwrite it");
    parts.push_back({args[i], 0});
  }
  std::size_t shifted = 0;
  const auto merged = merge_timelines(parts, &shifted);
  make_parent_folder("FILE " + args[0], args[0]);
  write_file_atomically(args[0], std::vector<std::uint8_t>(merged.begin(), merged.end()));
  std::cout << "timeline: merged " << parts.size() << " part(s) into " << args[0] << "; " << shifted
            << " shifted onto the scheduler's clock, " << parts.size() - shifted
            << " on their own\n";
  return 0;
}

} // namespace troupe
