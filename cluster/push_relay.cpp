// Implementation notes: a request is a small closure that asks a given target and delivers to
// its promise; the relay keeps the closures of held requests and runs them on re-pointing.
#include <troupe/cluster/push_relay.hpp>

#include <functional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

namespace {

struct relay_state {
  push_target_actor target;
  std::string shard; // which shard, for a held request's timeout
  struct held_request {
    deadline due;
    std::function<void()> ask; // asks the target current then
    std::function<void(caf::error)> fail;
  };
  std::vector<held_request> held;
  static inline const char* name = "push_relay";
};

using relay_pointer = push_relay_actor::stateful_pointer<relay_state>;

bool lost(const caf::error& err) {
  return troupe_code(err) == errc::peer_down || err == caf::sec::request_receiver_down;
}

// Asks the current target `call(target)` (a request returning weight_set) for `promise`.
template <class Call>
void ask(relay_pointer self, deadline due, Call call,
         caf::typed_response_promise<weight_set> promise) {
  const auto to = self->state.target;
  call(to).then([=](weight_set& ws) mutable { promise.deliver(std::move(ws)); },
                [=](caf::error& err) mutable {
                  if (!lost(err)) {
                    promise.deliver(std::move(err));
                    return;
                  }
                  if (self->state.target != to) { // re-pointed meanwhile: ask the new home now
                    ask(self, due, call, promise);
                    return;
                  }
                  self->state.held.push_back(
                    {due, [=] { ask(self, due, call, promise); },
                     [=](caf::error e) mutable { promise.deliver(std::move(e)); }});
                });
}

push_relay_actor::behavior_type push_relay(relay_pointer self, push_target_actor target,
                                           std::string name) {
  self->state.target = std::move(target);
  self->state.shard = std::move(name);
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      auto promise = self->make_response_promise<weight_set>();
      const auto due = push.due;
      ask(
        self, due,
        [=, push = std::move(push)](const push_target_actor& to) {
          return self->request(to, due.left_with_grace(), push_atom::value, push);
        },
        promise);
      return promise;
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      auto promise = self->make_response_promise<weight_set>();
      ask(
        self, due,
        [=](const push_target_actor& to) {
          return self->request(to, due.left_with_grace(), pull_atom::value, due);
        },
        promise);
      return promise;
    },
    [=](rewind_atom, std::int64_t step, std::int32_t source,
        deadline due) -> caf::result<weight_set> {
      auto promise = self->make_response_promise<weight_set>();
      ask(
        self, due,
        [=](const push_target_actor& to) {
          return self->request(to, due.left_with_grace(), rewind_atom::value, step, source, due);
        },
        promise);
      return promise;
    },
    [=](repoint_atom, push_target_actor& to) {
      auto& st = self->state;
      st.target = std::move(to);
      auto held = std::move(st.held);
      st.held.clear();
      for (auto& h : held) {
        if (h.due.passed())
          h.fail(
            make_error(errc::timeout, st.shard
                                        + ": its process was lost and no backup took its place "
                                          "before the request's deadline"));
        else
          h.ask();
      }
    },
  };
}

} // namespace

push_relay_actor spawn_push_relay(caf::actor_system& system, push_target_actor target,
                                  std::string name) {
  return system.spawn(push_relay, std::move(target), std::move(name));
}

} // namespace troupe
