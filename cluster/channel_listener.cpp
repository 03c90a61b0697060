// A node's listener (channel.hpp): a thread of its listening socket accepts each connection and
// the listener spawns a channel on it; the channels it accepted end with it, so a node that
// stops listening leaves no connection behind.
#include <troupe/cluster/channel.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cluster/channel_internals.hpp"
#include "cluster/frame_socket.hpp"
#include "cluster/log_budget.hpp"

namespace troupe {

namespace {

using accepted_atom = caf::atom_constant<caf::atom("accepted")>;

// The channels a listener accepted and that still run: they end with the listener (a node that
// stops listening leaves no connection behind), each on its own when its peer goes. Shared
// with the accepting thread.
struct accepted_channels {
  std::mutex mutex;
  std::vector<channel_actor> running;
};

struct listener_state {
  std::uint16_t port = 0;
  static inline const char* name = "troupe.listener";
};

// The socket is bound before the listener exists (spawn_listener), so a port in use is the
// caller's error at once, not a listener that quits on its own later. Its accepting thread
// holds the listener (as CAF's network thread holds a broker): it runs until told to quit.
// The listener's own handle: its interface plus what its accepting thread tells it.
using listener_self_actor = listener_actor::extend<caf::reacts_to<accepted_atom, channel_actor>>;

listener_self_actor::behavior_type
listener(listener_self_actor::stateful_pointer<listener_state> self,
         std::shared_ptr<listening_socket> socket, channel_options options) {
  self->state.port = socket->port();
  if (!options.refusal_budget)
    options.refusal_budget = std::make_shared<log_budget>(5, std::chrono::seconds(10));
  auto channels = std::make_shared<accepted_channels>();
  self->attach_functor([socket, channels](const caf::error&) {
    socket->stop(); // no channel is added after this
    std::lock_guard<std::mutex> lock(channels->mutex);
    for (auto& channel : channels->running)
      caf::anon_send_exit(channel, caf::exit_reason::user_shutdown);
    channels->running.clear();
  });
  self->set_down_handler([=](caf::down_msg& down) {
    std::lock_guard<std::mutex> lock(channels->mutex);
    auto& all = channels->running;
    all.erase(std::remove_if(all.begin(), all.end(),
                             [&](const channel_actor& a) { return a.address() == down.source; }),
              all.end());
  });
  auto& system = self->system();
  socket->start([&system, channels, options = std::move(options),
                 me = listener_self_actor{self}](std::shared_ptr<frame_socket> connection) {
    channel_actor channel =
      spawn_channel(system, std::move(connection), options, channel_side::accepting);
    {
      std::lock_guard<std::mutex> lock(channels->mutex);
      channels->running.push_back(channel);
    }
    caf::anon_send(me, accepted_atom::value, channel);
  });
  return {
    [=](accepted_atom, const channel_actor& channel) { self->monitor(channel); },
    [=](port_atom) { return self->state.port; },
  };
}

} // namespace

caf::expected<listener_actor> spawn_listener(caf::actor_system& system, const std::string& host,
                                             std::uint16_t port, channel_options options) {
  auto socket = listening_socket::bind(host, port, options.same_host_shortcut);
  if (!socket)
    return std::move(socket.error());
  return system.spawn(listener, std::shared_ptr<listening_socket>(std::move(*socket)),
                      std::move(options));
}

listener_actor spawn_listener(caf::actor_system& system, std::shared_ptr<listening_socket> bound,
                              channel_options options) {
  return system.spawn(listener, std::move(bound), std::move(options));
}

} // namespace troupe
