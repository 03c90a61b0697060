// A member's side of fencing (node_fences.hpp). The scheduler fences the term of a process it
// declared lost before any of its part moves, and tells every other member; their channels
// refuse that term from then on, each ending with a goodbye that tells the fenced process why.
// A fenced process (a frozen one that runs again) hears that goodbye, or the scheduler's
// refusal of its rejoin, and ends: what it held runs elsewhere, so nothing it does counts.
#include <string>

#include "cluster/member/member_state.hpp"
#include "cluster/node_common.hpp"

namespace troupe {

namespace {

std::string node_text(const member_state& st, std::uint32_t node) {
  return node < st.plan.nodes.size() ? st.plan.nodes[node].name : "node " + std::to_string(node);
}

} // namespace

void on_fence(member_actor self, const fence_message& f) {
  auto& st = self->state;
  st.fences->fence(f.term, f.reason); // the channel took it already; the node's word is this
  if (f.node < st.plan.nodes.size())
    st.fenced_nodes.insert(static_cast<int>(f.node));
  log_node_line(*st.options, st.label + ": the scheduler fenced " + node_text(st, f.node)
                               + " (term " + std::to_string(f.term) + "): " + f.reason
                               + "; nothing of that term is taken here from now on");
  record_event(st.options->events, "fenced",
               {{{"lost_node", static_cast<double>(f.node)}, {"term", static_cast<double>(f.term)}},
                {{"lost", node_text(st, f.node)}, {"reason", f.reason}}});
}

void on_fenced_here(member_actor self, const std::string& why) {
  auto& st = self->state;
  st.fences->note_fenced_here(why);
  if (st.ended())
    return;
  record_event(st.options->events, "fenced here", {{}, {{"reason", why}}});
  fail(self, errc::peer_down,
       st.label + " (term " + std::to_string(st.fences->own()) + "): " + why
         + "; the scheduler declared this process lost and its part runs elsewhere, so it "
           "takes no further part in the run");
}

} // namespace troupe
