// A member's part of a cluster checkpoint (checkpoint_part_actor: save, restore) across
// processes: the manifest checkpoint beside the scheduler's coordinator asks every server and
// worker for its part. Its codec table, its skeleton (inside the member's channel to its
// scheduler) and its proxy (on the scheduler).
//
//   save:    checkpoint (request) -> checkpoint done
//            (save_atom, epoch, path, deadline) -> part_record
//   restore: checkpoint (request) -> checkpoint done
//            (restore_atom, epoch, prefix, deadline) -> bool
//
// Paths cross the wire as text: the files are on a file system every node sees
// (docs/checkpoints.md), so the scheduler names each part's file and every node reads the
// same checkpoint.
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/remote/interface_codec.hpp"
#include "cluster/remote/proxy_core.hpp"

namespace troupe {

namespace {

void serve_checkpoint_part(channel_pointer self, wire_message& message) {
  const auto m = std::get<checkpoint_message>(message);
  auto part = self->state.options->serving->find<remote_interface::checkpoint_part>(0);
  if (!part)
    return refuse_unserved(self, m.request, remote_interface::checkpoint_part, 0);
  const auto due = deadline_of_frame(m.remaining_ms);
  auto on_error = [=](caf::error& err) {
    write_failure(self, m.request, as_served(self, err, "checkpoint part"));
  };
  if (m.kind == checkpoint_kind::save)
    self->request(part, due.left_with_grace(), save_atom::value, m.epoch, m.path, due)
      .then(
        [=](part_record& r) {
          write_answer(self, checkpoint_done_message{m.request, r.file, r.bytes, r.checksum},
                       m.request);
        },
        on_error);
  else
    self->request(part, due.left_with_grace(), restore_atom::value, m.epoch, m.path, due)
      .then(
        [=](bool) {
          write_answer(self, checkpoint_done_message{m.request, {}, 0, {}}, m.request);
        },
        on_error);
}

caf::expected<checkpoint_done_message> done_of(wire_message& answer) {
  auto* d = std::get_if<checkpoint_done_message>(&answer);
  if (!d)
    return make_error(errc::bad_request,
                      "a checkpoint request was answered with no checkpoint done");
  return std::move(*d);
}

} // namespace

const interface_codec& checkpoint_part_codec() {
  static const interface_codec codec{
    remote_interface::checkpoint_part,
    {{kind_of<checkpoint_message>(), kind_role::request},
     {kind_of<checkpoint_done_message>(), kind_role::answer}},
    serve_checkpoint_part,
    [](const wire_message&) { return std::string("checkpoint part"); },
  };
  return codec;
}

checkpoint_part_actor spawn_checkpoint_part_proxy(caf::actor_system& system,
                                                  channel_actor channel) {
  using pointer = checkpoint_part_actor::stateful_pointer<proxy_state>;
  return system.spawn([=](pointer self) -> checkpoint_part_actor::behavior_type {
    watch_channel(self, channel, "checkpoint part");
    return {
      [=](save_atom, std::int64_t epoch, const std::string& path, deadline due) {
        return call_channel<part_record>(
          self, channel, checkpoint_message{0, checkpoint_kind::save, epoch, path, 0}, due,
          [](wire_message& answer) -> caf::expected<part_record> {
            auto done = done_of(answer);
            if (!done)
              return done.error();
            if (done->file.empty())
              return make_error(errc::bad_request, "a checkpoint part was saved to no file");
            return part_record{done->file, done->bytes, done->checksum};
          });
      },
      [=](restore_atom, std::int64_t epoch, const std::string& prefix, deadline due) {
        return call_channel<bool>(self, channel,
                                  checkpoint_message{0, checkpoint_kind::restore, epoch, prefix, 0},
                                  due, [](wire_message& answer) -> caf::expected<bool> {
                                    auto done = done_of(answer);
                                    if (!done)
                                      return done.error();
                                    return true;
                                  });
      },
    };
  });
}

} // namespace troupe
