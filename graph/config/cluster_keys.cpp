// The `cluster { }` section's keys (key_table.hpp): how the shards, the pushes and the
// processes of a run are laid out, and how those processes reach each other.
#include <troupe/graph/config/key_assignment.hpp>

#include "graph/config/key_builder.hpp"
#include "graph/config/value_reader.hpp"

namespace troupe::key_entries {

namespace {

template <auto Field> constexpr auto cluster = &job_field<&job_config::cluster, Field>;

constexpr double ceiling = static_cast<double>(key_plan_options::max_bytes);

// servers = 0 says why at least one is needed, before the range's wording.
void read_servers(const value_reader& r, const syntax_value& v, key_target& t) {
  if (v.type == syntax_value::kind::number && v.integral && v.number == 0)
    r.fail(v.span, "servers = 0: no shard would own the model's keys (need at least 1)");
  const auto& key = config_key_of("cluster.servers");
  r.set(t.job.cluster.servers, static_cast<int>(r.integer(v, "servers", *key.range)), v);
}

// A byte count below its floor says why the floor is there ("a slice holds at least one
// float"); far below, the reader's own wording.
std::int64_t byte_count(const value_reader& r, const syntax_value& v, const char* key) {
  const auto& range = *config_key_of(std::string("cluster.") + key).range;
  const auto min = static_cast<std::int64_t>(range.min);
  if (v.type == syntax_value::kind::number && v.integral && v.number < range.min
      && v.number > -ceiling)
    r.fail(v.span, std::string(key) + " must be at least " + std::to_string(min) + " (" + range.why
                     + "), got " + std::to_string(static_cast<std::int64_t>(v.number)));
  return r.integer(v, key, min, key_plan_options::max_bytes);
}

void read_slice_bytes(const value_reader& r, const syntax_value& v, key_target& t) {
  r.set(t.job.cluster.slice_bytes, byte_count(r, v, "slice_bytes"), v);
}

void read_group_bytes(const value_reader& r, const syntax_value& v, key_target& t) {
  r.set(t.job.cluster.group_bytes, byte_count(r, v, "group_bytes"), v);
}

void check_worker_loss(const value_reader& r, const syntax_value& v, key_target& t) {
  const auto& policy = t.job.cluster.on_worker_loss.value;
  if (policy != "stop" && policy != "continue" && policy != "adopt")
    r.fail(v.span, "on_worker_loss must be stop, continue or adopt, got " + policy);
}

void check_balance(const value_reader& r, const syntax_value& v, key_target& t) {
  const auto& balance = t.job.cluster.balance.value;
  if (balance != "off" && balance != "auto")
    r.fail(v.span, "balance must be off or auto, got " + balance);
}

void check_congestion(const value_reader& r, const syntax_value& v, key_target& t) {
  if (!congestion_control_name(t.job.cluster.tcp_congestion.value))
    r.fail(v.span, "tcp_congestion must be auto, system or a congestion control's name (lower "
                   "case, e.g. cubic), got "
                     + t.job.cluster.tcp_congestion.value);
}

void check_backward(const value_reader& r, const syntax_value& v, key_target& t) {
  const double ms = t.job.cluster.backward_ms.value;
  if (!backward_ms_allowed(ms))
    r.fail(v.span, "backward_ms must be -1 (the compute stand-in's backward) or 0 to "
                     + shortest_number(config_key_of("cluster.backward_ms").range->max)
                     + " milliseconds, got " + shortest_number(ms));
}

} // namespace

std::vector<config_key> cluster_keys() {
  using k = key_type;
  return {
    entry("cluster", "servers", k::integer, cluster<&cluster_config::servers>)
      .within(whole(1, 1024))
      .read_by(read_servers)
      .help_is("parameter servers; must be >= 1 (0 would leave keys no shard owns)"),
    entry("cluster", "workers", k::integer, cluster<&cluster_config::workers>)
      .within(whole(1, 1024))
      .flag_is("workers")
      .help_is("compute actors, each with its own model replica and part of the data",
               "in troupe node and troupe launch one per worker process unless given"),
    entry("cluster", "shards", k::integer, cluster<&cluster_config::shards>)
      .within(whole(1, 1024))
      .flag_is("shards")
      .default_is("= `servers`")
      .help_is("parameter shard actors the weights are spread over"),
    entry("cluster", "slice_bytes", k::integer, cluster<&cluster_config::slice_bytes>)
      .within(whole(4, ceiling, "a slice holds at least one float"))
      .read_by(read_slice_bytes)
      .flag_is("slice-bytes")
      .help_is("parameters above this many bytes are cut into slices spread over the shards",
               "each slice its own key of at most this size"),
    entry("cluster", "group_bytes", k::integer, cluster<&cluster_config::group_bytes>)
      .within(whole(0, ceiling, "0 = never bundle"))
      .read_by(read_group_bytes)
      .flag_is("group-bytes")
      .help_is("keys below this many bytes are bundled into one push per shard (0: never bundle)",
               "up to this size; keys of at least this size travel alone"),
    entry("cluster", "overlap", k::boolean, cluster<&cluster_config::overlap>)
      .help_is("compute actors push each group as soon as backward has produced it; false: all "
               "pushes after backward (--no-overlap)"),
    entry("cluster", "priority", k::boolean, cluster<&cluster_config::priority>)
      .help_is(
        "in a cluster run, channels write control frames first and pushes, their answers and "
        "backups first layers first (the order the next forward needs them); false: "
        "backward's order (--no-priority)",
        "docs/protocol.md, \"Priority\""),
    entry("cluster", "server_nodes", k::integer, cluster<&cluster_config::server_nodes>)
      .within(whole(0, 1024))
      .flag_is("server-nodes")
      .help_is("server processes of a cluster run, holding the shards (0 with worker_nodes = 0: "
               "one process)",
               "the shards must divide evenly over them (`troupe node`, `troupe launch -s`)"),
    entry("cluster", "worker_nodes", k::integer, cluster<&cluster_config::worker_nodes>)
      .within(whole(0, 1024))
      .flag_is("worker-nodes")
      .help_is("worker processes of a cluster run, holding loaders and compute actors",
               "the workers must divide evenly over them, and a topology with "
               "`aggregate(machine)` has one machine per worker process"),
    entry("cluster", "on_worker_loss", k::name, cluster<&cluster_config::on_worker_loss>)
      .checked_by(check_worker_loss)
      .flag_is("on-worker-loss")
      .default_is(
        "`adopt` in bsp (one aggregation level summing every compute's push), else `stop`")
      .help_is(
        "stop, continue without a lost worker process (async and ssp only), or adopt its "
        "computes on another worker process (every topology)",
        "`stop`: the scheduler names the node and every process exits non-zero; `adopt`: a "
        "surviving worker process recomputes the step in flight (with the machine's aggregators "
        "in hierarchical and local_sync), so in bsp and hierarchical the final weights are "
        "those of a run that lost nothing, and in ssp, async and local_sync each adopted "
        "compute goes on from its step at the shards (docs/operations.md, \"A lost "
        "worker\"); "
        "`continue`: only where computes push straight to the shards, as in async and ssp; "
        "its computes get no more work, its part of the data goes unused, ssp's shards stop "
        "waiting for them"),
    entry("cluster", "balance", k::name, cluster<&cluster_config::balance>)
      .checked_by(check_balance)
      .flag_is("balance")
      .help_is(
        "off, or auto: at each gate between epochs the scheduler measures every worker "
        "process's time per compute rank and moves ranks so a faster process runs more of them",
        "a process is taken to serve its ranks in turn; one move at a time, made at the gate "
        "after the next epoch's training, weights unchanged; needs on_worker_loss = adopt and "
        "ranks that run apart (no aggregate(machine)) (docs/operations.md, \"Balance\")"),
    entry("cluster", "shard_backups", k::integer, cluster<&cluster_config::shard_backups>)
      .within(whole(0, 1))
      .flag_is("shard-backups")
      .help_is("backups of each server process's shards: 0, or 1 for a backup on the next server "
               "process, promoted when the server is lost",
               "the run goes on with the weights of a run that lost nothing (docs/operations.md, "
               "\"A lost server\"); 1 needs at least 2 server processes; ignored in one process"),
    entry("cluster", "replicas", k::integer, cluster<&cluster_config::replicas>)
      .within(whole(1, 2))
      .flag_is("replicas")
      .help_is("the old name of shard_backups, still read: replicas = N is shard_backups = N - 1",
               "give one of the two, not both"),
    entry("cluster", "scheduler", k::text, cluster<&cluster_config::scheduler>)
      .flag_is("scheduler")
      .default_is("none")
      .help_is("`\"HOST:PORT\"` where a cluster's scheduler listens"),
    entry("cluster", "listen", k::text, cluster<&cluster_config::listen>)
      .flag_is("listen")
      .help_is("where a server process listens for workers"),
    entry("cluster", "join_timeout", k::real, cluster<&cluster_config::join_timeout>)
      .within(real(1, 86400))
      .flag_is("join-timeout")
      .help_is("seconds the scheduler waits for every process to join and be ready, and a process "
               "retries reaching the scheduler"),
    entry("cluster", "heartbeat", k::real, cluster<&cluster_config::heartbeat>)
      .within(real(0.05, 600))
      .flag_is("heartbeat")
      .help_is("seconds between heartbeats on every channel between processes"),
    entry("cluster", "peer_timeout", k::real, cluster<&cluster_config::peer_timeout>)
      .within(real(0.2, 3600))
      .flag_is("peer-timeout")
      .help_is("seconds of silence after which a peer counts as lost (more than twice heartbeat)",
               "no byte from the peer; a frame still arriving counts"),
    entry("cluster", "request_timeout", k::real, cluster<&cluster_config::request_timeout>)
      .within(real(0.1, 86400))
      .flag_is("request-timeout")
      .help_is("seconds a request within a step (push, pull, batch) may wait for its answer",
               "the same limit in one process and across processes: the originator sets the "
               "deadline and every hop keeps it"),
    entry("cluster", "tcp_congestion", k::name, cluster<&cluster_config::tcp_congestion>)
      .checked_by(check_congestion)
      .flag_is("tcp-congestion")
      .help_is("the TCP congestion control of channels between hosts: auto, system or an algorithm",
               "`auto` runs cubic where the process may set it (root, or cubic in "
               "`net.ipv4.tcp_allowed_congestion_control`) and the host's default otherwise (the "
               "node says so), `system` the host's default, any other name that algorithm (a node "
               "that may not set it refuses to start, naming what the host offers); why: "
               "docs/operations.md, \"TCP congestion control\""),
    entry("cluster", "link_mbit", k::integer, cluster<&cluster_config::link_mbit>)
      .within(whole(0, 10000000, "0: not stated"))
      .flag_is("link-mbit")
      .help_is("the rate of each host's link per direction in Mbit/s",
               "every node paces its TCP channels at an equal share of it and, with two or more "
               "worker nodes, every worker writes a step's pushes in one fixed order "
               "(docs/operations.md, \"Paced channels and a fixed push order\")"),
    entry("cluster", "backward_ms", k::real, cluster<&cluster_config::backward_ms>)
      .within(real(-1, 3600e3))
      .checked_by(check_backward)
      .flag_is("backward-ms")
      .range_words("-1, or between 0 and 3600000")
      .help_is("with link_mbit: milliseconds a step's backward takes, which sets how much of the "
               "last layers each channel writes first",
               "-1: the compute stand-in's backward (two thirds of its step), else 0"),
  };
}

} // namespace troupe::key_entries
