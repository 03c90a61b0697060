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
#include <troupe/cluster/peer_link.hpp>
#include <troupe/cluster/traffic_registry.hpp>
#include <troupe/cluster/wire_messages.hpp>
#include <troupe/graph/placement.hpp>

#include "epoch_traffic.hpp"
#include "node_common.hpp"

namespace troupe {

using traffic_due_atom = caf::atom_constant<caf::atom("trafficdue")>;

struct member_entry {
  caf::actor link;
  node_role role = node_role::worker;
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

enum class run_phase { joining, servers_assigned, workers_assigned, training, ending };

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
  std::vector<member_entry> members;
  run_phase at = run_phase::joining;
  caf::response_promise promise;
  std::optional<caf::expected<training_result>> outcome;
  bool servers_told = false;  // the servers know how the run ends
  static inline const char* name = "troupe.scheduler";
};

using scheduler_actor = caf::stateful_actor<scheduler_state>;

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
void pass_on(scheduler_actor* self, std::function<void()> forward);
/// After an epoch's training: holds the reports and asks every member for its traffic.
void on_phase_report(scheduler_actor* self, const phase_report& r);
/// A member's traffic answer; the last one releases the epoch's figures.
void on_traffic(scheduler_actor* self, const caf::actor& link, const traffic_message& t);
/// Sends the epoch's traffic to the metrics (with what has come so far), then what was held.
void release_traffic(scheduler_actor* self);

} // namespace troupe
