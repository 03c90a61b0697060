// What every proxy (troupe/cluster/remote_proxies.hpp) does alike: watch its channel, and
// pass a request to it and the answer back. Private to cluster/remote/.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/channel_actor.hpp>

namespace troupe {

struct proxy_state {
  caf::error channel_lost; // why the channel ended, once it has
  std::vector<caf::response_promise> waiting;
  static inline const char* name = "troupe.proxy";
};

// Watches `channel` from `self`; `what` names the remote actor in the error.
template <class Self>
void watch_channel(Self* self, const channel_actor& channel, std::string what) {
  self->monitor(channel);
  self->set_down_handler([=](caf::down_msg& down) {
    auto& st = self->state;
    if (down.reason && down.reason.category() == error_category)
      st.channel_lost = down.reason;
    else
      st.channel_lost =
        make_error(errc::peer_down,
                   "the channel to " + what + " ended"
                     + (down.reason ? ": " + self->system().render(down.reason) : std::string()));
    for (auto& promise : st.waiting)
      if (promise.pending())
        promise.deliver(st.channel_lost);
    st.waiting.clear();
  });
}

// Hands `request` to `channel` with deadline `due`; `answer_of` turns the answer frame into
// the Answer the proxy's caller waits for (caf::expected<Answer>: an error when the frame is
// not what was asked).
// The channel fails the request at `due` (or when it ends): the proxy sets no timer.
template <class Answer, class Self, class AnswerOf>
caf::result<Answer> call_channel(Self* self, const channel_actor& channel, wire_message request,
                                 deadline due, AnswerOf answer_of) {
  auto promise = self->make_response_promise();
  auto& st = self->state;
  if (st.channel_lost) {
    promise.deliver(st.channel_lost);
    return caf::delegated<Answer>{};
  }
  st.waiting.erase(
    std::remove_if(st.waiting.begin(), st.waiting.end(), [](auto& p) { return !p.pending(); }),
    st.waiting.end());
  st.waiting.push_back(promise);
  self->request(channel, caf::infinite, call_atom::value, std::move(request), due)
    .then(
      [=](wire_message& answer) mutable {
        if (!promise.pending())
          return;
        auto got = answer_of(answer);
        if (got)
          promise.deliver(std::move(*got));
        else
          promise.deliver(std::move(got.error()));
      },
      [=](caf::error& err) mutable {
        if (promise.pending())
          promise.deliver(std::move(err));
      });
  return caf::delegated<Answer>{};
}

} // namespace troupe
