// A server's or worker's answer to the scheduler's traffic query (member_state.hpp): the bytes
// its channels moved with each peer, and what its barriers (the aggregators of its part) waited
// for: by source node (its sources, the computes of one worker, added up), the longest wait of
// any of its barriers (they wait at the same time, one per shard), and the steps that node
// came last in. Totals since the node started; the
// scheduler takes each epoch's share (scheduler_traffic.cpp).
#include <algorithm>
#include <map>
#include <memory>

#include <caf/all.hpp>

#include <troupe/actors/aggregator_actor.hpp>

#include "cluster/member/member_state.hpp"

namespace troupe {

namespace {

// An aggregator of this node's part and the plan node each of its sources pushes from.
struct barrier {
  aggregator_actor actor;
  std::vector<std::string> source_nodes; // by source index
};

std::vector<barrier> barriers_of(const member_state& st) {
  std::vector<barrier> found;
  if (st.part_node < 0)
    return found;
  for (auto i : st.plan.actors_on(st.part_node)) {
    const auto& a = st.plan.actors[i];
    if (i >= st.part.own_aggregators.size() || !st.part.own_aggregators[i])
      continue;
    barrier b{st.part.own_aggregators[i],
              std::vector<std::string>(static_cast<std::size_t>(a.sources))};
    for (auto r : st.plan.routes_to(i)) {
      const auto& route = st.plan.routes[r];
      if ((route.carries == route_carries::gradients
           || route.carries == route_carries::summed_gradients)
          && route.source >= 0 && route.source < a.sources)
        b.source_nodes[static_cast<std::size_t>(route.source)] =
          st.plan.nodes.at(static_cast<std::size_t>(st.plan.actors[route.from].node)).name;
    }
    found.push_back(std::move(b));
  }
  return found;
}

struct waits_gathering {
  traffic_message answer;
  std::map<std::string, node_wait> by_node;
  std::size_t missing = 0;
};

void send_answer(member_actor self, const channel_actor& asked_on, waits_gathering& g) {
  auto& st = self->state;
  for (auto& [node, wait] : g.by_node)
    g.answer.waits.push_back(wait);
  st.last_traffic_answer = g.answer;
  if (st.ended() || st.scheduler != asked_on)
    return; // ended, or the scheduler that asked is gone
  caf::anon_send(st.to_scheduler, traffic_atom::value, std::move(g.answer));
}

} // namespace

void on_traffic_query(member_actor self, const traffic_query_message& query) {
  auto& st = self->state;
  auto g = std::make_shared<waits_gathering>();
  g->answer.epoch = query.epoch;
  for (auto& entry : st.traffic->snapshot())
    g->answer.peers.push_back(std::move(entry.traffic));
  const auto barriers = barriers_of(st);
  const auto asked_on = st.scheduler;
  g->missing = barriers.size();
  if (barriers.empty())
    return send_answer(self, asked_on, *g);
  // Answered between two of its messages; the scheduler's own deadline bounds the rest.
  for (const auto& b : barriers)
    self->request(b.actor, st.options->timeouts.step, waits_atom::value)
      .then(
        [=](const std::vector<double>& seconds, const std::vector<std::int64_t>& steps) {
          // The sources of one node (its computes) add up within a barrier; the barriers
          // (one per shard, waiting at the same time) count by their longest.
          std::map<std::string, node_wait> here;
          for (std::size_t i = 0;
               i < b.source_nodes.size() && i < seconds.size() && i < steps.size(); ++i) {
            if (b.source_nodes[i].empty())
              continue;
            auto& w = here[b.source_nodes[i]];
            w.node = b.source_nodes[i];
            w.seconds += seconds[i];
            w.steps += static_cast<std::uint64_t>(std::max<std::int64_t>(0, steps[i]));
          }
          for (const auto& [node, w] : here) {
            auto& longest = g->by_node[node];
            longest.node = node;
            longest.seconds = std::max(longest.seconds, w.seconds);
            longest.steps = std::max(longest.steps, w.steps);
          }
          if (--g->missing == 0)
            send_answer(self, asked_on, *g);
        },
        [=](caf::error&) { // a barrier that ended: the traffic goes without its waits
          if (--g->missing == 0)
            send_answer(self, asked_on, *g);
        });
}

} // namespace troupe
