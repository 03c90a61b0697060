// What the scheduler changes in a server's shards between epochs (shard_change_actor: troupe
// ctl set) across processes: the codec table, the skeleton (inside a server's channel to its
// scheduler) and the proxy (on the scheduler).
//
//   change (request) -> changed
//   (change_atom, shard_change, deadline) -> uint32 shards that took it
//
// Only the scheduler changes a run: a worker or ctl peer that sends a change is refused, so no
// peer but the one that checked the value against the key table reaches the shards.
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/remote/interface_codec.hpp"
#include "cluster/remote/proxy_core.hpp"

namespace troupe {

namespace {

void serve_shard_change(channel_pointer self, wire_message& message) {
  const auto m = std::get<change_message>(message);
  auto& st = self->state;
  if (!st.peer || st.peer->role != node_kind::scheduler)
    return refuse_peer(self, "sent a shard change, which only the scheduler sends");
  auto server = st.options->serving->find<remote_interface::shard_change>(0);
  if (!server)
    return refuse_unserved(self, m.request, remote_interface::shard_change, 0);
  const auto due = deadline_of_frame(m.remaining_ms);
  self->request(server, due.left_with_grace(), change_atom::value, m.change, due)
    .then(
      [=](std::uint32_t shards) {
        write_answer(self, changed_message{m.request, shards}, m.request);
      },
      [=](caf::error& err) {
        write_failure(self, m.request, as_served(self, err, "the server's shards"));
      });
}

} // namespace

const interface_codec& shard_change_codec() {
  static const interface_codec codec{
    remote_interface::shard_change,
    {{kind_of<change_message>(), kind_role::request},
     {kind_of<changed_message>(), kind_role::answer}},
    serve_shard_change,
    [](const wire_message&) { return std::string("the server's shards"); },
  };
  return codec;
}

shard_change_actor spawn_shard_change_proxy(caf::actor_system& system, channel_actor channel) {
  using pointer = shard_change_actor::stateful_pointer<proxy_state>;
  return system.spawn([=](pointer self) -> shard_change_actor::behavior_type {
    watch_channel(self, channel, "the server's shards");
    return {
      [=](change_atom, const shard_change& change, deadline due) {
        return call_channel<std::uint32_t>(
          self, channel, change_message{0, change, 0}, due,
          [](wire_message& answer) -> caf::expected<std::uint32_t> {
            auto* r = std::get_if<changed_message>(&answer);
            if (!r)
              return make_error(errc::bad_request, "a shard change was answered with a "
                                                     + std::string(kind_name(answer)));
            return r->shards;
          });
      },
    };
  });
}

} // namespace troupe
