// See remote_stand_ins.hpp. Both stand-ins share one forwarding core: a request to the link
// whose answer (or error) is passed on, and a list of the answers still owed, which a lost
// link fails.
#include <troupe/cluster/remote_stand_ins.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

namespace {

struct stand_in_state {
  caf::error link_lost;  // why the link ended, once it has
  std::vector<caf::response_promise> waiting;
  static inline const char* name = "troupe.remote_stand_in";
};

// Watches `link` from `self`; `what` names the remote actor in the error.
template <class Self>
void watch_link(Self* self, const caf::actor& link, std::string what) {
  self->monitor(link);
  self->set_down_handler([=](caf::down_msg& down) {
    auto& st = self->state;
    if (down.reason && down.reason.category() == error_category)
      st.link_lost = down.reason;
    else
      st.link_lost = make_error(errc::peer_down, "the link to " + what + " ended"
                                                   + (down.reason ? ": " + self->system().render(down.reason)
                                                                  : std::string()));
    for (auto& promise : st.waiting)
      if (promise.pending())
        promise.deliver(st.link_lost);
    st.waiting.clear();
  });
}

// Forwards `message` to `link` and passes its answer of type Answer on.
template <class Answer, class Self, class... Ts>
caf::delegated<Answer> forward(Self* self, const caf::actor& link, caf::timespan timeout, Ts... message) {
  auto promise = self->make_response_promise();
  auto& st = self->state;
  if (st.link_lost) {
    promise.deliver(st.link_lost);
    return {};
  }
  st.waiting.erase(std::remove_if(st.waiting.begin(), st.waiting.end(), [](auto& p) { return !p.pending(); }),
                   st.waiting.end());
  st.waiting.push_back(promise);
  self->request(link, timeout, std::move(message)...)
    .then([=](Answer& answer) mutable { if (promise.pending()) promise.deliver(std::move(answer)); },
          [=](caf::error& err) mutable { if (promise.pending()) promise.deliver(std::move(err)); });
  return {};
}

// The link's own deadline comes first, naming what it waited for.
caf::timespan after_link(std::chrono::milliseconds link_timeout) {
  return link_timeout + link_timeout / 2 + std::chrono::milliseconds{100};
}

} // namespace

push_target_actor spawn_remote_shard(caf::actor_system& system, caf::actor link, std::uint32_t shard,
                                     std::chrono::milliseconds request_timeout) {
  const auto timeout = after_link(request_timeout);
  using pointer = push_target_actor::stateful_pointer<stand_in_state>;
  return system.spawn([=](pointer self) -> push_target_actor::behavior_type {
    watch_link(self, link, "shard " + std::to_string(shard));
    return {
      [=](push_atom, gradient_push& push) {
        return forward<weight_set>(self, link, timeout, push_atom::value, shard, std::move(push));
      },
      [=](pull_atom) { return forward<weight_set>(self, link, timeout, pull_atom::value, shard); },
    };
  });
}

compute_actor spawn_remote_compute(caf::actor_system& system, caf::actor link, std::uint32_t worker,
                                   std::chrono::milliseconds phase_timeout) {
  const auto timeout = after_link(phase_timeout);
  using pointer = compute_actor::stateful_pointer<stand_in_state>;
  return system.spawn([=](pointer self) -> compute_actor::behavior_type {
    watch_link(self, link, "compute " + std::to_string(worker));
    return {
      [=](train_atom, std::int64_t epoch) {
        return forward<phase_report>(self, link, timeout, train_atom::value, worker, epoch);
      },
      [=](validate_atom, std::int64_t epoch) {
        return forward<phase_report>(self, link, timeout, validate_atom::value, worker, epoch);
      },
      [=](end_epoch_atom, std::int64_t epoch) {
        if (!self->state.link_lost)
          caf::anon_send(link, end_epoch_atom::value, worker, epoch);
      },
    };
  });
}

} // namespace troupe
