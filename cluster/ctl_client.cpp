#include <troupe/cluster/ctl_client.hpp>

#include <algorithm>
#include <optional>
#include <unistd.h>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/remote_proxies.hpp>

namespace troupe {

caf::expected<command_result_message> ask_scheduler(caf::actor_system& system,
                                                    const ctl_request& request) {
  channel_options options{request.secret};
  options.role = node_kind::ctl;
  options.name = "troupe ctl (pid " + std::to_string(::getpid()) + ")";
  // What the channel would log (a refused admission, a closed connection) comes back as the
  // request's error, which ctl prints once.
  options.log = [](const std::string&) {};
  // Heartbeats and the peer timeout within the request's own bound: a scheduler that stops
  // answering ends the channel before the deadline says less.
  options.connection_timeout = std::max(std::chrono::milliseconds(100), request.timeout);
  options.heartbeat_interval = std::max(std::chrono::milliseconds(50), request.timeout / 5);
  const auto due = deadline::after(request.timeout);
  auto channel = connect_channel(system, request.host, request.port, options);
  if (!channel)
    return make_error(errc::peer_down, "no scheduler at " + request.host + ":"
                                         + std::to_string(request.port) + ": "
                                         + error_text(channel.error()));
  auto proxy = spawn_run_control_proxy(system, *channel);
  std::optional<command_result_message> answer;
  caf::error failure;
  {
    caf::scoped_actor self{system};
    self
      ->request(proxy, due.left_with_grace(), command_atom::value,
                command_message{0, request.verb, request.args, 0}, due)
      .receive([&](command_result_message& r) { answer = std::move(r); },
               [&](caf::error& err) { failure = std::move(err); });
    // A finished goodbye: the scheduler's side closes without logging an end that is no news.
    self->send(*channel, send_atom::value,
               wire_message{shutdown_message{"troupe ctl asked what it came for", true}});
    self->wait_for(*channel);
    self->send_exit(proxy, caf::exit_reason::user_shutdown);
    self->wait_for(proxy);
  }
  if (!answer)
    return failure;
  return std::move(*answer);
}

} // namespace troupe
