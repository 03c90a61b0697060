// See transport_roles.hpp. The server's actor system lives until the process exits (the
// orchestrator ends server processes by closing their standard input).
#include "apps/bench/transport_roles.hpp"

#include "apps/bench/timed_steps.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/cluster/remote_proxies.hpp>

namespace troupe::bench {

namespace {

// A fixed secret: the benchmark's processes run on 127.0.0.1 and live for one measurement.
const char* const bench_secret = "troupe transport benchmark secret";

wire_keys keys_of(const transport_layout& layout) {
  wire_keys keys;
  for (int s = 0; s < layout.servers; ++s)
    keys.shards.emplace_back(static_cast<std::size_t>(layout.keys_of(s)),
                             shape_t{layout.key_bytes / 4});
  return keys;
}

channel_options options_of(const transport_layout& layout, node_kind role) {
  channel_options o{cluster_secret(bench_secret)};
  o.role = role;
  o.name = to_string(role);
  o.keys = keys_of(layout);
  o.connection_timeout = std::chrono::milliseconds{60000};
  o.same_host_shortcut = layout.local_sockets;
  return o;
}

// A shard's work without the optimizer: adds each pushed gradient into its key (w += g, as
// ps-lite's benchmark server does) and answers with the new weights. Weights leave by handle;
// a key whose last answer may still be on its way is copied before it is written.
push_target_actor spawn_summing_shard(caf::actor_system& system, std::vector<tensor> initial) {
  auto weights = std::make_shared<std::vector<tensor>>(std::move(initial));
  return system.spawn([weights](push_target_actor::pointer) -> push_target_actor::behavior_type {
    return {
      [=](push_atom, gradient_push& push) {
        weight_set ws;
        ws.updates = push.step + 1;
        ws.keys = push.keys;
        for (std::size_t i = 0; i < push.keys.size(); ++i) {
          auto& w = weights->at(push.keys[i]);
          if (!w.unique())
            w = w.clone();
          float* out = w.data();
          const float* g = push.gradients[i].data();
          for (std::int64_t e = 0; e < w.numel(); ++e)
            out[e] += g[e];
          ws.weights.push_back(w);
        }
        return ws;
      },
      [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
        return caf::make_error(caf::sec::unexpected_message);
      },
      [=](pull_atom, deadline) {
        weight_set ws;
        for (std::size_t k = 0; k < weights->size(); ++k) {
          ws.keys.push_back(k);
          ws.weights.push_back((*weights)[k]);
        }
        return ws;
      },
    };
  });
}

local_node_config network_config() {
  return local_node_config(local_node_options{});
}

} // namespace

void troupe_serve(const transport_layout& layout, int server, std::uint16_t& port) {
  // Held for the process's lifetime: the server answers until it is killed or told to stop.
  static auto config = std::make_unique<local_node_config>(network_config());
  static auto system = std::make_unique<caf::actor_system>(*config);
  std::vector<tensor> weights;
  for (int k = 0; k < layout.keys_of(server); ++k) {
    weights.emplace_back(shape_t{layout.key_bytes / 4});
    weights.back().fill(0.5f);
  }
  auto options = options_of(layout, node_kind::server);
  options.serving->set<remote_interface::push_target>(
    static_cast<std::uint32_t>(server), spawn_summing_shard(*system, std::move(weights)));
  auto listener = spawn_listener(*system, "127.0.0.1", 0, options);
  if (!listener)
    throw std::runtime_error(system->render(listener.error()));
  caf::scoped_actor self{*system};
  self->request(*listener, std::chrono::seconds(10), port_atom::value)
    .receive([&](std::uint16_t p) { port = p; },
             [&](caf::error& e) { throw std::runtime_error(system->render(e)); });
}

double troupe_worker(const transport_layout& layout, const std::vector<std::uint16_t>& ports,
                     int warmup, int steps) {
  auto config = network_config();
  caf::actor_system system{config};
  std::vector<channel_actor> channels;
  std::vector<push_target_actor> shards;
  for (std::size_t s = 0; s < ports.size(); ++s) {
    auto channel =
      connect_channel(system, "127.0.0.1", ports[s], options_of(layout, node_kind::worker));
    if (!channel)
      throw std::runtime_error(error_text(channel.error()));
    channels.push_back(*channel);
    shards.push_back(spawn_push_target_proxy(system, *channel, static_cast<std::uint32_t>(s)));
  }
  tensor gradient(shape_t{layout.key_bytes / 4});
  gradient.fill(0.25f);
  caf::scoped_actor self{system};
  auto step = [&](std::int64_t number) {
    // Every push leaves before any answer is awaited: the channels carry them all at once.
    std::vector<decltype(self->request(shards[0], caf::infinite, push_atom::value,
                                       gradient_push{}))>
      answers;
    for (std::size_t s = 0; s < shards.size(); ++s) {
      for (int k = 0; k < layout.keys_of(static_cast<int>(s)); ++k) {
        gradient_push push;
        push.step = number;
        push.samples = 1;
        push.keys = {static_cast<std::size_t>(k)};
        push.gradients = {gradient};
        answers.push_back(
          self->request(shards[s], std::chrono::seconds(60), push_atom::value, std::move(push)));
      }
    }
    for (auto& answer : answers)
      answer.receive([](weight_set&) {},
                     [&](caf::error& e) { throw std::runtime_error(error_text(e)); });
  };
  const double seconds = timed_steps(warmup, steps, step);
  for (auto& s : shards)
    self->send_exit(s, caf::exit_reason::user_shutdown);
  // The servers hear that the worker is done (not a closed connection); each channel ends once
  // its server has read that.
  for (auto& l : channels) {
    self->monitor(l);
    self->send(l, send_atom::value, wire_message{shutdown_message{"the benchmark finished", true}});
  }
  for (std::size_t closed = 0; closed < channels.size(); ++closed)
    self->receive([](const caf::down_msg&) {},
                  caf::after(std::chrono::seconds(10)) >>
                    [&] {
                      closed = channels.size(); // a server that does not close: leave it
                    });
  return seconds;
}

} // namespace troupe::bench
