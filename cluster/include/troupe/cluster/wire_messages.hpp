// The messages nodes exchange, as plain C++ values: what cluster/schema/wire.capnp carries,
// decoded and checked (troupe/cluster/frame_codec.hpp). No Cap'n Proto type leaks out of the
// codec, so the rest of the cluster layer and its tests never touch a wire reader.
//
// Tensors arrive as views into the received frame (tensor::view_of): a push or a weight set
// read from the network costs no copy of its values. Their shapes come from the receiver's
// own key table (wire_keys), never from the wire, so a peer cannot make a node build a tensor
// of a shape the plan does not have.
//
// Thread-safety: plain values.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/graph/placement.hpp>
#include <troupe/kernels/tensor.hpp>

namespace troupe {

/// The protocol version this build speaks (wire.capnp's protocolVersion).
std::uint32_t wire_protocol_version();

// A node's role is graph's node_kind (placement.hpp): the plan's vocabulary, one for every
// layer. Only scheduler, server and worker cross the wire; a one-process node never connects.

constexpr std::size_t nonce_bytes = 32;
constexpr std::size_t mac_bytes = 32;
using nonce = std::array<std::uint8_t, nonce_bytes>;
using mac = std::array<std::uint8_t, mac_bytes>;

/// First frame each way on a connection.
struct hello_message {
  node_kind role = node_kind::worker;
  std::string name; ///< at most max_name_bytes
  nonce challenge{};
  std::uint64_t plan_hash = 0;
  static constexpr std::size_t max_name_bytes = 256;
};

/// Second frame each way: the sender's proof of the cluster secret (cluster/admission.hpp).
struct proof_message {
  mac proof{};
};

/// A gradient_push to shard `shard` of the plan; `request` numbers it on its connection.
/// Requests (push, pull, control) carry the milliseconds left to their originator's deadline
/// when written: a duration, so the peer's clock need not agree (the peer's skeleton makes a
/// local deadline of it). At most max_remaining_ms.
constexpr std::uint64_t max_remaining_ms = std::uint64_t{100} * 365 * 24 * 3600 * 1000;

struct push_message {
  std::uint64_t request = 0;
  std::uint32_t shard = 0;
  gradient_push push;
  std::uint64_t remaining_ms = 0;
};

struct pull_message {
  std::uint64_t request = 0;
  std::uint32_t shard = 0;
  std::uint64_t remaining_ms = 0;
  /// The weights before step `before_step` (-1: the step in flight there) rather than the
  /// current ones (push_target_actor's rewind, messages.hpp).
  bool rewind = false;
  std::int64_t before_step = -1;
  std::int32_t source = 0; ///< with rewind: the asker's gradient_push::source
};

/// A shard's answer to push or pull `request`.
struct weights_message {
  std::uint64_t request = 0;
  std::uint32_t shard = 0;
  weight_set weights;
};

/// Request `request` failed; the error as a value.
struct failure_message {
  std::uint64_t request = 0;
  errc code = errc::internal;
  std::string text; ///< at most max_text_bytes
  static constexpr std::size_t max_text_bytes = 4096;
};

struct heartbeat_message {
  std::uint64_t sequence = 0;
};

struct shutdown_message {
  std::string reason;    ///< at most failure_message::max_text_bytes
  bool finished = false; ///< the run ended as planned (not a failure)
  /// The plan node whose loss made the sender stop (a worker that lost a server), so the
  /// receiver names the cause whichever report reaches it first; -1: the sender's own cause.
  std::int32_t lost_node = -1;
  /// The receiver's term is fenced (fence_message): it was declared lost and others run its
  /// part, so it must take no further part in the run.
  bool fenced = false;
};

/// A node asks the scheduler for its place (after admission).
/// Bytes moved with one peer, per message kind (kind_name order), headers included.
struct peer_traffic {
  std::string peer; ///< the peer's node name, at most hello_message::max_name_bytes
  std::vector<std::uint64_t> bytes_in, bytes_out; ///< at most max_kinds each
  static constexpr std::size_t max_kinds = 64;
};

/// How long a node's barriers (aggregators) waited for one source node's contributions once
/// every other source of a step had come: the longest of its barriers, totals since it started.
struct node_wait {
  std::string node; ///< a plan node name, at most hello_message::max_name_bytes
  double seconds = 0;
  std::uint64_t steps = 0; ///< steps it came last in
};

/// A node's answer to a traffic query: what it moved with each peer since it started, and what
/// its barriers waited for.
struct traffic_message {
  std::int64_t epoch = 0;
  std::vector<peer_traffic> peers; ///< at most max_peers
  std::vector<node_wait> waits{};  ///< at most max_peers
  static constexpr std::size_t max_peers = 4096;
};

/// Where a member stands in the run it kept running while its scheduler was away (a join to
/// a scheduler restarted with --resume).
struct rejoin_message {
  std::uint32_t node = 0; ///< its plan node
  std::uint32_t threads = 0;
  std::int64_t epoch = -1;        ///< a worker: the latest epoch its computes were asked to train
  std::int64_t applied_step = -1; ///< a server: the last step its shards applied
  std::vector<std::uint32_t>
    adopted; ///< lost worker nodes whose computes it runs; at most max_nodes
  std::vector<std::uint32_t>
    promoted; ///< lost server nodes whose shards it serves; at most max_nodes
  /// Its answer to the last traffic query (the previous epoch's end), from which a restarted
  /// scheduler counts the epoch's traffic; none: it answered none.
  std::optional<traffic_message> counted{};
  std::uint64_t term = 0; ///< the term its assignment gave it, which it keeps; 0: none
  static constexpr std::size_t max_nodes = 4096;
};

struct join_message {
  node_kind role = node_kind::worker;
  std::string host; ///< where it listens (servers), at most max_host_bytes
  std::uint16_t port = 0;
  std::uint32_t pid = 0;
  std::int32_t rank = -1;     ///< the rank within its role its launcher gave it; -1: any free one
  std::uint64_t job_hash = 0; ///< its own config's job (job_hash_without_counts); 0: none
  std::vector<char>
    job{}; ///< that job serialized (job_transfer.hpp), at most max_job_bytes; empty: none
  /// Not on the wire: the address the connection came from, as the receiving channel saw it.
  std::string seen_from{};
  /// A worker that waits, unassigned, to take over a lost worker's node (troupe launch --spares,
  /// troupe node --spare); a worker joining a run in training is one too.
  bool spare = false;
  /// A member of a run in training joining its restarted scheduler; none: a first join.
  std::optional<rejoin_message> rejoin{};
  /// The joiner's run clock when it sent the join (timeline_clock_micros); 0: none.
  std::int64_t sent_micros = 0;
  static constexpr std::size_t max_host_bytes = 255;
  static constexpr std::size_t max_job_bytes = std::size_t{16} << 20;
};

/// Where server node `node` listens.
struct endpoint {
  std::uint32_t node = 0;
  std::string host;
  std::uint16_t port = 0;
};

/// The scheduler's answer to a join: rank, plan node, the job (serialized, see
/// troupe/cluster/job_transfer.hpp) with its hash, the plan hash and the data facts to plan
/// with, and every server's endpoint.
/// A join's round trip on both sides' run clocks (timeline_clock_micros): the member's join
/// sent, received by the scheduler, and the assignment sent. With the assignment's arrival the
/// member has the four stamps of one exchange and reckons its clock's offset to the
/// scheduler's (clock_offset_of). All 0: not measured.
struct clock_stamps {
  std::int64_t join_sent = 0;
  std::int64_t join_received = 0;
  std::int64_t sent = 0;
  bool measured() const { return join_sent > 0 && join_received > 0 && sent > 0; }
};

struct assignment_message {
  std::uint32_t rank = 0;
  std::uint32_t node = 0;
  std::vector<char> job; ///< at most max_job_bytes
  std::uint64_t job_hash = 0;
  std::uint64_t plan_hash = 0;
  data_facts facts;
  std::vector<endpoint> servers; ///< at most max_servers
  /// The compute threads the scheduler was given (--threads or train.threads); 0: none given,
  /// each node uses its own default (docs/threads.md).
  std::uint32_t threads = 0;
  /// A spare given the node of a lost worker during training: its computes are adopted
  /// (they recompute the step in flight) and it says ready naming that node.
  bool adopt = false;
  clock_stamps clock{};
  /// With adopt: the compute ranks of `node` it runs (and their loaders); empty: all of them.
  std::vector<std::uint32_t> ranks; ///< at most max_ranks
  static constexpr std::size_t max_ranks = 4096;
  /// The receiver's term (node_fences.hpp): every frame it sends carries it. At least 1.
  std::uint64_t term = 1;
  static constexpr std::size_t max_job_bytes = std::size_t{16} << 20;
  static constexpr std::size_t max_servers = 4096;
};

struct ready_message {
  std::uint32_t node = 0;
  std::uint16_t port = 0;    ///< where a server listens for workers now (join's host); 0: none
  std::uint32_t threads = 0; ///< the compute threads the node uses
};

enum class control_kind : std::uint8_t { train, validate, end_epoch };

/// The coordinator to the compute of rank `rank`.
struct control_message {
  std::uint64_t request = 0;
  std::uint32_t rank = 0;
  control_kind kind = control_kind::train;
  std::int64_t epoch = 0;
  std::uint64_t remaining_ms = 0; ///< train, validate; 0 for end_epoch (one way)
};

/// A compute actor's answer to control `request`.
struct report_message {
  std::uint64_t request = 0;
  phase_report report;
};

struct batch_report_message {
  batch_report report;
};

/// The scheduler asks a node for its traffic so far (at the end of epoch `epoch`).
struct traffic_query_message {
  std::int64_t epoch = 0;
};

/// The scheduler tells a worker to run the computes of worker node `node` that it names in
/// `ranks` (empty: every one of them): a lost worker's, or ranks moved to it alone.
struct adopt_message {
  std::uint32_t node = 0;
  std::vector<std::uint32_t> ranks; ///< at most assignment_message::max_ranks
};

/// A primary shard's applied push passed on to its backup on another server (shard_backups = 1):
/// a push_message's fields (its own type: it is answered by a replicated_message).
struct replicate_message : push_message {};

/// The backup's answer to replicate `request`: the pushes it has applied.
struct replicated_message {
  std::uint64_t request = 0;
  std::int64_t updates = 0;
};

/// The shards of lost server node `node` are now served by server node `server` (their
/// backups, promoted): to that server first, then to every worker.
struct promote_message {
  std::uint32_t node = 0;
  std::uint32_t server = 0;
};

/// A worker asks the scheduler to let it leave, its computes moved to other workers (drain).
struct leave_message {
  std::string reason; ///< what asked it ("SIGTERM"); at most failure_message::max_text_bytes
};

/// The scheduler's answer to a leave: granted (the worker ends; its computes are adopted once
/// it has gone) or refused with why (it trains on).
struct release_message {
  bool granted = false;
  std::string reason; ///< refused: why; at most failure_message::max_text_bytes
};

/// The scheduler tells a worker to stop running the computes of worker node `node` named in
/// `ranks` (empty: all it runs of that node): a worker that joined in training serves them now.
struct cede_message {
  std::uint32_t node = 0;
  std::vector<std::uint32_t> ranks; ///< at most assignment_message::max_ranks
};

/// troupe ctl asks the scheduler to run `verb` with `args` (run_control_actor).
struct command_message {
  std::uint64_t request = 0;
  std::string verb;              ///< at most max_word_bytes
  std::vector<std::string> args; ///< at most max_args, each at most failure_message::max_text_bytes
  std::uint64_t remaining_ms = 0;
  static constexpr std::size_t max_word_bytes = 64;
  static constexpr std::size_t max_args = 64;
};

/// The answer to command `request`: text for a person and, where the verb has one, JSON.
struct command_result_message {
  std::uint64_t request = 0;
  std::string text; ///< at most max_answer_bytes
  std::string json; ///< at most max_answer_bytes
  static constexpr std::size_t max_answer_bytes = 1 << 20;
};

/// The scheduler asks a worker to leave the run (troupe ctl drain), as its host's SIGTERM would.
struct drain_message {
  std::string reason; ///< at most failure_message::max_text_bytes
};

/// The scheduler asks a server to change an optimizer hyper-parameter in every shard it holds
/// (troupe ctl set): shard_change's fields.
struct change_message {
  std::uint64_t request = 0;
  shard_change change;
  std::uint64_t remaining_ms = 0;
};

/// The answer to change `request`: how many shards took it.
struct changed_message {
  std::uint64_t request = 0;
  std::uint32_t shards = 0;
};

/// The scheduler declared the process of term `term` (plan node `node`) lost: its receiver takes
/// no frame of that term again (node_fences.hpp).
struct fence_message {
  std::uint32_t node = 0;
  std::uint64_t term = 1; ///< at least 1
  std::string reason;     ///< at most failure_message::max_text_bytes
};

enum class checkpoint_kind : std::uint8_t { save, restore };

/// The scheduler's checkpoint actor to a member's part of a cluster checkpoint: save the
/// node's part after epoch `epoch` to file `path`, or restore the node's share of the
/// checkpoint of epoch `epoch` saved under prefix `path`.
struct checkpoint_message {
  std::uint64_t request = 0;
  checkpoint_kind kind = checkpoint_kind::save;
  std::int64_t epoch = 0;
  std::string path; ///< at most max_path_bytes
  std::uint64_t remaining_ms = 0;
  static constexpr std::size_t max_path_bytes = 4096;
};

/// The answer to checkpoint `request`: the part written (file name, size, checksum, as the
/// manifest records them), or for a restore an empty file and 0 bytes.
struct checkpoint_done_message {
  std::uint64_t request = 0;
  std::string file; ///< at most checkpoint_message::max_path_bytes
  std::uint64_t bytes = 0;
  std::string checksum; ///< at most max_checksum_bytes
  static constexpr std::size_t max_checksum_bytes = 256;
};

using wire_message = std::variant<
  hello_message, proof_message, push_message, pull_message, weights_message, failure_message,
  heartbeat_message, shutdown_message, join_message, assignment_message, ready_message,
  control_message, report_message, batch_report_message, traffic_query_message, traffic_message,
  checkpoint_message, checkpoint_done_message, adopt_message, replicate_message, replicated_message,
  promote_message, leave_message, release_message, cede_message, command_message,
  command_result_message, drain_message, change_message, changed_message, fence_message>;

/// "hello", "proof", "push", "pull", "weights", "failure", "heartbeat", "shutdown", "join",
/// "assignment", "ready", "control", "report", "batch report", "traffic query", "traffic",
/// "checkpoint", "checkpoint done", "adopt", "replicate", "replicated", "promote", "leave",
/// "release", "cede", "command", "command result", "drain", "change", "changed", "fence": the kind
/// of a message, for logs and traffic counters.
const char* kind_name(const wire_message& message);
/// The same by variant index ("unknown" past the last kind).
const char* kind_name(std::size_t index);
constexpr std::size_t wire_kinds = std::variant_size_v<wire_message>;

/// The shapes of every shard's keys, as the receiver's placement plan has them: shards[s][k]
/// is the shape of key k of shard s. A decoder checks pushes and weights against it.
struct wire_keys {
  std::vector<std::vector<shape_t>> shards;
};

} // namespace troupe
