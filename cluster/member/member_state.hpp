// The server or worker node's state (member_node.cpp), and what its backup handling
// (member_backups.cpp: backups of shards, their promotion, pushes re-pointed) does with it.
// Private to cluster/.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/node_part.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/metrics_relay.hpp>
#include <troupe/cluster/node_fences.hpp>
#include <troupe/cluster/push_relay.hpp>
#include <troupe/cluster/serving_registry.hpp>
#include <troupe/cluster/traffic_registry.hpp>

#include "cluster/frame_socket.hpp"
#include "cluster/member/member_node.hpp"
#include "cluster/member/member_phases.hpp"

namespace troupe {

/// shard_backups = 1: what a server keeps beyond its own part, and how a worker reaches shards
/// whose server may be replaced (member_backups.cpp).
struct backup_side {
  int shard_backups = 0; ///< the job's shard_backups
  // A server: the backups it holds of the previous server node's shards and aggregators, by
  // plan actor index (that node's push side spawned again here), and what it spawned.
  int backed_node = -1;
  push_side backups;
  std::vector<std::pair<caf::actor, std::string>> backup_actors;
  std::vector<int> promoted; ///< lost server nodes whose shards this server serves now
  // A server: the channel to the next server node, which holds this one's backups.
  int backup_node = -1;
  channel_actor backup_channel;
  bool backup_gone = false; ///< the scheduler said backup_node is lost: the shards here go on alone
  // A worker (and what it adopts): its computes' pushes to each remote shard go through a
  // relay, by plan actor index, re-pointed when that shard's backup is promoted.
  std::shared_ptr<std::map<std::size_t, push_relay_actor>> relays =
    std::make_shared<std::map<std::size_t, push_relay_actor>>();
};

struct member_state {
  backup_side backup;
  std::optional<member_options> options;
  std::string label; // "worker (pid 42)", then "worker_1"
  channel_actor scheduler;
  scheduler_control_actor to_scheduler; // the one proxy every node-level message to it goes through
  std::vector<channel_actor> server_channels; // by plan node; invalid where none
  std::size_t local_server_channels = 0;      // of them, over a local socket (same host)
  std::string pacing_text; // how its TCP channels are paced and pushes ordered, for its ready line
  listener_actor listener;
  std::shared_ptr<listening_socket> listening; // a server's port, bound before it joined
  // What this node serves to every channel: its control inbox, shards (or the aggregators in
  // front of them), computes.
  std::shared_ptr<serving_registry> serving = std::make_shared<serving_registry>();
  std::shared_ptr<traffic_registry> traffic; // every channel of this node counts its frames here
  // The term every channel of this node stamps, and the fenced ones they refuse (node_fences.hpp).
  std::shared_ptr<node_fences> fences = std::make_shared<node_fences>();
  std::set<int> fenced_nodes; // plan nodes whose process the scheduler fenced
  node_part part;
  // What spawned the part, kept for a part adopted later (on_adopt): the job, its model, the
  // data, and the options (proxies for the servers and the metrics actor).
  std::optional<training_job> job;
  model_spec spec;
  node_data data;
  node_part_options part_options;
  std::list<node_part> adopted;   // parts of lost worker nodes this worker adopted
  std::vector<int> adopted_nodes; // their plan nodes
  placement_plan plan;
  int part_node = -1;           // this node's index in the plan, once assigned
  int threads = 0;              // its compute threads, once assigned
  std::uint16_t ready_port = 0; // a server: where it listens for workers, once ready
  std::string bound_cpus;       // "CPU 0", "CPUs 2-3": where its computes are bound ("": unbound)
  member_machine phase{member_edges()};
  // Why the last try to reach the scheduler failed (connecting, rejoining): named when the join
  // timeout or the scheduler timeout ends the node, even once a rejoin was sent but not taken.
  caf::error unreachable;
  // A worker's computes report their batches here; re-pointed at a restarted scheduler.
  metrics_relay_actor reports;
  std::uint64_t scheduler_losses = 0; // names the deadline of each absence (rejoining)
  // The channel to the scheduler was admitted (its channel_up): a rejoin over a channel that never
  // was (a frozen scheduler's port still takes connections) does not end the absence.
  bool scheduler_admitted = false;
  // Its answer to the last traffic query (the end of the previous epoch), told to a restarted
  // scheduler, which counts the epoch's traffic from there.
  std::optional<traffic_message> last_traffic_answer;
  std::optional<shutdown_message> told; // the scheduler's shutdown, once it came
  // A worker asked by its host to leave (member_moves.cpp): what asked it, whether it asked the
  // scheduler and waits for the answer, and whether the scheduler let it go.
  std::string leave_reason;
  bool leaving = false;
  bool released = false;
  caf::typed_response_promise<bool> promise;
  /// Whether the node has ended (its phase is `ending`).
  bool ended() const { return phase.is<member_phases::ending>(); }
  bool continue_on_worker_loss = false; // the job's on_worker_loss = continue
  // A server's admitted channels from workers: the plan node name each one's hello gave, and
  // the channel (to say goodbye on when the run finished).
  struct worker_channel {
    std::string name;
    channel_actor channel;
  };
  std::map<caf::actor_addr, worker_channel> worker_channels;
  static inline const char* name = "troupe.member";
};

using assignment_deadline_atom = caf::atom_constant<caf::atom("assigndead")>;
using connect_deadline_atom = caf::atom_constant<caf::atom("conndead")>;
using rejoin_deadline_atom = caf::atom_constant<caf::atom("rejoindead")>;
using assignment_failed_atom = caf::atom_constant<caf::atom("assignfail")>;

/// The member as it sees itself: also its own deadlines and the assignment it could not take,
/// which only it sends itself.
using member_self_actor =
  member_node_actor::extend<caf::reacts_to<connect_deadline_atom>, caf::reacts_to<grace_over_atom>,
                            caf::reacts_to<assignment_deadline_atom>,
                            caf::reacts_to<rejoin_deadline_atom, std::uint64_t>,
                            caf::reacts_to<assignment_failed_atom, caf::error>>;
using member_actor = member_self_actor::stateful_pointer<member_state>;

/// The scheduler's traffic query (member_traffic.cpp): answered with what this node has moved
/// with each peer so far and what its barriers waited for, by source node.
void on_traffic_query(member_actor self, const traffic_query_message& query);

/// Ends the node naming why (member_node.cpp).
void fail(member_actor self, errc code, const std::string& why);
/// Ends the node with `reason` (none: the run finished), `lost_node` the plan node whose loss
/// ended it (-1: none) (member_node.cpp).
void finish(member_actor self, caf::error reason, std::int32_t lost_node = -1);

// The assignment (member_assignment.cpp).
/// The scheduler's assignment: spawns this node's part, then says ready (a server once its
/// listener for workers has its port); one that cannot be taken ends the node.
void on_assignment(member_actor self, const assignment_message& a);
/// An assignment that could not be taken: ends the node with `why`, or with the scheduler's
/// reason when it ended the run meanwhile.
void on_assignment_failed(member_actor self, caf::error why);
/// Says where an adopted compute recomputes from (node_part_options::on_rewound).
std::function<void(int, std::int64_t)> rewound_logger(const member_options& log,
                                                      const std::string& label, std::int64_t steps);

/// The compute ranks this worker runs of plan node `node`, in any of its parts
/// (member_adoption.cpp).
std::vector<int> ranks_here(const member_state& st, int node);
/// The scheduler's adopt (member_adoption.cpp): spawns the lost node's loaders and computes
/// here, serves the computes on the scheduler channel, and says ready naming that node.
void on_adopt(member_actor self, const adopt_message& a);
/// Its host asks it to leave the run (`why`: "SIGTERM"; member_moves.cpp): a worker in training
/// asks the scheduler to move its computes; any other node ends, naming why.
void on_leave_asked(member_actor self, const std::string& why);
/// The scheduler asks it to leave (troupe ctl drain): a worker in training asks to leave as
/// on SIGTERM; anything else (a server, a worker leaving already) logs it and goes on.
void on_drain(member_actor self, const drain_message& d);
/// A server's shards take the scheduler's shard change (member_changes.cpp): answered with
/// how many did, or the first refusal.
caf::result<std::uint32_t> on_change(member_actor self, const shard_change& change, deadline due);
/// The scheduler's answer to its leave: granted, it closes its channel to the scheduler (the
/// move starts once it has gone) and ends when that channel has; refused, it trains on.
void on_release(member_actor self, const release_message& r);
/// The scheduler's cede: it stops running the computes (and loaders) of a node it adopted and
/// stops serving them; another worker serves them now (member_moves.cpp).
void on_cede(member_actor self, const cede_message& c);
/// Its channel to the scheduler ended after the scheduler let it go: it ends, the run finished
/// for it (exit 0), closing its channels to the servers at once.
void leave_run(member_actor self);

// A lost scheduler (member_rejoin.cpp).
/// The scheduler's channel was lost (`why`) with no word from it: in training, with a scheduler
/// timeout, the node trains on and retries reaching a restarted scheduler (rejoining), and
/// true; else false (the node stops, naming the scheduler).
bool train_on_without_scheduler(member_actor self, const caf::error& why);
/// Reached a scheduler again over `channel` (rejoining): asks its computes and shards where
/// they stand, then rejoins with that.
void rejoin_over(member_actor self, const channel_actor& channel);
/// Joins over the channel to the scheduler (member_join.cpp).
void join_over(member_actor self, const channel_actor& channel);
/// One try to reach the scheduler (joining, or rejoining once it was lost); a failed try is
/// tried again until the join timeout (member_join.cpp).
void try_to_connect(member_actor self);
/// "HOST:PORT" of the scheduler the options name.
std::string scheduler_address(const member_options& options);
/// Absence `serial` lasted the scheduler timeout: the node stops, naming the scheduler.
void on_rejoin_deadline(member_actor self, std::uint64_t serial);

// shard_backups = 1 (member_backups.cpp).
/// A server: spawns the backups of the previous server node's shards and serves them to it.
void spawn_backups(member_actor self, const training_job& job, const std::vector<tensor>& initial);
/// A server: channels to the next server node (from the assignment's endpoints), which holds its
/// shards' backups, and gives each shard here its backup there; when that server cannot be
/// reached, says so and goes on without (as when it is lost later).
void connect_backups(member_actor self, const assignment_message& a,
                     const channel_options& channel);
/// How a worker's computes reach a remote push target: through a relay when the run keeps
/// shard backups, else the proxy itself.
push_target_actor
remote_shard(caf::actor_system& system,
             const std::shared_ptr<std::map<std::size_t, push_relay_actor>>& relays, bool relayed,
             const placement_plan& plan, std::size_t actor, const channel_actor& channel);
/// A channel this node lost that shard backups make survivable (a server channel of a worker, the
/// backup channel of a server): handled (logged) and true; false for any other channel.
bool on_backup_channel_lost(member_actor self, const caf::actor_addr& channel,
                            const caf::error& why);
/// The scheduler's promote: a server promotes the backups it holds, a worker re-points.
void on_promote(member_actor self, const promote_message& p);
/// The scheduler fenced the process of a term (member_fences.cpp): said once, and the plan node
/// noted, so the end of a channel to it is no news.
void on_fence(member_actor self, const fence_message& f);
/// A peer said this node's own term is fenced: it ends (run_member throws fenced_error).
void on_fenced_here(member_actor self, const std::string& why);
/// The backup actor `source` is, if any ("" if none).
std::string backup_actor_name(const member_state& st, const caf::actor_addr& source);

} // namespace troupe
