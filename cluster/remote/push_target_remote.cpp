// push_target_actor across processes: its codec table, its skeleton (inside the channel of the
// node that holds the shard or the aggregator in front of it) and its proxy (on the pushing
// node). The data path: compute -> proxy -> channel -> wire -> channel (skeleton) -> target;
// the answer back the same way. No actor hop beyond the proxy and no copy of a tensor: pushes
// and weights travel as tensor handles into the channel and as views of the received frame
// out of it.
//
//   push    (request) -> weights   (push_atom, gradient_push) -> weight_set
//   pull    (request) -> weights   (pull_atom)                -> weight_set
//   pull with rewind  -> weights   (rewind_atom, step, source) -> weight_set (the target
//                                  answers as push_target_actor says, messages.hpp)
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/remote/interface_codec.hpp"
#include "cluster/remote/proxy_core.hpp"

namespace troupe {

namespace {

std::uint32_t shard_of(const wire_message& m) {
  if (auto* push = std::get_if<push_message>(&m))
    return push->shard;
  return std::get<pull_message>(m).shard;
}

// The skeleton: asks the target registered for the frame's shard, with the deadline the frame
// carried, and writes its answer (or failure) back.
void serve_push_target(channel_pointer self, wire_message& message) {
  const auto shard = shard_of(message);
  const auto request = std::holds_alternative<push_message>(message)
                         ? std::get<push_message>(message).request
                         : std::get<pull_message>(message).request;
  auto target = self->state.options->serving->find<remote_interface::push_target>(shard);
  if (!target)
    return refuse_unserved(self, request, remote_interface::push_target, shard);
  auto on_weights = [=](weight_set& ws) {
    write_answer(self, weights_message{request, shard, std::move(ws)}, request);
  };
  auto on_error = [=](caf::error& err) {
    // A request the target refuses (a bad key, a step from the future) is the peer's fault:
    // logged here naming the peer, and the peer's request fails with the reason.
    if (troupe_code(err) == errc::bad_request)
      channel_log(self->state, "channel to " + self->state.peer_name
                                 + ": refused its request to shard " + std::to_string(shard) + ": "
                                 + error_text(err));
    write_failure(self, request, as_served(self, err, "shard " + std::to_string(shard)));
  };
  // The target gives up at the frame's deadline (an aggregator names what it waited for);
  // this request waits answer_grace longer for that answer.
  if (auto* push = std::get_if<push_message>(&message)) {
    push->push.due = deadline_of_frame(push->remaining_ms);
    const auto wait = push->push.due.left_with_grace();
    self->request(target, wait, push_atom::value, std::move(push->push)).then(on_weights, on_error);
  } else if (const auto& pull = std::get<pull_message>(message); pull.rewind) {
    const auto due = deadline_of_frame(pull.remaining_ms);
    self
      ->request(target, due.left_with_grace(), rewind_atom::value, pull.before_step, pull.source,
                due)
      .then(on_weights, on_error);
  } else {
    const auto due = deadline_of_frame(pull.remaining_ms);
    self->request(target, due.left_with_grace(), pull_atom::value, due).then(on_weights, on_error);
  }
}

caf::expected<weight_set> weights_of(wire_message& answer, std::uint32_t shard) {
  auto* w = std::get_if<weights_message>(&answer);
  if (!w || w->shard != shard)
    return make_error(errc::bad_request, "shard " + std::to_string(shard)
                                           + " was answered with another shard's weights");
  return std::move(w->weights);
}

} // namespace

const interface_codec& push_target_codec() {
  static const interface_codec codec{
    remote_interface::push_target,
    {{kind_of<push_message>(), kind_role::request},
     {kind_of<pull_message>(), kind_role::request},
     {kind_of<weights_message>(), kind_role::answer}},
    serve_push_target,
    [](const wire_message& m) { return "shard " + std::to_string(shard_of(m)); },
  };
  return codec;
}

push_target_actor spawn_push_target_proxy(caf::actor_system& system, channel_actor channel,
                                          std::uint32_t shard) {
  using pointer = push_target_actor::stateful_pointer<proxy_state>;
  return system.spawn([=](pointer self) -> push_target_actor::behavior_type {
    watch_channel(self, channel, "shard " + std::to_string(shard));
    auto answer = [=](wire_message& m) { return weights_of(m, shard); };
    return {
      [=](push_atom, gradient_push& push) {
        const auto due = push.due;
        return call_channel<weight_set>(self, channel, push_message{0, shard, std::move(push)}, due,
                                        answer);
      },
      [=](pull_atom, deadline due) {
        return call_channel<weight_set>(self, channel, pull_message{0, shard}, due, answer);
      },
      [=](rewind_atom, std::int64_t step, std::int32_t source, deadline due) {
        return call_channel<weight_set>(self, channel,
                                        pull_message{0, shard, 0, true, step, source}, due, answer);
      },
    };
  });
}

} // namespace troupe
