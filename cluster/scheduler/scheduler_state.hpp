// The scheduler node's state (scheduler_node.cpp) and what its traffic gathering
// (scheduler_traffic.cpp) does with it. Private to cluster/.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/node_control.hpp>
#include <troupe/cluster/node_fences.hpp>
#include <troupe/cluster/push_relay.hpp>
#include <troupe/cluster/run_changes.hpp>
#include <troupe/cluster/traffic_registry.hpp>
#include <troupe/cluster/wire_messages.hpp>
#include <troupe/graph/placement.hpp>

#include "cluster/epoch_traffic.hpp"
#include "cluster/node_common.hpp"
#include "cluster/scheduler/scheduler_phases.hpp"

namespace troupe {

using traffic_due_atom = caf::atom_constant<caf::atom("trafficdue")>;

/// What the coordinator drives a remote compute through when lost workers are adopted
/// (scheduler_adoption.cpp): compute_actor, plus (repoint_atom, compute) from the scheduler,
/// which gives it the compute's new home; phases stalled by the loss are asked there again.
using compute_relay_actor = compute_actor::extend<caf::reacts_to<repoint_atom, compute_actor>>;
using cause_due_atom = caf::atom_constant<caf::atom("causedue")>;

/// The scheduler node: the node-control protocol its channels speak to it, the gate between its
/// session's epochs (where it gathers each epoch's traffic: scheduler_traffic.cpp), the host's
/// run request and its interrupt.
using scheduler_node_actor =
  scheduler_inbox::extend_with<epoch_gate_actor>::extend_with<run_control_actor>::extend<
    caf::replies_to<run_atom>::with<training_result>, caf::reacts_to<interrupt_atom, std::string>>;
/// The scheduler as it sees itself: also its own deadlines, which only it sends itself.
using scheduler_self_actor =
  scheduler_node_actor::extend<caf::reacts_to<join_deadline_atom>, caf::reacts_to<grace_over_atom>,
                               caf::reacts_to<cause_due_atom>,
                               caf::reacts_to<traffic_due_atom, std::int64_t>>;

/// The seconds of training each compute rank's last training phase took (its phase_report's
/// step_seconds), with that phase's epoch: what the relays see, and balance = auto weighs.
/// Written by the relays, read by the scheduler: thread-safe.
class rank_times {
public:
  void record(int rank, std::int64_t epoch, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    times_[rank] = {epoch, seconds};
  }
  /// Rank `rank`'s seconds in epoch `epoch`'s training, if its last report was of that epoch.
  std::optional<double> of(int rank, std::int64_t epoch) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto t = times_.find(rank);
    if (t == times_.end() || t->second.first != epoch)
      return std::nullopt;
    return t->second.second;
  }

private:
  mutable std::mutex mutex_;
  std::map<int, std::pair<std::int64_t, double>> times_;
};

struct member_entry {
  channel_actor channel;
  member_control_actor to; // the one proxy every node-level message to it goes through
  node_kind role = node_kind::worker;
  int rank = -1;         // within its role
  int node = -1;         // its plan node
  std::string host;      // where it says peers reach it (its join)
  std::string seen_from; // the address its connection came from, as this node saw it
  std::uint32_t pid = 0;
  std::uint16_t port = 0;
  int threads = 0; // the compute threads it uses (its ready)
  /// Its join's sending on its run clock and arrival on ours: the first half of the round trip
  /// from which it reckons its clock's offset (clock_stamps); 0: its join carried no stamp.
  std::int64_t join_sent = 0, join_received = 0;
  bool ready = false;
  bool gone = false;
  /// A spare worker (join_message::spare): no node until it takes over a lost worker's (then
  /// `node` and `rank` are that worker's).
  bool spare = false;
  std::vector<int>
    adopted_nodes;           // lost worker nodes whose computes it runs (on_worker_loss = adopt)
  std::vector<int> adopting; // told to adopt, not ready with them yet
  /// A worker allowed to leave (drain: its leave granted): once it has gone, its computes are
  /// adopted as a lost worker's are, and nothing of it counts as a loss.
  bool leaving = false;
  std::string leave_reason; // what asked it to leave ("SIGTERM")
  /// A node it adopted and gives to a worker that joined in training, once that one serves it;
  /// with `ceding_ranks`, only those computes of it (of its own node or one it adopted).
  int ceding = -1;
  std::vector<int> ceding_ranks;
  /// Compute ranks of the nodes it runs (its own, adopted, adopting) that run at other workers:
  /// a worker runs its nodes' computes but these.
  std::vector<int> given_ranks;
  /// Of `adopting`, the nodes it takes only some computes of (a lost worker ran only those, or
  /// a joiner takes them): their relays are re-pointed once it is ready with them.
  std::map<int, std::vector<int>> adopting_ranks;
  /// A worker that takes computes from another in a move (a joiner's, or balance's) not ended.
  bool taking = false;
  /// What it ran before that move, restored when the move is forgotten (it was lost first).
  struct holdings {
    int node = -1, rank = -1;
    std::vector<int> adopted_nodes, adopting, given_ranks;
    std::map<int, std::vector<int>> adopting_ranks;
  };
  holdings before_move;
  /// It becomes the taker of a move: what it runs now is kept to restore.
  void begin_taking() {
    before_move = {node, rank, adopted_nodes, adopting, given_ranks, adopting_ranks};
    taking = true;
  }
  /// The move is forgotten: it runs what it ran before.
  void undo_taking() {
    node = before_move.node;
    rank = before_move.rank;
    adopted_nodes = before_move.adopted_nodes;
    adopting = before_move.adopting;
    given_ranks = before_move.given_ranks;
    adopting_ranks = before_move.adopting_ranks;
    taking = false;
  }
  /// The term its assignment gives it (node_fences.hpp), which every frame it sends carries; the
  /// scheduler fences it when it declares the member lost.
  std::uint64_t term = 0;
  std::vector<int> promoted_nodes; // lost server nodes whose shards it serves (shard_backups = 1)
  int promoting = -1;              // the lost server node it was told to promote, not ready yet
  /// A spare that runs nothing (none of a lost worker's nodes, none of the ranks it joined for).
  bool idle() const { return spare && node < 0 && adopted_nodes.empty() && adopting.empty(); }
  std::string name() const {
    return (spare ? "spare " : "") + std::string(to_string(role))
           + (rank >= 0 ? " " + std::to_string(rank) : "") + " (pid " + std::to_string(pid)
           + (seen_from.empty() ? " on " + host : " from " + host_of_address(seen_from)) + ")";
  }
};

/// One epoch's traffic query: the members asked, their answers so far, and the
/// coordinator's question.
struct traffic_gathering {
  std::int64_t epoch = 0;
  /// Which gathering this is (its deadline names it: a question asked again for the same
  /// epoch must not end at the earlier question's deadline).
  std::int64_t serial = 0;
  std::set<int> asked;                              // plan nodes
  std::map<int, std::vector<peer_traffic>> answers; // by plan node
  caf::typed_response_promise<after_gate> promise;
  std::map<int, std::vector<node_wait>> waits; // by plan node: what its barriers waited for
};

struct scheduler_state {
  std::optional<scheduler_options> options;
  training_job job;
  placement_plan plan;
  data_facts facts;
  std::vector<char> job_bytes;
  std::uint64_t job_hash = 0;
  session_output output;
  metrics_actor metrics;
  std::shared_ptr<const dataset> train_set,
    validation_set; // opened to plan; the session reuses them
  std::shared_ptr<traffic_registry> traffic = std::make_shared<traffic_registry>();
  /// The terms this scheduler fenced (node_fences.hpp): its channels refuse them, so a lost
  /// process that runs again cannot rejoin. `last_term`: the latest term it gave a member.
  std::shared_ptr<node_fences> fences = std::make_shared<node_fences>();
  std::uint64_t last_term = 0;
  /// The epoch whose traffic is being gathered (between the coordinator's epoch_done and the
  /// answer to it), if any: the coordinator asks one epoch at a time.
  std::optional<traffic_gathering> gathering;
  std::int64_t gatherings = 0; // how many have started (the next one's serial)
  epoch_traffic traffic_table;
  listener_actor listener;
  training_session_actor session;
  std::function<training_session_actor(caf::actor_system&, const training_job&, session_sinks)>
    spawn_session;
  std::vector<member_entry> members;
  /// troupe ctl asked the run to stop: the epoch in training ends it (scheduler_commands.cpp).
  bool stop_asked = false;
  std::string stop_asked_at; // where the run was then ("epoch 1 at batch 151 of 469")
  /// troupe ctl asked for a checkpoint of the epoch in training, and where the run was then.
  bool save_asked = false;
  /// troupe ctl asked for a balance at the next gate (once, as balance = auto does at each).
  bool balance_asked = false;
  std::string save_asked_at;
  std::string stop_by = "troupe ctl", save_by = "troupe ctl"; // or "--replay-changes"
  /// troupe ctl set: the shard changes asked since the last gate, made at the next one.
  struct asked_setting {
    shard_change change; // its step is the gate's, set there
    std::string asked_at;
    std::string by;
  };
  std::vector<asked_setting> settings_asked;
  /// --replay-changes: the recorded changes not made yet, in step order.
  std::vector<run_change> replaying;
  /// The relays the coordinator drives remote computes through, by plan actor (adopt only).
  std::map<std::size_t, compute_relay_actor> relays;
  /// What those relays saw each rank's training take (balance = auto weighs it).
  std::shared_ptr<rank_times> times = std::make_shared<rank_times>();
  std::chrono::steady_clock::time_point move_began; // the last move's (a loss, leave or join)
  std::string move_cause = "the loss was seen";     // what began it, for the line that ends it
  /// A move begins now, for `cause` ("the loss was seen", "it left", "it joined").
  void begin_move(std::string cause) {
    move_began = std::chrono::steady_clock::now();
    move_cause = std::move(cause);
  }
  std::vector<int> joins_at_gate; // nodes a joiner is ready to serve, moved at the next gate
  /// The last gate a move completed at: that epoch's times are of the placement before it.
  std::int64_t moved_at_gate = -1;
  /// The relays the session reaches remote shards through, by plan actor (shard_backups = 1).
  std::map<std::size_t, push_relay_actor> shard_relays;
  std::chrono::steady_clock::time_point server_lost_at; // when the last promoted loss was seen
  scheduler_machine phase{scheduler_edges()};
  /// Whether the members are still joining or being assigned (no session yet).
  bool before_training() const {
    return phase.is<scheduler_phases::joining>() || phase.is<scheduler_phases::servers_assigned>()
           || phase.is<scheduler_phases::workers_assigned>();
  }
  caf::typed_response_promise<training_result> promise;
  // A scheduler restarted in training (options->resume): where the rejoined members say the run
  // is (the latest epoch their computes were asked to train; the shards' last applied step).
  std::int64_t resume_epoch = -1;
  std::int64_t resume_applied_step = -1;
  // Which run a restarted scheduler takes, decided by the first join it accepts (a spare's
  // aside): a rejoin, the run its members kept training; a first join (its scheduler was lost
  // before training), the run started afresh.
  bool resumed_run = false;
  bool fresh_run = false;
  static inline const char* name = "troupe.scheduler";
};

using scheduler_actor = scheduler_self_actor::stateful_pointer<scheduler_state>;

inline member_entry* member_of(scheduler_state& st, const caf::actor_addr& channel) {
  for (auto& m : st.members)
    if (m.channel.address() == channel)
      return &m;
  return nullptr;
}

inline int live_members(const scheduler_state& st) {
  return static_cast<int>(
    std::count_if(st.members.begin(), st.members.end(), [](auto& m) { return !m.gone; }));
}

// The scheduler is its session's gate between epochs (epoch_gate_actor): after each epoch's
// training it asks every member what it moved (scheduler_traffic.cpp).
/// The coordinator's epoch_done: asks every member for its traffic; answers once all have
/// (or at `due`, or the request timeout, whichever comes first). A question still open is
/// answered first, with what came; once the run is ending, no epoch passes (an error).
caf::result<after_gate> on_epoch_done(scheduler_actor self, std::int64_t epoch, deadline due);
/// A member's traffic answer; the last one ends the gathering. An answer the open gathering
/// did not ask for (another epoch, a node not asked, none open) is dropped and logged.
void on_traffic(scheduler_actor self, const channel_actor& channel, const traffic_message& t);
/// The deadline of gathering `serial` passed: ends it with the answers that came.
void on_traffic_due(scheduler_actor self, std::int64_t serial);
/// Ends the gathering if every member still there has answered (one was lost meanwhile).
void end_gathering_if_complete(scheduler_actor self);
/// Sends the epoch's traffic to the metrics (with what has come so far, naming in the log who
/// did not answer) and answers the coordinator: yes, or `run_ends` when the run ends with
/// that failure. Nothing when no gathering is under way.
void end_gathering(scheduler_actor self, caf::error run_ends = caf::error{});

/// Where every server member listens (its node, host and port).
std::vector<endpoint> server_endpoints(const scheduler_state& st);
/// Member `m`'s assignment: its rank and node, the job, the plan's hash and facts, `servers`.
assignment_message assignment_for(const scheduler_state& st, const member_entry& m,
                                  std::vector<endpoint> servers);

// Adopted workers (scheduler_adoption.cpp).
/// A relay to compute `rank` at `target`; it records each training phase's seconds in `times`.
compute_relay_actor spawn_compute_relay(caf::actor_system& system, compute_actor target,
                                        int rank = -1, std::shared_ptr<rank_times> times = nullptr);
/// The computes `m` runs: its own node's, those it adopted and those it is adopting.
std::size_t computes_run_by(const scheduler_state& st, const member_entry& m);
/// The worker still there that runs the fewest computes, the lowest rank among equals; null
/// when none is left.
const member_entry* choose_adopter(const scheduler_state& st);
/// Worker `m` was lost (`what` says so): with on_worker_loss = adopt during training, tells
/// the chosen adopter to adopt its node (and those it had adopted) and returns ""; else
/// returns why not ("stop" where adoption is not the policy), and the run stops.
std::string adopt_lost_worker(scheduler_actor self, member_entry& m, const std::string& what);
/// A ready from `m` during training naming a node it was adopting: re-points that node's
/// computes' relays at `m`. False when the ready is no such answer.
bool on_adopted(scheduler_actor self, member_entry& m, const ready_message& ready);
/// Worker `m`'s plan nodes: its own and those it adopted or is adopting.
std::vector<int> nodes_run_by(const member_entry& m);
/// The compute ranks `m` runs (or is adopting) on those nodes, but those it gave away; ascending.
std::vector<int> ranks_run_by(const scheduler_state& st, const member_entry& m);
/// Whether `m` runs (some of) plan node `node`.
bool runs_node(const member_entry& m, int node);
/// `ranks` added to `to` (each once, ascending), or taken out of `from`.
void add_ranks(std::vector<int>& to, const std::vector<int>& ranks);
void remove_ranks(std::vector<int>& from, const std::vector<int>& ranks);
/// Worker `to` takes `ranks` of `node` in a move: it waits for its ready naming that node, and
/// runs the node less what others run of it.
void note_taking(const placement_plan& plan, member_entry& to, int node,
                 const std::vector<int>& ranks);
/// Giver `giver` is lost while ceding ranks to a joiner: they are the joiner's now, served
/// there at once when it is ready with them, else once it is.
void hand_ranks_to_joiner(scheduler_actor self, member_entry& giver);
/// Re-points the relays of `ranks` of plan node `node` (empty: all its computes) at `m`.
void repoint_computes(scheduler_actor self, const member_entry& m, int node,
                      const std::vector<int>& ranks = {});
/// Why no worker adopts `nodes` ("" if one can): a node holding more than loaders and computes
/// (a hierarchical machine's aggregators).
std::string unadoptable(const placement_plan& plan, const std::vector<int>& nodes);
/// "compute_2, compute_3": the computes of `nodes`; "worker_1, worker_3": their names.
std::string compute_names(const placement_plan& plan, const std::vector<int>& nodes);
std::string node_names(const placement_plan& plan, const std::vector<int>& nodes);

// Workers that leave on purpose (scheduler_moves.cpp).
/// Why worker `m` may not leave now ("" if it may).
std::string drain_refusal(const scheduler_state& st, const member_entry& m);
/// Worker `m` asks to leave (`leave`): granted when its computes can be adopted once it has
/// gone (then it is marked leaving), else refused saying why; it hears which in a release.
void on_leave(scheduler_actor self, member_entry& m, const leave_message& leave);
/// "worker 1 (pid 42 from 10.0.0.3) left at 12:00:01.250 UTC (drained: SIGTERM)".
std::string left_text(const member_entry& m);
/// troupe ctl's verb `c` (scheduler_commands.cpp): its answer, or an errc::bad_request naming
/// why it was refused.
caf::result<command_result_message> on_command(scheduler_actor self, const command_message& c);
/// Answers the gate after epoch `epoch`'s training: the changes asked (troupe ctl set) or
/// replayed for the next step are made in every server's shards first (a failed one fails the
/// run); then last_epoch once the run was asked to stop, save_epoch once a checkpoint was, else
/// go_on. Each change is said in the log, the events and the epoch's metrics line.
void answer_gate(scheduler_actor self, std::int64_t epoch,
                 caf::typed_response_promise<after_gate> promise);
/// Takes the recorded changes to replay (options->replay_changes), less those made before the
/// epoch the run starts in (a restarted scheduler's shards kept them, a checkpoint's hold them);
/// says why they cannot be replayed in this run (a step that is no epoch's end, or past the
/// run's), "" when they can.
std::string start_replay(scheduler_state& st);
/// A worker that joined in training (`joiner`, listed as a spare) takes a node that another
/// worker adopted, from the one running the most computes: it is assigned that node (its
/// computes recompute the step in flight) and, once it serves them, the other is told to cede
/// them. Nothing when no worker runs an adopted node or a move is under way: it stays a spare.
void take_for_joiner(scheduler_actor self, member_entry& joiner);
/// At the gate after an epoch's training (no phase in flight): the nodes that joiners are
/// ready to serve move to them (their relays re-pointed) and the workers that ran them are
/// told to cede them.
void complete_joins(scheduler_actor self, std::int64_t epoch);
/// cluster.balance = auto, at the gate after epoch `epoch`'s training (scheduler_balance.cpp):
/// where another placement of the ranks would end a step sooner, as their times that epoch
/// say, one worker is told to adopt ranks of another, moved at the next gate.
void balance_at_gate(scheduler_actor self, std::int64_t epoch);
/// Of `nodes` (a lost worker's), those a joiner is ready to serve move to it now and leave the
/// list; true if any did.
bool hand_to_joiners(scheduler_actor self, std::vector<int>& nodes);
/// A joiner lost before its node moved to it: the node stays where it runs (the worker told to
/// cede it keeps it), and the joiner held nothing.
void forget_join(scheduler_state& st, member_entry& joiner);
/// The member told to cede `node` once a joiner serves it (its `ceding`), or null.
member_entry* ceding_member(scheduler_state& st, int node);

// Shards with a backup (scheduler_promotion.cpp).
/// Server `m` was lost (`what` says so): with shard_backups = 1 during training, tells the server
/// holding its backups to promote them and returns ""; else returns why not ("stop" where
/// the run keeps no shard backups), and the run stops.
std::string promote_lost_server(scheduler_actor self, member_entry& m, const std::string& what);
/// A ready from server `m` during training naming the node it was promoting: tells every
/// worker, and re-points the session's own relays, at `m`. False when the ready is no such answer.
bool on_promoted(scheduler_actor self, member_entry& m, const ready_message& ready);

/// The members of `role` the job has (scheduler_node.cpp).
int expected_members(const scheduler_state& st, node_kind role);
/// The members of `role` that joined (ready ones only with `ready_only`), spares aside.
int counted_members(const scheduler_state& st, node_kind role, bool ready_only = false);
/// "1/2 workers joined, 1/1 servers joined; waiting for worker 1"
std::string progress_text(const scheduler_state& st);
/// Records `event` about member `m` (its name as "server_1", or "spare"; its role, rank, pid,
/// host) with `extra` after those fields.
void record_member_event(const scheduler_state& st, const std::string& event, const member_entry& m,
                         const event_fields& extra = {});
/// Ends the run naming why: every member still there is told, then the run's caller.
void fail(scheduler_actor self, errc code, const std::string& why);

// Admission (scheduler_admission.cpp).
/// Listens for members (the channels check what arrives against the plan's keys and pass
/// node-level messages here), writes the port file, then waits until the join deadline.
void start_listening(scheduler_actor self);
/// A member's join on `channel`: refused, listed as a spare, or given its rank; once every
/// server has joined they are assigned, once they are ready the workers.
void on_join(scheduler_actor self, const channel_actor& channel, const join_message& join);
/// A member's ready: the last server's assigns the workers, the last worker's starts training.
void on_ready(scheduler_actor self, const channel_actor& channel, const ready_message& ready);
/// Why a join on `channel` is refused whatever the role and phase ("" if it is not): a second join
/// on one channel, or another job than the scheduler's.
std::string refusal_of_join(scheduler_state& st, const channel_actor& channel,
                            const join_message& join);
/// A member for a join on `channel` (no rank nor node yet), watched and listed.
member_entry& add_member(scheduler_actor self, const channel_actor& channel,
                         const join_message& join);
/// Spawns the session (its coordinator, metrics) and trains; a restarted scheduler's goes on
/// at resume_epoch.
void start_training(scheduler_actor self);

// A scheduler restarted in training (scheduler_resume.cpp).
/// Why a join is refused by the rules of rejoining ("" if it is not): a rejoin to a scheduler
/// not started with --resume, a first join (not a spare's) to one that was, a rejoin once the
/// run went on, or one naming a node that is not its role's or is back already.
std::string refusal_of_rejoin(scheduler_state& st, const channel_actor& channel,
                              const join_message& join);
/// A member of the run rejoins (refusal_of_rejoin said yes): listed, ready, with the nodes it
/// adopted or promoted; once every plan node is back, training goes on.
void on_rejoin(scheduler_actor self, const channel_actor& channel, const join_message& join);
/// "3 of 4 plan nodes back; waiting for worker_1" (a restarted scheduler's join progress).
std::string rejoin_progress(const scheduler_state& st);

/// What the scheduler starts with, planned by the caller.
struct scheduler_setup {
  scheduler_options options;
  training_job job;
  session_output output;
  placement_plan plan;
  data_facts facts;
  metrics_actor metrics;
  std::shared_ptr<const dataset> train_set,
    validation_set; // opened to plan; the session reuses them
  /// Opens the listener for members (a test drives the scheduler without one).
  bool listen = true;
  /// Spawns the training session once every node is ready (a test puts a fake there).
  std::function<training_session_actor(caf::actor_system&, const training_job&, session_sinks)>
    spawn_session = [](caf::actor_system& system, const training_job& job, session_sinks sinks) {
      return spawn_training_session(system, job, std::move(sinks));
    };
};

/// The scheduler node's actor (run_scheduler asks it to run).
scheduler_node_actor spawn_scheduler_node(caf::actor_system& system, scheduler_setup setup);

} // namespace troupe
