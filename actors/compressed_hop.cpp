// Both ends of a compressed hop (compressed_hop.hpp). Buffers: each key keeps what this end
// must remember (the sender's residual and held weights, the receiver's held weights) and a
// small pool for what it hands out; a pooled buffer is written only when nobody else holds it
// (tensor::unique), as the shard does with its weights.
#include <troupe/actors/compressed_hop.hpp>

#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

namespace {

// A buffer of `like`'s shape that no one else holds: one of the key's pool, or a new one.
tensor& free_buffer(std::vector<tensor>& pool, const tensor& like) {
  for (auto& t : pool)
    if (t.unique() && t.shape() == like.shape())
      return t;
  pool.push_back(tensor::uninitialized(like.shape()));
  return pool.back();
}

std::string key_list(const std::vector<std::size_t>& keys) {
  std::string text;
  for (std::size_t i = 0; i < keys.size() && i < 4; ++i)
    text += (i ? ", " : "") + std::to_string(keys[i]);
  return text + (keys.size() > 4 ? ", ..." : "");
}

caf::error named(const std::string& route, const caf::error& err, const char* what) {
  if (err != caf::sec::request_timeout)
    return err;
  return make_error(errc::timeout, route + ": " + what + " got no answer by its deadline");
}

void check_spec(const compression_spec& spec, const char* end) {
  if (!spec.active())
    throw std::invalid_argument(std::string(end)
                                + " of a compressed route with nothing to compress");
}

// Delivers an expected answer: its value, or its error.
void deliver(caf::typed_response_promise<weight_set>& promise, caf::expected<weight_set> answer) {
  if (answer)
    promise.deliver(std::move(*answer));
  else
    promise.deliver(answer.error());
}

// Asks `to` (push or pull, `due` its deadline) on behalf of the request being handled and
// answers that with `then(answer)`, or with the error, a timeout named after `what`.
template <class Self, class Then, class... Ts>
caf::result<weight_set> pass_on(Self self, const push_target_actor& to, deadline due,
                                const char* what, Then then, Ts&&... xs) {
  auto promise = self->template make_response_promise<weight_set>();
  self->request(to, due.left_with_grace(), std::forward<Ts>(xs)...)
    .then([=](weight_set& ws) mutable { deliver(promise, then(std::move(ws))); },
          [=](caf::error& err) mutable { promise.deliver(named(self->state.route, err, what)); });
  return promise;
}

// ---- the sender's end ----

struct sender_state {
  push_target_actor downstream;
  compression_spec spec;
  std::string route;
  std::map<std::size_t, tensor> residual; // by key: what pushes have not sent yet
  std::map<std::size_t, tensor> held;     // by key: the weights the sender holds
  std::map<std::size_t, std::vector<tensor>> sent_pool, weights_pool;
  static inline const char* name = "compressing_sender";
};

using sender_pointer = push_target_actor::stateful_pointer<sender_state>;

// The push as the route sends it: quantized, with its residual kept here. An errc::bad_data
// when a fitted 2-bit scale is not finite (the gradients are not finite numbers).
caf::expected<gradient_push> quantized(sender_state& st, gradient_push push) {
  if (st.spec.pushes == value_encoding::none)
    return push;
  const bool two_bit = st.spec.pushes == value_encoding::two_bit;
  std::vector<float> scales;
  for (std::size_t i = 0; i < push.keys.size(); ++i) {
    const auto key = push.keys[i];
    const auto& g = push.gradients[i];
    auto& r = st.residual[key];
    if (r.shape() != g.shape())
      r = tensor(g.shape()); // zeros: nothing owed yet
    auto& out = free_buffer(st.sent_pool[key], g);
    const auto n = static_cast<std::size_t>(g.numel());
    const auto at = scales.size();
    scales.resize(at + (two_bit ? two_bit_scales(n) : 0));
    try {
      quantize_push(st.spec, g.data(), r.data(), out.data(), scales.data() + at, n);
    } catch (const std::domain_error& e) {
      return make_error(errc::bad_data,
                        st.route + ": the push of key " + std::to_string(key) + ": " + e.what());
    }
    push.gradients[i] = out;
  }
  push.encoding = st.spec.pushes;
  push.scales = std::move(scales);
  return push;
}

// (values, non-zero values) of a quantized push: how much of its gradients the push sends
// (a threshold far above them sends nothing, and the updates vanish). (0, 0) for a push the
// route leaves as it is.
std::pair<std::int64_t, std::int64_t> count_sent(const gradient_push& push) {
  if (push.encoding == value_encoding::none)
    return {0, 0};
  std::int64_t values = 0, sent = 0;
  for (const auto& g : push.gradients) {
    const float* v = g.data();
    const auto n = g.numel();
    values += n;
    for (std::int64_t i = 0; i < n; ++i)
      sent += v[i] != 0.0f;
  }
  return {values, sent};
}

// An answer's deltas added to what the sender holds; the sums are the weights it gets.
caf::expected<weight_set> installed(sender_state& st, weight_set ws) {
  if (st.spec.answers == value_encoding::none && ws.encoding == value_encoding::none)
    return ws;
  if (ws.encoding != st.spec.answers)
    return make_error(errc::bad_data, st.route + ": an answer for keys " + key_list(ws.keys)
                                        + " came encoded " + to_string(ws.encoding)
                                        + ", and this route's answers are "
                                        + to_string(st.spec.answers));
  for (std::size_t i = 0; i < ws.keys.size(); ++i) {
    const auto key = ws.keys[i];
    auto at = st.held.find(key);
    if (at == st.held.end() || at->second.shape() != ws.weights[i].shape())
      return make_error(errc::bad_request,
                        st.route + ": a compressed answer for key " + std::to_string(key)
                          + ", whose weights were never pulled through this route");
    auto& sum = free_buffer(st.weights_pool[key], at->second);
    const float* held = at->second.data();
    const float* delta = ws.weights[i].data();
    float* out = sum.data();
    for (std::int64_t j = 0; j < sum.numel(); ++j)
      out[j] = held[j] + delta[j];
    at->second = sum;
    ws.weights[i] = sum;
  }
  ws.encoding = value_encoding::none;
  ws.scales.clear();
  return ws;
}

// Answers travel as deltas against what every source holds, so a route keeps no weights from
// before a step to answer a rewind with: adoption needs routes without compression.
caf::error refused_rewind(const std::string& route, std::int64_t step) {
  return make_error(errc::bad_request,
                    route + " is compressed and keeps no weights from before step "
                      + std::to_string(step)
                      + ": adopting a lost worker's computes needs routes without compression");
}

push_target_actor::behavior_type compressing_sender(sender_pointer self,
                                                    push_target_actor downstream,
                                                    compression_spec spec, std::string route) {
  self->state.downstream = downstream;
  self->state.spec = spec;
  self->state.route = std::move(route);
  self->monitor(downstream);
  self->set_down_handler([=](caf::down_msg& m) { self->quit(m.reason); });
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      const auto due = push.due;
      auto sent = quantized(self->state, std::move(push));
      if (!sent)
        return std::move(sent.error());
      const auto counted = count_sent(*sent);
      return pass_on(
        self, self->state.downstream, due, "a push",
        [=](weight_set ws) {
          auto out = installed(self->state, std::move(ws));
          if (out) {
            out->values_pushed = counted.first;
            out->values_sent = counted.second;
          }
          return out;
        },
        push_atom::value, std::move(*sent));
    },
    [=](rewind_atom, std::int64_t step, std::int32_t, deadline) -> caf::result<weight_set> {
      return refused_rewind(self->state.route, step);
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return pass_on(
        self, self->state.downstream, due, "a pull",
        [=](weight_set ws) -> caf::expected<weight_set> {
          for (std::size_t i = 0; i < ws.keys.size(); ++i)
            self->state.held[ws.keys[i]] =
              ws.weights[i]; // never written: sums go to pooled buffers
          return ws;
        },
        pull_atom::value, due);
    },
  };
}

// ---- the receiver's end ----

struct receiver_state {
  push_target_actor target;
  compression_spec spec;
  std::string route;
  std::map<std::size_t, tensor> held; // by key: what every sender holds (written in place)
  struct group_answer {
    std::int64_t updates = -1;
    weight_set answer;
    /// A mirrored answer (a backup's): the weights it was made of. The backup's shard swaps in
    /// a new buffer at each update and reuses none still held, so the same buffers mean the same
    /// step, whatever the shard's count says since (other groups applied meanwhile).
    std::vector<tensor> of;
  };
  std::map<std::size_t, group_answer> last; // by a group's first key: its latest answer
  std::map<std::size_t, std::vector<tensor>> delta_pool;
  static inline const char* name = "compressing_receiver";
};

using receiver_pointer = compressing_receiver_actor::stateful_pointer<receiver_state>;

bool same_buffers(const std::vector<tensor>& a, const std::vector<tensor>& b) {
  if (a.empty() || a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].data() != b[i].data())
      return false;
  return true;
}

// The step's weights as a delta against what the senders hold, once per step and group.
// `mirrored`: made for a backup of this end (mirror_atom), which keeps the weights it used.
caf::expected<weight_set> compressed(receiver_state& st, weight_set ws, bool mirrored = false) {
  if (st.spec.answers == value_encoding::none || ws.keys.empty())
    return ws;
  auto& cached = st.last[ws.keys.front()];
  if (cached.answer.keys == ws.keys
      && (cached.updates == ws.updates || same_buffers(cached.of, ws.weights)))
    return cached.answer; // another source of the same step, or a step asked again
  for (auto key : ws.keys)
    if (st.held.find(key) == st.held.end())
      return make_error(errc::bad_request,
                        st.route + ": no weights are held for key " + std::to_string(key)
                          + ": compressed answers start from a pull through this route");
  weight_set out = ws;
  out.encoding = st.spec.answers;
  out.scales.clear();
  for (std::size_t i = 0; i < ws.keys.size(); ++i) {
    auto& held = st.held[ws.keys[i]];
    const auto& target = ws.weights[i];
    if (held.shape() != target.shape())
      return make_error(errc::bad_request, st.route + ": key " + std::to_string(ws.keys[i])
                                             + " changed shape since it was pulled");
    auto& delta = free_buffer(st.delta_pool[ws.keys[i]], target);
    const auto n = static_cast<std::size_t>(target.numel());
    const auto at = out.scales.size();
    out.scales.resize(at + (st.spec.answers == value_encoding::two_bit ? two_bit_scales(n) : 0));
    try {
      quantize_answer(st.spec.answers, target.data(), held.data(), delta.data(),
                      out.scales.data() + at, n);
    } catch (const std::domain_error& e) {
      return make_error(errc::bad_data,
                        st.route + ": key " + std::to_string(ws.keys[i]) + ": " + e.what());
    }
    out.weights[i] = delta;
  }
  cached.updates = ws.updates;
  cached.answer = out;
  cached.of = mirrored ? ws.weights : std::vector<tensor>{};
  return out;
}

// Held weights from a pull's answer: each key not held yet, from then on written in place.
void hold(receiver_state& st, const weight_set& ws) {
  if (st.spec.answers == value_encoding::none)
    return;
  for (std::size_t i = 0; i < ws.keys.size(); ++i)
    if (st.held.find(ws.keys[i]) == st.held.end())
      st.held[ws.keys[i]] = ws.weights[i].clone();
}

compressing_receiver_actor::behavior_type compressing_receiver(receiver_pointer self,
                                                               push_target_actor target,
                                                               compression_spec spec,
                                                               std::string route) {
  self->state.target = target;
  self->state.spec = spec;
  self->state.route = std::move(route);
  self->monitor(target);
  self->set_down_handler([=](caf::down_msg& m) { self->quit(m.reason); });
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> {
      auto& st = self->state;
      if (push.encoding != st.spec.pushes)
        return make_error(errc::bad_request,
                          st.route + ": a push of source " + std::to_string(push.source)
                            + " for keys " + key_list(push.keys) + " came encoded "
                            + to_string(push.encoding) + ", and this route's pushes are "
                            + to_string(st.spec.pushes));
      push.encoding = value_encoding::none; // plain floats from here on: sums are not quantized
      push.scales.clear();
      const auto due = push.due;
      return pass_on(
        self, st.target, due, "a push",
        [=](weight_set ws) { return compressed(self->state, std::move(ws)); }, push_atom::value,
        std::move(push));
    },
    [=](rewind_atom, std::int64_t step, std::int32_t, deadline) -> caf::result<weight_set> {
      return refused_rewind(self->state.route, step);
    },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return pass_on(
        self, self->state.target, due, "a pull",
        [=](weight_set ws) -> caf::expected<weight_set> {
          hold(self->state, ws);
          return ws;
        },
        pull_atom::value, due);
    },
    [=](hold_atom, const weight_set& ws) {
      hold(self->state, ws);
      return true;
    },
    [=](mirror_atom, weight_set& ws) -> caf::result<bool> {
      auto made = compressed(self->state, std::move(ws), true);
      if (!made)
        return std::move(made.error());
      return true;
    },
  };
}

} // namespace

push_target_actor spawn_compressing_sender(caf::actor_system& system, push_target_actor downstream,
                                           compression_spec spec, std::string route) {
  check_spec(spec, "the sender's end");
  if (!downstream)
    throw std::invalid_argument("the sender's end of " + route + " has no downstream");
  return system.spawn(compressing_sender, std::move(downstream), spec, std::move(route));
}

compressing_receiver_actor spawn_compressing_receiver(caf::actor_system& system,
                                                      push_target_actor target,
                                                      compression_spec spec, std::string route) {
  check_spec(spec, "the receiver's end");
  if (!target)
    throw std::invalid_argument("the receiver's end of " + route + " has no target");
  return system.spawn(compressing_receiver, std::move(target), spec, std::move(route));
}

} // namespace troupe
