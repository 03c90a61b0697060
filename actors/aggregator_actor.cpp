// Implementation notes: contributions wait in a map keyed by (first key of the group, step)
// until `need` have arrived;
// then they are added in source order (deterministic) or arrival order. The contributions are
// handles to the sources' gradient buffers: read, never written, released once summed. A step
// with a single contribution (BSP with one worker, a machine with one worker in a hierarchy)
// forwards that contribution's handles unchanged: the weighted sum would multiply by exactly 1.
#include <troupe/actors/aggregator_actor.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>

namespace troupe {

namespace {

struct pending_step {
  std::vector<gradient_push> parts; // by arrival; handles only, the bytes stay with the sources
  std::int64_t samples = 0;
  double epoch_position = 0;
  std::vector<caf::typed_response_promise<weight_set>> waiting;
  timeline_recorder::clock::time_point first; // when the first contribution came
};

// What the aggregator knows of one push group (named by its first key).
struct group_state {
  std::int64_t forwarded_through = -1; // highest step already sent downstream
  weight_set latest;                   // the newest weights downstream answered with
  bool have_latest = false;
  std::int64_t latest_step = -1; // the step whose sum `latest` answered
  // The answer before `latest` (the weights before step latest_step): an adopted compute
  // recomputing the step in flight starts from them (rewind). Handles, no copy.
  weight_set previous;
  std::int64_t previous_step = -1; // -1: none
  // Repeats of a step already forwarded whose answer has not come back: answered with it.
  std::vector<std::pair<std::int64_t, caf::typed_response_promise<weight_set>>> after_answer;
  std::vector<std::vector<tensor>> pool;            // sum buffers, reused once downstream lets go
  std::optional<timeline_recorder::track_id> track; // made at the group's first timed step
};

struct aggregator_state {
  push_target_actor downstream;
  aggregator_options options;
  std::map<std::pair<std::size_t, std::int64_t>, pending_step> steps; // (group, step)
  std::map<std::size_t, group_state> groups;
  std::int64_t forwarded = 0;
  std::int64_t dropped = 0;
  std::int64_t repeats = 0; // contributions a source sent again (an adopter), dropped
  // Stragglers: when each source's first contribution to a step came (by step, by source), and
  // what the barrier waited for each source (seconds, steps it came last in).
  std::map<std::int64_t, std::vector<std::optional<std::chrono::steady_clock::time_point>>>
    arrivals;
  std::vector<double> waited;
  std::vector<std::int64_t> came_last;
  static inline const char* name = "aggregator";
};

using aggregator_pointer = aggregator_actor::stateful_pointer<aggregator_state>;

std::vector<tensor>& sum_buffers(group_state& group, const gradient_push& like) {
  for (auto& set : group.pool)
    if (!set.empty() && set.front().unique())
      return set;
  std::vector<tensor> fresh;
  for (const auto& g : like.gradients)
    fresh.push_back(tensor::uninitialized(g.shape()));
  group.pool.push_back(std::move(fresh));
  return group.pool.back();
}

// out = sum_i w_i * g_i over `parts` in the given order, w_i = n_i / total.
void weighted_sum(const std::vector<const gradient_push*>& parts, std::int64_t total,
                  std::vector<tensor>& out) {
  for (std::size_t k = 0; k < out.size(); ++k) {
    float* dst = out[k].data();
    const std::int64_t n = out[k].numel();
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const float w = static_cast<float>(parts[p]->samples) / static_cast<float>(total);
      const float* src = parts[p]->gradients[k].data();
      if (p == 0)
        for (std::int64_t i = 0; i < n; ++i)
          dst[i] = w * src[i];
      else
        for (std::int64_t i = 0; i < n; ++i)
          dst[i] += w * src[i];
    }
  }
}

std::string key_list(const std::vector<std::size_t>& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size(); ++i)
    out += (i ? ", " : "") + std::to_string(keys[i]);
  return out + "]";
}

std::string check_contribution(const aggregator_state& st, const gradient_push& push,
                               const pending_step* step) {
  if (push.source < 0 || push.source >= st.options.sources)
    return "aggregator: push from source " + std::to_string(push.source) + ", expected 0.."
           + std::to_string(st.options.sources - 1);
  if (push.samples <= 0)
    return "aggregator: push from source " + std::to_string(push.source) + " carries "
           + std::to_string(push.samples) + " samples";
  if (push.keys.empty() || push.keys.size() != push.gradients.size())
    return "aggregator: push from source " + std::to_string(push.source) + " carries "
           + std::to_string(push.gradients.size()) + " gradients for "
           + std::to_string(push.keys.size()) + " keys";
  if (step && !step->parts.empty()) {
    const auto& first = step->parts.front();
    if (first.keys != push.keys)
      return "aggregator: source " + std::to_string(push.source) + " pushed keys "
             + key_list(push.keys) + " for step " + std::to_string(push.step) + ", others pushed "
             + key_list(first.keys);
    for (std::size_t i = 0; i < push.gradients.size(); ++i)
      if (push.gradients[i].shape() != first.gradients[i].shape())
        return "aggregator: source " + std::to_string(push.source) + " pushed key "
               + std::to_string(push.keys[i]) + " with shape "
               + shape_string(push.gradients[i].shape()) + ", others "
               + shape_string(first.gradients[i].shape());
  }
  return {};
}

// CAF's anonymous request_timeout, as the deadline it was: the aggregator is the hop nearest
// a downstream in this process, so it says what did not come back in time.
caf::error named_timeout(aggregator_pointer self, const caf::error& err, const std::string& what) {
  if (err != caf::sec::request_timeout)
    return err;
  return make_error(errc::timeout, "aggregator " + std::to_string(self->state.options.position)
                                     + ": " + what
                                     + " got no answer from downstream by its deadline");
}

// The group's track on the timeline (made on first use).
timeline_recorder::track_id track_of(aggregator_state& st, std::size_t group_id,
                                     group_state& group) {
  if (!group.track)
    group.track =
      st.options.timeline->track(st.options.track + " group " + std::to_string(group_id));
  return *group.track;
}

void forward_step(aggregator_pointer self, std::pair<std::size_t, std::int64_t> id) {
  auto& st = self->state;
  auto node = st.steps.extract(id);
  auto& step = node.mapped();
  auto& group = st.groups[id.first];
  // The clock is read for the timeline only: a step without one pays nothing.
  const auto forwarded_at =
    st.options.timeline ? timeline_recorder::clock::now() : timeline_recorder::clock::time_point{};
  if (st.options.timeline)
    st.options.timeline->complete(
      track_of(st, id.first, group), "barrier", step.first, forwarded_at,
      {{"step", id.second},
       {"group", static_cast<std::int64_t>(id.first)},
       {"contributions", static_cast<std::int64_t>(step.parts.size())}});
  std::vector<const gradient_push*> order;
  for (auto& p : step.parts)
    order.push_back(&p);
  if (st.options.deterministic)
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->source < b->source; });
  gradient_push sum;
  sum.step = id.second;
  sum.epoch_position = step.epoch_position;
  sum.keys = order.front()->keys;
  sum.source = st.options.position;
  sum.samples = step.samples;
  // The sum is due when its most pressed contribution is: that source gives up then.
  sum.due = order.front()->due;
  for (auto* part : order)
    sum.due = deadline::earlier(sum.due, part->due);
  if (order.size() == 1) {
    // One contribution (one source, or need 1): its weight is n / n = 1 and 1.0f * g == g
    // bit for bit, so the sum is the contribution itself. Its handles go on: no copy, no
    // buffer. The source waits for this push's answer before it writes them again.
    sum.gradients = order.front()->gradients;
  } else {
    auto& buffers = sum_buffers(group, *order.front());
    weighted_sum(order, step.samples, buffers);
    sum.gradients = buffers; // handles: downstream reads them, we reuse them once it lets go
  }
  group.forwarded_through = std::max(group.forwarded_through, id.second);
  ++st.forwarded;
  auto waiting = std::move(step.waiting);
  const auto group_id = id.first;
  const auto due = sum.due;
  self->request(st.downstream, due.left(), push_atom::value, std::move(sum))
    .then(
      [=](weight_set& ws) mutable {
        auto& g = self->state.groups[group_id];
        if (const auto& timeline = self->state.options.timeline)
          timeline->complete(track_of(self->state, group_id, g), "sum", forwarded_at,
                             timeline_recorder::clock::now(),
                             {{"step", id.second}, {"group", static_cast<std::int64_t>(group_id)}});
        if (self->state.options.keep_previous && g.have_latest && g.latest_step == id.second - 1) {
          g.previous = std::move(g.latest);
          g.previous_step = g.latest_step;
        } else {
          g.previous_step = -1; // the weights before this step are not known here
        }
        g.latest = ws;
        g.have_latest = true;
        g.latest_step = id.second;
        for (auto& promise : waiting)
          promise.deliver(ws);
        auto later = std::move(g.after_answer);
        g.after_answer.clear();
        for (auto& [step, promise] : later) {
          if (step <= id.second)
            promise.deliver(ws);
          else
            g.after_answer.emplace_back(step, std::move(promise));
        }
      },
      [=](caf::error& err) mutable {
        const auto why = named_timeout(self, err, "step " + std::to_string(id.second) + "'s sum");
        for (auto& promise : waiting)
          promise.deliver(why);
        for (auto& [step, promise] : self->state.groups[group_id].after_answer)
          promise.deliver(why);
        self->state.groups[group_id].after_answer.clear();
      });
}

// Source `source`'s first contribution to `step` came now. Once every source's has, the step
// waited for the last one from the second-to-last's arrival on: that wait is the last one's.
// Steps some source never reaches (a backup worker's skipped batches, a lost worker) are
// forgotten once eight steps newer have come.
void note_arrival(aggregator_state& st, int source, std::int64_t step) {
  const auto sources = static_cast<std::size_t>(st.options.sources);
  if (sources < 2 || source < 0 || static_cast<std::size_t>(source) >= sources)
    return;
  auto& came = st.arrivals[step];
  if (came.empty())
    came.resize(sources);
  auto& at = came[static_cast<std::size_t>(source)];
  if (at)
    return; // its first contribution to the step came already (another group)
  at = std::chrono::steady_clock::now();
  if (std::any_of(came.begin(), came.end(), [](const auto& t) { return !t; })) {
    while (!st.arrivals.empty() && st.arrivals.begin()->first < step - 8)
      st.arrivals.erase(st.arrivals.begin());
    return;
  }
  std::size_t last = 0;
  for (std::size_t i = 1; i < sources; ++i)
    if (*came[i] > *came[last])
      last = i;
  auto second = std::chrono::steady_clock::time_point::min();
  for (std::size_t i = 0; i < sources; ++i)
    if (i != last)
      second = std::max(second, *came[i]);
  st.waited.resize(sources, 0.0);
  st.came_last.resize(sources, 0);
  st.waited[last] += std::chrono::duration<double>(*came[last] - second).count();
  ++st.came_last[last];
  st.arrivals.erase(step);
}

caf::result<weight_set> on_push(aggregator_pointer self, gradient_push& push) {
  auto& st = self->state;
  const std::size_t group_id = push.keys.empty() ? 0 : push.keys.front();
  if (auto g = st.groups.find(group_id);
      !push.keys.empty() && g != st.groups.end() && push.step <= g->second.forwarded_through) {
    // A late contribution (backup workers): its step already went downstream.
    ++st.dropped;
    auto& group = g->second;
    if (group.latest.keys == push.keys || !group.have_latest) {
      if (group.have_latest && group.latest_step >= push.step)
        return group.latest;
      if (group.latest_step < push.step) {
        // Its sum is on its way downstream: answered with what comes back (an adopter's
        // repeat of the step in flight must get the weights after that step, not before).
        auto promise = self->make_response_promise<weight_set>();
        group.after_answer.emplace_back(group.forwarded_through, promise);
        return promise;
      }
      // Seeded (a promoted backup): answered before this aggregator, so the weights after
      // that step are downstream's current ones (the next cannot be summed without this source).
    }
    auto promise = self->make_response_promise<weight_set>(); // weights on their way: ask
    auto keys = push.keys;
    self->request(st.downstream, push.due.left(), pull_atom::value, push.due)
      .then(
        [=](weight_set& all) mutable {
          weight_set mine;
          mine.updates = all.updates;
          mine.learning_rate = all.learning_rate;
          mine.keys = keys;
          for (auto k : keys) {
            auto at = std::find(all.keys.begin(), all.keys.end(), k);
            if (at == all.keys.end()) {
              promise.deliver(make_error(errc::bad_request,
                                         "aggregator: downstream has no key " + std::to_string(k)));
              return;
            }
            mine.weights.push_back(all.weights[static_cast<std::size_t>(at - all.keys.begin())]);
          }
          promise.deliver(std::move(mine));
        },
        [=](caf::error& err) mutable {
          promise.deliver(named_timeout(self, err, "the newest weights"));
        });
    return caf::delegated<weight_set>();
  }
  const std::pair<std::size_t, std::int64_t> id{group_id, push.step};
  auto it = st.steps.find(id);
  if (auto problem = check_contribution(st, push, it == st.steps.end() ? nullptr : &it->second);
      !problem.empty())
    return make_error(errc::bad_request, problem);
  auto& step = st.steps[id];
  for (const auto& p : step.parts)
    if (p.source == push.source) {
      // Accepted once per (source, step, group): a source that pushes again (a compute
      // adopted after its process was lost, recomputing the step in flight) waits for the
      // same sum; its gradients, equal to the first ones, are dropped.
      ++st.repeats;
      auto promise = self->make_response_promise<weight_set>();
      step.waiting.push_back(promise);
      return promise;
    }
  note_arrival(st, push.source, push.step);
  if (step.parts.empty() && st.options.timeline)
    step.first = timeline_recorder::clock::now();
  step.samples += push.samples;
  step.epoch_position = push.epoch_position;
  step.parts.push_back(std::move(push));
  auto promise = self->make_response_promise<weight_set>();
  step.waiting.push_back(promise);
  const int need = st.options.need > 0 ? st.options.need : st.options.sources;
  if (static_cast<int>(step.parts.size()) >= need)
    forward_step(self, id);
  return caf::delegated<weight_set>();
}

// The weights before step `step` (-1: the earliest step some group has not forwarded yet):
// downstream's current ones, each group's replaced by the answer before its latest where it
// has forwarded `step` already. Groups are at most one step apart in a synchronous topology
// (each forward waits for every source), so one step back is all that is kept. An aggregator
// that has forwarded nothing (a lost machine's, spawned again by its adopter, or at step 0)
// knows nothing of where the run is: downstream does, for this aggregator as its source.
caf::result<weight_set> rewind(aggregator_pointer self, std::int64_t step, deadline due) {
  if (self->state.groups.empty())
    return self->delegate(self->state.downstream, rewind_atom::value, step,
                          std::int32_t{self->state.options.position}, due);
  auto promise = self->make_response_promise<weight_set>();
  self->request(self->state.downstream, due.left(), pull_atom::value, due)
    .then(
      [=](weight_set& all) mutable {
        auto& st = self->state;
        std::vector<bool> grouped(all.keys.size(), false);
        std::int64_t in_flight = std::numeric_limits<std::int64_t>::max();
        for (const auto& [first, g] : st.groups) {
          in_flight = std::min(in_flight, g.forwarded_through + 1);
          for (auto k : g.latest.keys)
            for (std::size_t i = 0; i < all.keys.size(); ++i)
              if (all.keys[i] == k)
                grouped[i] = true;
        }
        // A key no group here has forwarded has never changed: the run is at step 0 there.
        if (st.groups.empty() || std::find(grouped.begin(), grouped.end(), false) != grouped.end())
          in_flight = 0;
        const auto before = step < 0 ? in_flight : step;
        for (const auto& [first, g] : st.groups) {
          if (g.forwarded_through < before - 1 || g.forwarded_through > before) {
            promise.deliver(
              make_error(errc::bad_request, "aggregator " + std::to_string(st.options.position)
                                              + ": cannot give the weights before step "
                                              + std::to_string(before) + ": the group of key "
                                              + std::to_string(first) + " has summed through step "
                                              + std::to_string(g.forwarded_through)));
            return;
          }
          const weight_set* use = nullptr; // null: downstream's current weights are right
          if (g.forwarded_through == before) {
            if (g.have_latest && g.latest_step == before - 1)
              use = &g.latest;
            else if (g.have_latest && g.latest_step == before && g.previous_step == before - 1)
              use = &g.previous;
            else {
              promise.deliver(make_error(
                errc::bad_request,
                "aggregator " + std::to_string(st.options.position) + ": the weights before step "
                  + std::to_string(before) + " of the group of key " + std::to_string(first)
                  + " are not kept here"
                  + (st.options.keep_previous ? ""
                                              : " (it keeps none: on_worker_loss is not adopt)")));
              return;
            }
          }
          if (!use)
            continue;
          for (std::size_t j = 0; j < use->keys.size(); ++j)
            for (std::size_t i = 0; i < all.keys.size(); ++i)
              if (all.keys[i] == use->keys[j])
                all.weights[i] = use->weights[j];
        }
        all.before_step = before;
        promise.deliver(std::move(all));
      },
      [=](caf::error& err) mutable {
        promise.deliver(named_timeout(self, err, "a rewind's weights"));
      });
  return promise;
}

// Downstream is gone: nobody waiting will ever get weights from it.
void on_downstream_down(aggregator_pointer self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (msg.source != st.downstream.address())
    return;
  auto err = make_error(errc::peer_down, "aggregator " + std::to_string(st.options.position)
                                           + ": its downstream terminated ("
                                           + caf::to_string(msg.reason) + ")");
  for (auto& [id, step] : st.steps)
    for (auto& promise : step.waiting)
      promise.deliver(err);
  st.steps.clear();
  for (auto& [id, group] : st.groups)
    for (auto& [step, promise] : group.after_answer)
      promise.deliver(err);
  self->quit(err);
}

aggregator_actor::behavior_type aggregator(aggregator_pointer self, push_target_actor downstream,
                                           aggregator_options options) {
  self->state.downstream = std::move(downstream);
  self->state.options = options;
  self->monitor(self->state.downstream);
  self->set_down_handler([=](caf::down_msg& msg) { on_downstream_down(self, msg); });
  return {
    [=](push_atom, gradient_push& push) -> caf::result<weight_set> { return on_push(self, push); },
    [=](pull_atom, deadline due) -> caf::result<weight_set> {
      return self->delegate(self->state.downstream, pull_atom::value, due);
    },
    [=](stats_atom) -> caf::result<std::int64_t, std::int64_t> {
      return {self->state.forwarded, self->state.dropped};
    },
    [=](rewind_atom, std::int64_t step, std::int32_t, deadline due) {
      return rewind(self, step, due);
    },
    [=](repeats_atom) { return self->state.repeats; },
    [=](waits_atom) -> caf::result<std::vector<double>, std::vector<std::int64_t>> {
      auto& st = self->state;
      st.waited.resize(static_cast<std::size_t>(st.options.sources), 0.0);
      st.came_last.resize(static_cast<std::size_t>(st.options.sources), 0);
      return {st.waited, st.came_last};
    },
    [=](seed_atom, const std::vector<applied_group>& applied) {
      for (const auto& a : applied) {
        if (a.keys.empty() || a.source != self->state.options.position) // another pusher's
          continue;
        auto& g = self->state.groups[a.keys.front()];
        g.forwarded_through = std::max(g.forwarded_through, a.step);
        g.latest_step = std::max(g.latest_step, a.step);
      }
    },
  };
}

} // namespace

aggregator_actor spawn_aggregator(caf::actor_system& system, push_target_actor downstream,
                                  aggregator_options options) {
  if (options.sources < 1)
    throw std::invalid_argument("aggregator: needs at least one source");
  if (options.need < 0 || options.need > options.sources)
    throw std::invalid_argument("aggregator: need " + std::to_string(options.need)
                                + " is outside [0, " + std::to_string(options.sources)
                                + "] (0: all sources)");
  if (!downstream)
    throw std::invalid_argument("aggregator: no downstream actor");
  return system.spawn(aggregator, std::move(downstream), options);
}

} // namespace troupe
