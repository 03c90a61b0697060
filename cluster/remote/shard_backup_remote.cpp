// shard_backup_actor across processes (shard_backups = 1): a primary shard on one server passes
// each push it applied to its backup on the next server. Its codec table, its skeleton
// (inside the backup server's channel from the primary's server) and its proxy (on the
// primary's server).
//
//   replicate (request) -> replicated   (replicate_atom, gradient_push) -> int64 updates
//
// The answer is the backup's count of applied pushes, a few bytes: the weights stay where
// they are (the primary answers its pushers with its own).
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/remote/interface_codec.hpp"
#include "cluster/remote/proxy_core.hpp"

namespace troupe {

namespace {

void serve_shard_backup(channel_pointer self, wire_message& message) {
  auto& m = std::get<replicate_message>(message);
  const auto request = m.request;
  const auto shard = m.shard;
  auto backup = self->state.options->serving->find<remote_interface::shard_backup>(shard);
  if (!backup)
    return refuse_unserved(self, request, remote_interface::shard_backup, shard);
  m.push.due = deadline_of_frame(m.remaining_ms);
  const auto wait = m.push.due.left_with_grace();
  self->request(backup, wait, replicate_atom::value, std::move(m.push))
    .then(
      [=](std::int64_t updates) {
        write_answer(self, replicated_message{request, updates}, request);
      },
      [=](caf::error& err) {
        if (troupe_code(err) == errc::bad_request)
          channel_log(self->state, "channel to " + self->state.peer_name + ": the backup of shard "
                                     + std::to_string(shard)
                                     + " refused a replicated push: " + error_text(err));
        write_failure(self, request,
                      as_served(self, err, "the backup of shard " + std::to_string(shard)));
      });
}

} // namespace

const interface_codec& shard_backup_codec() {
  static const interface_codec codec{
    remote_interface::shard_backup,
    {{kind_of<replicate_message>(), kind_role::request},
     {kind_of<replicated_message>(), kind_role::answer}},
    serve_shard_backup,
    [](const wire_message& m) {
      return "the backup of shard " + std::to_string(std::get<replicate_message>(m).shard);
    },
  };
  return codec;
}

shard_backup_actor spawn_shard_backup_proxy(caf::actor_system& system, channel_actor channel,
                                            std::uint32_t shard) {
  using pointer = shard_backup_actor::stateful_pointer<proxy_state>;
  return system.spawn([=](pointer self) -> shard_backup_actor::behavior_type {
    watch_channel(self, channel, "the backup of shard " + std::to_string(shard));
    return {
      [=](replicate_atom, gradient_push& push) {
        const auto due = push.due;
        return call_channel<std::int64_t>(
          self, channel, replicate_message{{0, shard, std::move(push)}}, due,
          [](wire_message& answer) -> caf::expected<std::int64_t> {
            auto* r = std::get_if<replicated_message>(&answer);
            if (!r)
              return make_error(errc::bad_request, "a replicated push was answered with no count");
            return r->updates;
          });
      },
    };
  });
}

} // namespace troupe
