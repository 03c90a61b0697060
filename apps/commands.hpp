// The `troupe` subcommands. Each takes its arguments (after the command name) and returns the
// process exit status: 0 success, 1 a failure while running, 2 a usage error.
#pragma once

#include <string>
#include <vector>

namespace troupe {

int train_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
/// `troupe eval`: a saved checkpoint's accuracy, top-k and loss on a dataset.
int eval_command(const std::vector<std::string>& args);
/// `troupe bench transport`: peer channels against plain TCP between processes (apps/bench/).
int transport_bench_command(const std::vector<std::string>& args);
/// `troupe bench decode`: RecordIO JPEG decoding + augmentation images/s (apps/bench/).
int decode_bench_command(const std::vector<std::string>& args);
/// `troupe bench scaling`: samples/s against workers on emulated hosts (scripts/bench_scaling.py).
int scaling_bench_command(const std::vector<std::string>& args);
/// `troupe node`: one process (scheduler, server or worker) of a training cluster.
int node_command(const std::vector<std::string>& args);
int devices_command(const std::vector<std::string>& args);
/// `troupe check CONFIG`: validate a config, print resolved values and the actor plan.
int check_command(const std::vector<std::string>& args);
/// `troupe graph CONFIG`: the actor plan as Graphviz DOT.
int graph_command(const std::vector<std::string>& args);
/// `troupe launch`: start a scheduler, servers and workers (`troupe node`), here or over ssh,
/// and supervise them; exits with the first failing process's status (apps/launch/).
int launch_command(const std::vector<std::string>& args);
/// `troupe ctl --scheduler HOST:PORT VERB`: ask a running cluster's scheduler for its status,
/// or to drain a worker (troupe/cluster/ctl_client.hpp).
int ctl_command(const std::vector<std::string>& args);
/// `troupe im2rec PREFIX ROOT`: pack JPEGs into MXNet RecordIO files (PREFIX.rec, .idx, .lst).
int im2rec_command(const std::vector<std::string>& args);
/// `troupe timeline FILE PART...`: merge a cluster's timeline parts onto the scheduler's clock.
int timeline_command(const std::vector<std::string>& args);

/// Splits "a,b,,c" into its non-empty items.
std::vector<std::string> split_names(const std::string& text);
/// Splits "5,8,12" into numbers; throws usage_error naming `flag` on a bad element.
std::vector<double> parse_number_list(const std::string& flag, const std::string& text);
/// Splits "3,32,32" into a shape; throws usage_error naming `flag`.
std::vector<std::int64_t> parse_shape(const std::string& flag, const std::string& text);

} // namespace troupe
