// What the message-level tests share to ask an actor something: an actor of its own sends the
// request and records the answer or the error, so the test can look at it after running the
// coordinator (a request from the test's own scoped actor would block it).
#pragma once

#include <memory>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>

namespace troupe::test {

/// What one request was answered with, once it came.
template <class Answer> struct recorded_answer {
  bool answered = false;
  Answer value{};
  caf::error error;
};

/// Spawns an actor that sends `message` to `to` and records its answer in the result. The actor
/// stays until it is killed (the caller keeps its handle in `keep`), so that a request answered
/// late still has its asker.
template <class Answer, class Handle, class Keep, class... Ts>
std::shared_ptr<recorded_answer<Answer>> ask_and_record(caf::actor_system& sys, Handle to,
                                                        Keep&& keep, Ts... message) {
  auto out = std::make_shared<recorded_answer<Answer>>();
  keep(sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    self->request(to, caf::infinite, message...)
      .then(
        [=](Answer& a) {
          out->answered = true;
          out->value = std::move(a);
        },
        [=](caf::error& e) {
          out->answered = true;
          out->error = std::move(e);
        });
    return {[](int) {}};
  }));
  return out;
}

} // namespace troupe::test
