// troupe ctl's commands to a run's scheduler (run_control_actor) across processes: the codec
// table, the skeleton (inside each channel the scheduler accepts) and the proxy (on ctl's
// channel to the scheduler).
//
//   command (request) -> command result
//   (command_atom, command_message, deadline) -> command_result_message
//
// Only a peer that said hello as ctl may command: a server or worker that sends one is
// refused, so a member's channel carries no operator's verbs.
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/remote/interface_codec.hpp"
#include "cluster/remote/proxy_core.hpp"

namespace troupe {

namespace {

void serve_run_control(channel_pointer self, wire_message& message) {
  auto m = std::get<command_message>(message);
  auto& st = self->state;
  if (!st.peer || st.peer->role != node_kind::ctl)
    return refuse_peer(self, "sent a command, which only troupe ctl sends");
  auto scheduler = st.options->serving->find<remote_interface::run_control>(0);
  if (!scheduler)
    return refuse_unserved(self, m.request, remote_interface::run_control, 0);
  const auto due = deadline_of_frame(m.remaining_ms);
  const auto request = m.request;
  self->request(scheduler, due.left_with_grace(), command_atom::value, std::move(m), due)
    .then(
      [=](command_result_message& r) {
        r.request = request;
        write_answer(self, std::move(r), request);
      },
      [=](caf::error& err) {
        write_failure(self, request, as_served(self, err, "the scheduler"));
      });
}

} // namespace

const interface_codec& run_control_codec() {
  static const interface_codec codec{
    remote_interface::run_control,
    {{kind_of<command_message>(), kind_role::request},
     {kind_of<command_result_message>(), kind_role::answer}},
    serve_run_control,
    [](const wire_message&) { return std::string("the scheduler"); },
  };
  return codec;
}

run_control_actor spawn_run_control_proxy(caf::actor_system& system, channel_actor channel) {
  using pointer = run_control_actor::stateful_pointer<proxy_state>;
  return system.spawn([=](pointer self) -> run_control_actor::behavior_type {
    watch_channel(self, channel, "the scheduler");
    return {
      [=](command_atom, command_message& m, deadline due) {
        return call_channel<command_result_message>(
          self, channel, std::move(m), due,
          [](wire_message& answer) -> caf::expected<command_result_message> {
            auto* r = std::get_if<command_result_message>(&answer);
            if (!r)
              return make_error(errc::bad_request,
                                "a command was answered with a " + std::string(kind_name(answer)));
            return std::move(*r);
          });
      },
    };
  });
}

} // namespace troupe
