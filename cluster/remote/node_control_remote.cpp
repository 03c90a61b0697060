// The node-control protocol (troupe/cluster/node_control.hpp) across processes: its codec
// tables, skeletons (inside every channel) and proxies. A node speaks to a peer node through
// the proxy on their channel (scheduler_control_actor / member_control_actor), which writes
// the message; the peer's skeleton hands it, typed, to the inbox registered there, naming the
// channel it came on.
//
//   scheduler control (member -> scheduler): join, ready, traffic, leave   (one-way)
//   member control (scheduler -> member):    assignment, traffic query, adopt, promote,
//                                            release, cede, drain, fence (one-way)
// A shutdown (goodbye) belongs to the channel itself, which tells either inbox.
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/remote/interface_codec.hpp"

namespace troupe {

namespace {

void serve_scheduler_control(channel_pointer self, wire_message& message) {
  auto& st = self->state;
  auto node = st.options->serving->find<remote_interface::scheduler_control>(0);
  if (!node)
    return refuse_peer(self, std::string("sent a ") + kind_name(message)
                               + ", which this node does not take");
  if (st.peer && st.peer->role == node_kind::ctl)
    return refuse_peer(self, std::string("sent a ") + kind_name(message)
                               + " as troupe ctl, which only asks the scheduler to run verbs");
  const auto me = channel_of(self);
  if (auto* join = std::get_if<join_message>(&message)) {
    join->seen_from = st.socket->peer(); // where the node really is, whatever it says
    self->send(node, join_atom::value, me, std::move(*join));
  } else if (auto* ready = std::get_if<ready_message>(&message)) {
    self->send(node, ready_atom::value, me, std::move(*ready));
  } else if (auto* leave = std::get_if<leave_message>(&message)) {
    self->send(node, leave_atom::value, me, std::move(*leave));
  } else {
    self->send(node, traffic_atom::value, me, std::move(std::get<traffic_message>(message)));
  }
}

void serve_member_control(channel_pointer self, wire_message& message) {
  auto node = self->state.options->serving->find<remote_interface::member_control>(0);
  if (!node)
    return refuse_peer(self, std::string("sent a ") + kind_name(message)
                               + ", which this node does not take");
  const auto me = channel_of(self);
  if (auto* assignment = std::get_if<assignment_message>(&message))
    self->send(node, assignment_atom::value, me, std::move(*assignment));
  else if (auto* adopt = std::get_if<adopt_message>(&message))
    self->send(node, adopt_atom::value, me, *adopt);
  else if (auto* promote = std::get_if<promote_message>(&message))
    self->send(node, promote_atom::value, me, *promote);
  else if (auto* release = std::get_if<release_message>(&message))
    self->send(node, release_atom::value, me, std::move(*release));
  else if (auto* cede = std::get_if<cede_message>(&message))
    self->send(node, cede_atom::value, me, *cede);
  else if (auto* drain = std::get_if<drain_message>(&message))
    self->send(node, drain_atom::value, me, std::move(*drain));
  else if (auto* fence = std::get_if<fence_message>(&message)) {
    // Taken here, on the channel's thread, so this node's other channels refuse the term
    // before the node has read its mailbox so far.
    self->state.options->fences->fence(fence->term, fence->reason);
    self->send(node, fence_atom::value, me, std::move(*fence));
  } else
    self->send(node, traffic_query_atom::value, me,
               std::move(std::get<traffic_query_message>(message)));
}

std::string node_of(const wire_message&) {
  return "the node";
}

// A node-control proxy ends with its channel: nothing it is told after that can be written.
template <class Self> void end_with(Self* self, const channel_actor& channel) {
  self->monitor(channel);
  self->set_down_handler([=](caf::down_msg&) { self->quit(); });
}

} // namespace

scheduler_control_actor spawn_scheduler_control_proxy(caf::actor_system& system,
                                                      channel_actor channel) {
  return system.spawn(
    [=](scheduler_control_actor::pointer self) -> scheduler_control_actor::behavior_type {
      end_with(self, channel);
      auto write = [=](wire_message m) { self->send(channel, send_atom::value, std::move(m)); };
      return {
        [=](join_atom, join_message& m) { write(std::move(m)); },
        [=](ready_atom, ready_message& m) { write(std::move(m)); },
        [=](traffic_atom, traffic_message& m) { write(std::move(m)); },
        [=](leave_atom, leave_message& m) { write(std::move(m)); },
        [=](goodbye_atom, shutdown_message& m) { write(std::move(m)); },
      };
    });
}

member_control_actor spawn_member_control_proxy(caf::actor_system& system, channel_actor channel) {
  return system.spawn(
    [=](member_control_actor::pointer self) -> member_control_actor::behavior_type {
      end_with(self, channel);
      auto write = [=](wire_message m) { self->send(channel, send_atom::value, std::move(m)); };
      return {
        [=](assignment_atom, assignment_message& m) { write(std::move(m)); },
        [=](traffic_query_atom, traffic_query_message& m) { write(std::move(m)); },
        [=](adopt_atom, adopt_message& m) { write(m); },
        [=](promote_atom, promote_message& m) { write(m); },
        [=](release_atom, release_message& m) { write(std::move(m)); },
        [=](cede_atom, cede_message& m) { write(m); },
        [=](drain_atom, drain_message& m) { write(std::move(m)); },
        [=](fence_atom, fence_message& m) { write(std::move(m)); },
        [=](goodbye_atom, shutdown_message& m) { write(std::move(m)); },
      };
    });
}

const interface_codec& scheduler_control_codec() {
  static const interface_codec codec{
    remote_interface::scheduler_control,
    {{kind_of<join_message>(), kind_role::one_way},
     {kind_of<ready_message>(), kind_role::one_way},
     {kind_of<traffic_message>(), kind_role::one_way},
     {kind_of<leave_message>(), kind_role::one_way}},
    serve_scheduler_control,
    node_of,
  };
  return codec;
}

const interface_codec& member_control_codec() {
  static const interface_codec codec{
    remote_interface::member_control,
    {{kind_of<assignment_message>(), kind_role::one_way},
     {kind_of<traffic_query_message>(), kind_role::one_way},
     {kind_of<adopt_message>(), kind_role::one_way},
     {kind_of<promote_message>(), kind_role::one_way},
     {kind_of<release_message>(), kind_role::one_way},
     {kind_of<cede_message>(), kind_role::one_way},
     {kind_of<drain_message>(), kind_role::one_way},
     {kind_of<fence_message>(), kind_role::one_way}},
    serve_member_control,
    node_of,
  };
  return codec;
}

} // namespace troupe
