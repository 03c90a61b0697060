// The scheduler node's state (scheduler_node.cpp) and what its traffic gathering
// (scheduler_traffic.cpp) does with it. Private to cluster/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/node_control.hpp>
#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/traffic_registry.hpp>
#include <troupe/cluster/wire_messages.hpp>
#include <troupe/graph/placement.hpp>

#include "epoch_traffic.hpp"
#include "node_common.hpp"

namespace troupe {

using traffic_due_atom = caf::atom_constant<caf::atom("trafficdue")>;
using cause_due_atom = caf::atom_constant<caf::atom("causedue")>;

/// The scheduler node: the node-control protocol its links speak to it, the metrics sink of
/// its session (reports pass through it so each epoch's traffic is cut at the epoch's end),
/// the host's run request, and its own deadlines.
using scheduler_node_actor = scheduler_inbox::extend_with<metrics_sink_actor>::extend<
  caf::replies_to<run_atom>::with<training_result>, caf::reacts_to<join_deadline_atom>,
  caf::reacts_to<grace_over_atom>, caf::reacts_to<cause_due_atom>, caf::reacts_to<traffic_due_atom, std::int64_t>>;

struct member_entry {
  channel_actor link;
  node_kind role = node_kind::worker;
  int rank = -1;  // within its role
  int node = -1;  // its plan node
  std::string host;       // where it says peers reach it (its join)
  std::string seen_from;  // the address its connection came from, as this node saw it
  std::uint32_t pid = 0;
  std::uint16_t port = 0;
  int threads = 0;        // the compute threads it uses (its ready)
  bool ready = false;
  bool gone = false;
  std::string name() const {
    return std::string(to_string(role)) + " " + std::to_string(rank) + " (pid " + std::to_string(pid)
           + (seen_from.empty() ? " on " + host : " from " + host_of_address(seen_from)) + ")";
  }
};


struct scheduler_state {
  std::optional<cluster_node_options> options;
  training_job job;
  placement_plan plan;
  data_facts facts;
  std::vector<char> job_bytes;
  std::uint64_t job_hash = 0;
  session_output output;
  metrics_actor metrics;
  std::shared_ptr<const dataset> train_set, validation_set;  // opened to plan; the session reuses them
  std::shared_ptr<traffic_registry> traffic = std::make_shared<traffic_registry>();
  // Reports pass through here on their way to `metrics`. After an epoch's training they are
  // held (in order) until every member has said what it moved, so that epoch's traffic is in
  // its metrics line.
  bool holding = false;
  std::int64_t holding_epoch = 0;
  /// The last phase report passed on was an epoch's training (see the flush handler).
  bool after_training_report = false;
  std::vector<std::function<void()>> held;
  std::map<int, std::vector<peer_traffic>> traffic_answers;  // by plan node
  epoch_traffic traffic_table;
  caf::actor listener;
  training_session_actor session;
  std::function<training_session_actor(caf::actor_system&, const training_job&, session_sinks)> spawn_session;
  std::vector<member_entry> members;
  scheduler_phase at = scheduler_phase::joining;
  /// In `failing`: the failure that said a peer was lost, ended with once the loss is named.
  caf::error unexplained;
  caf::typed_response_promise<training_result> promise;
  std::optional<caf::expected<training_result>> outcome;
  bool servers_told = false;  // the servers know how the run ends
  static inline const char* name = "troupe.scheduler";
};

using scheduler_actor = scheduler_node_actor::stateful_pointer<scheduler_state>;

inline member_entry* member_of(scheduler_state& st, const caf::actor_addr& link) {
  for (auto& m : st.members)
    if (m.link.address() == link)
      return &m;
  return nullptr;
}

inline int live_members(const scheduler_state& st) {
  return static_cast<int>(std::count_if(st.members.begin(), st.members.end(), [](auto& m) { return !m.gone; }));
}

// The scheduler is the metrics sink of its session and of the member links: reports pass
// through it on their way to the metrics actor (scheduler_traffic.cpp).
/// Runs `forward` now, or after the traffic of the epoch being gathered.
void pass_on(scheduler_actor self, std::function<void()> forward);
/// After an epoch's training: holds the reports and asks every member for its traffic.
void on_phase_report(scheduler_actor self, const phase_report& r);
/// A member's traffic answer; the last one releases the epoch's figures.
void on_traffic(scheduler_actor self, const channel_actor& link, const traffic_message& t);
/// Sends the epoch's traffic to the metrics (with what has come so far), then what was held.
void release_traffic(scheduler_actor self);

/// What the scheduler starts with, planned by the caller.
struct scheduler_setup {
  cluster_node_options options;
  training_job job;
  session_output output;
  placement_plan plan;
  data_facts facts;
  metrics_actor metrics;
  std::shared_ptr<const dataset> train_set, validation_set;  // opened to plan; the session reuses them
  /// Opens the listener for members (a test drives the scheduler without one).
  bool listen = true;
  /// Spawns the training session once every node is ready (a test puts a stand-in there).
  std::function<training_session_actor(caf::actor_system&, const training_job&, session_sinks)> spawn_session =
    [](caf::actor_system& system, const training_job& job, session_sinks sinks) {
      return spawn_training_session(system, job, std::move(sinks));
    };
};

/// The scheduler node's actor (run_scheduler asks it to run).
scheduler_node_actor spawn_scheduler_node(caf::actor_system& system, scheduler_setup setup);

} // namespace troupe
