// Implementation notes: validation of a push happens completely before the first key is
// updated, so a bad message leaves the shard's state untouched ("loses nothing").
//
// The update runs on the shard's own scheduler thread. SGD's runs in slices of `update_slice`
// elements: sgd_update runs a call that small inline, so the shard never starts an OpenMP
// team. The other optimizers run one serial pass per key (optimizer_update), which needs no
// slicing, and must not have it: LAMB's trust ratio takes the norms of the whole key. A team
// started on a scheduler thread would stay beside the compute actor's for the rest of the
// process, and once libgomp manages more threads than there are cores it cuts every team's
// spin-wait to ~100 iterations: each parallel region of a compute step then pays a futex
// wake-up (measured on the MLP, 2 cores: 41 -> 15 thread wake-ups and ~1.2 -> ~0.9 ms per
// step, docs/benchmarks.md "Session overhead"). The update is memory-bound; on one core it
// costs 15 us for the MLP's 109k parameters and ~1 ms for LeNet's 3.3M.
#include <troupe/actors/param_shard_actor.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/graph/config/key_ranges.hpp>

namespace troupe {

namespace {

struct key_state {
  std::string name;
  bool weight_decay = true;
  tensor current;
  optimizer_state state;
  std::vector<tensor> spare; // buffers for the next value; one nobody else holds is reused
};

struct shard_state {
  std::vector<key_state> keys;
  update_rule rule;
  lr_schedule schedule{lr_schedule_options{}};
  std::int64_t updates = 0; // pushes applied
  std::int64_t step_limit = 0;
  // By source: the step of its last push (a step arrives as several pushes, one per group;
  // a step before the last is refused, so this is also each worker's furthest step).
  std::map<int, std::int64_t> last_steps;
  // By (source, first key of the group): the group's keys and the last step applied, so a
  // retried push of a group and step applied already is answered, not applied twice.
  std::map<std::pair<int, std::size_t>, applied_group> applied;
  shard_backup_actor backup; // shard_backups = 1: every applied push goes here first
  // Applied pushes whose replication failed with peer_down: answered once told the backup is
  // gone for good (backup_atom with no backup), never before (the backup would fall behind a
  // step a pusher saw, were its process alive behind a broken channel).
  struct unreplicated {
    std::int64_t step;
    std::vector<std::size_t> keys;
    caf::typed_response_promise<weight_set> promise;
  };
  std::vector<unreplicated> unreplicated_pushes;
  float last_lr = 0;
  // What shard changes set (troupe ctl set), kept in snapshots so a resumed run goes on
  // with them; absent: the options' own.
  std::optional<float> set_lr, set_momentum, set_wd;
  // stale-synchronous bookkeeping
  int staleness = -1;
  int workers = 1;         // the pushing workers whose steps the bound compares
  std::set<int> forgotten; // workers gone for good (forget_atom): not compared, refused
  struct held_reply {
    std::int64_t step;
    std::vector<std::size_t> keys;
    caf::typed_response_promise<weight_set> promise;
  };
  std::vector<held_reply> held;
  std::shared_ptr<timeline_recorder> timeline; // null: no spans
  timeline_recorder::track_id track = 0;
  static inline const char* name = "param_shard";
};

using shard_pointer = param_shard_actor::stateful_pointer<shard_state>;

// Below the element-wise grain of kernels/cpu/parallel.hpp (a call of fewer than twice the
// grain runs on the calling thread), and 64 KB per stream.
constexpr std::int64_t update_slice = std::int64_t{1} << 14;

// One update of a key; `next` may be `current` or a buffer of its own. SGD: sgd_update over
// [0, n) in slices.
void update_key(const update_rule& rule, float lr, const tensor& current, const tensor& grad,
                optimizer_state& state, tensor& next, bool weight_decay) {
  const std::int64_t n = current.numel();
  if (rule.kind != optimizer_kind::sgd || n <= update_slice)
    return optimizer_update(rule, lr, current, grad, state, next, weight_decay);
  auto& velocity = state.tensors.at(0);
  const auto& sgd = rule.sgd;
  ++state.steps;
  for (std::int64_t offset = 0; offset < n; offset += update_slice) {
    const std::int64_t length = std::min(update_slice, n - offset);
    auto v = velocity.flat_slice(offset, length), out = next.flat_slice(offset, length);
    sgd_update(sgd, lr, current.flat_slice(offset, length), grad.flat_slice(offset, length), v, out,
               weight_decay);
  }
}

tensor& writable_buffer(key_state& key) {
  for (auto& buffer : key.spare)
    if (buffer.unique())
      return buffer;
  key.spare.push_back(tensor::uninitialized(key.current.shape()));
  return key.spare.back();
}

std::string check_push(const shard_state& st, const gradient_push& push) {
  if (push.gradients.size() != push.keys.size())
    return "param_shard: push carries " + std::to_string(push.gradients.size()) + " gradients for "
           + std::to_string(push.keys.size()) + " keys";
  if (push.keys.empty())
    return "param_shard: push names no keys";
  for (std::size_t i = 0; i < push.keys.size(); ++i) {
    const auto k = push.keys[i];
    if (k >= st.keys.size())
      return "param_shard: push names key " + std::to_string(k) + ", the shard owns keys 0.."
             + std::to_string(st.keys.size() - 1);
    if (i > 0 && k <= push.keys[i - 1])
      return "param_shard: push lists key '" + st.keys[k].name
             + "' out of order or twice (keys must ascend)";
    if (push.gradients[i].shape() != st.keys[k].current.shape())
      return "param_shard: gradient for key '" + st.keys[k].name + "' has shape "
             + shape_string(push.gradients[i].shape()) + ", the weights have "
             + shape_string(st.keys[k].current.shape());
  }
  if (!(push.epoch_position >= 0))
    return "param_shard: push at invalid epoch position " + std::to_string(push.epoch_position);
  if (push.step < 0 || (st.step_limit > 0 && push.step >= st.step_limit))
    return "param_shard: push of step " + std::to_string(push.step) + " from source "
           + std::to_string(push.source) + " is not a step of this run (0.."
           + std::to_string(st.step_limit - 1) + "): a step from the future";
  const auto last = st.last_steps.find(push.source);
  if (last != st.last_steps.end() && push.step < last->second)
    return "param_shard: push of step " + std::to_string(push.step) + " from source "
           + std::to_string(push.source) + ", which already pushed step "
           + std::to_string(last->second) + ": a replay";
  return {};
}

weight_set current_weights(const shard_state& st, const std::vector<std::size_t>& keys) {
  weight_set out;
  out.updates = st.updates;
  out.learning_rate = st.last_lr;
  out.keys = keys;
  out.weights.reserve(keys.size());
  for (auto k : keys)
    out.weights.push_back(st.keys[k].current);
  return out;
}

weight_set all_weights(const shard_state& st) {
  std::vector<std::size_t> keys(st.keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k)
    keys[k] = k;
  return current_weights(st, keys);
}

// The step of the worker furthest behind (-1 while one has not pushed yet), among those not
// forgotten; with none left, the largest step (nothing is behind, so nothing waits).
std::int64_t slowest(const shard_state& st) {
  std::int64_t floor = std::numeric_limits<std::int64_t>::max();
  for (int w = 0; w < st.workers; ++w) {
    if (st.forgotten.count(w) > 0)
      continue;
    const auto seen = st.last_steps.find(w);
    floor = std::min(floor, seen == st.last_steps.end() ? std::int64_t{-1} : seen->second);
  }
  return floor;
}

// Answers every held push that is now within the staleness bound, with the newest weights.
void release_held(shard_state& st) {
  const auto floor = slowest(st);
  auto keep = st.held.begin();
  for (auto& h : st.held) {
    if (st.staleness < 0 || h.step - floor <= st.staleness) { // (none: a bound that was lifted)
      h.promise.deliver(current_weights(st, h.keys));
    } else {
      if (&*keep != &h) // never onto itself: a self-moved key list may come out empty
        *keep = std::move(h);
      ++keep;
    }
  }
  st.held.erase(keep, st.held.end());
}

// Whether `push` repeats the group and step its source applied last (a retried request; an
// earlier step is a replay, refused by check_push).
bool applied_before(const shard_state& st, const gradient_push& push) {
  const auto at = st.applied.find({push.source, push.keys.front()});
  return at != st.applied.end() && at->second.keys == push.keys && push.step == at->second.step;
}

// Where `source` stands here: `in_flight`, the first step it has not pushed every group of (one
// after its groups' earliest last step; 0 where some key has seen no push of it), and
// `latest`, its groups' latest last step (-1: none).
struct source_steps {
  std::int64_t in_flight = 0, latest = -1;
};

source_steps steps_of(const shard_state& st, int source) {
  std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
  std::int64_t latest = -1;
  std::size_t covered = 0;
  for (auto at = st.applied.lower_bound({source, 0});
       at != st.applied.end() && at->first.first == source; ++at) {
    earliest = std::min(earliest, at->second.step);
    latest = std::max(latest, at->second.step);
    covered += at->second.keys.size();
  }
  return {covered < st.keys.size() ? 0 : earliest + 1, latest};
}

// A rewind asked of the shard itself (async, ssp: no aggregator keeps earlier weights). Its
// current weights stand for those before `source`'s step in flight: that step races the other
// sources' anyway. A compute's routes can be one step apart, so the step before is answered too
// where every group of it here was applied at that step (its repeat is answered, not applied).
caf::expected<weight_set> rewound(const shard_state& st, std::int64_t step, int source) {
  const auto [at, latest] = steps_of(st, source);
  if (step >= 0 && step != at && !(step + 1 == at && latest == step))
    return make_error(errc::bad_request,
                      "param_shard: rewind to step " + std::to_string(step) + " for source "
                        + std::to_string(source) + ", whose step in flight here is "
                        + std::to_string(at)
                        + ": a shard keeps no earlier weights (an aggregator of a synchronous "
                          "topology does)");
  auto out = all_weights(st);
  out.before_step = step >= 0 ? step : at;
  return out;
}

// Checks `push` and applies it; a message when it is refused (nothing applied then).
std::string apply(shard_state& st, const gradient_push& push) {
  if (auto problem = check_push(st, push); !problem.empty())
    return problem;
  if (st.forgotten.count(push.source) > 0)
    return "param_shard: push from source " + std::to_string(push.source)
           + ", which this shard was told is gone (its process was lost)";
  if (st.staleness >= 0 && (push.source < 0 || push.source >= st.workers))
    return "param_shard: push from source " + std::to_string(push.source) + ", expected 0.."
           + std::to_string(st.workers - 1);
  st.last_steps[push.source] = push.step;
  st.applied[{push.source, push.keys.front()}] = applied_group{push.source, push.keys, push.step};
  const float lr = st.schedule.at(push.epoch_position);
  for (std::size_t i = 0; i < push.keys.size(); ++i) {
    auto& key = st.keys[push.keys[i]];
    tensor& next = writable_buffer(key);
    update_key(st.rule, lr, key.current, push.gradients[i], key.state, next, key.weight_decay);
    std::swap(next, key.current); // the old value joins the spares once its readers let go
  }
  ++st.updates;
  st.last_lr = lr;
  return {};
}

// The answer to an applied push of `step`: at once, or held while its pusher is more than
// `staleness` steps ahead of the slowest.
void answer_applied(shard_state& st, std::int64_t step, const std::vector<std::size_t>& keys,
                    caf::typed_response_promise<weight_set> promise) {
  if (st.staleness < 0) {
    promise.deliver(current_weights(st, keys));
    return;
  }
  release_held(st);
  if (step - slowest(st) <= st.staleness)
    promise.deliver(current_weights(st, keys));
  else
    st.held.push_back({step, keys, std::move(promise)});
}

// apply(), recorded as a span when the shard has a timeline.
std::string timed_apply(shard_state& st, const gradient_push& push) {
  if (!st.timeline)
    return apply(st, push);
  const auto start = timeline_recorder::clock::now();
  auto problem = apply(st, push);
  if (problem.empty())
    st.timeline->complete(st.track, "apply", start, timeline_recorder::clock::now(),
                          {{"step", push.step},
                           {"source", push.source},
                           {"keys", static_cast<std::int64_t>(push.keys.size())}});
  return problem;
}

caf::result<weight_set> apply_push(shard_pointer self, const gradient_push& push) {
  auto& st = self->state;
  if (!push.keys.empty() && applied_before(st, push))
    return current_weights(st, push.keys);
  if (auto problem = timed_apply(st, push); !problem.empty())
    return make_error(errc::bad_request, problem);
  auto promise = self->make_response_promise<weight_set>();
  if (!st.backup) {
    answer_applied(st, push.step, push.keys, promise);
    return promise;
  }
  // The pusher hears only once the backup holds the step too: a promoted backup then has
  // every step some pusher saw answered.
  const auto step = push.step;
  const auto keys = push.keys;
  const auto to = st.backup;
  self->request(to, push.due.left(), replicate_atom::value, push)
    .then([=](std::int64_t) mutable { answer_applied(self->state, step, keys, promise); },
          [=](caf::error& err) mutable {
            if (troupe_code(err) != errc::peer_down && err != caf::sec::request_receiver_down) {
              promise.deliver(make_error(troupe_code(err), "param_shard: its backup failed step "
                                                             + std::to_string(step) + ": "
                                                             + error_text(err)));
              return;
            }
            auto& st = self->state;
            if (st.backup != to) { // told meanwhile that the backup is gone
              answer_applied(st, step, keys, promise);
              return;
            }
            st.unreplicated_pushes.push_back({step, keys, promise});
          });
  return promise;
}

// The rules whose update reads a momentum (update_rule::sgd.momentum).
bool uses_momentum(optimizer_kind kind) {
  return kind == optimizer_kind::sgd || kind == optimizer_kind::rmsprop
         || kind == optimizer_kind::lars;
}

// The furthest step any pusher has passed (-1: none yet).
std::int64_t furthest_step(const shard_state& st) {
  std::int64_t furthest = -1;
  for (const auto& [source, step] : st.last_steps)
    furthest = std::max(furthest, step);
  return furthest;
}

// Takes `change` from its step on; a message when it is refused (nothing changes then). The
// ranges are the config keys' (optimizer.lr, .momentum, .wd), which the scheduler checked
// already; a shard refuses what would break its update all the same.
std::string take_change(shard_state& st, const shard_change& change) {
  const std::string what = "param_shard: change of " + std::string(to_string(change.setting))
                           + " to " + std::to_string(change.value) + " from step "
                           + std::to_string(change.step) + ": ";
  if (furthest_step(st) >= change.step)
    return what + "a push of step " + std::to_string(furthest_step(st))
           + " was applied already (a change takes effect between epochs)";
  const auto v = change.value;
  switch (change.setting) {
  case shard_setting::lr: {
    if (!(v > 0 && v <= 100))
      return what + "the rate must be above 0 and at most 100";
    auto schedule = st.schedule.options();
    schedule.base_lr = static_cast<float>(v);
    st.schedule = lr_schedule(schedule);
    st.set_lr = schedule.base_lr;
    return {};
  }
  case shard_setting::momentum:
    if (!uses_momentum(st.rule.kind))
      return what + optimizer_name(st.rule.kind) + " has no momentum";
    if (!(v >= 0 && v < 1))
      return what + "momentum must be at least 0 and below 1";
    st.rule.sgd.momentum = static_cast<float>(v);
    st.set_momentum = st.rule.sgd.momentum;
    return {};
  case shard_setting::wd:
    if (!(v >= 0 && v <= 1))
      return what + "weight decay must be between 0 and 1";
    st.rule.sgd.weight_decay = static_cast<float>(v);
    st.set_wd = st.rule.sgd.weight_decay;
    return {};
  case shard_setting::staleness:
    if (!(v >= -1 && v <= max_staleness && v == std::floor(v)))
      return what + "the bound must be a whole number from -1 (none) to "
             + std::to_string(max_staleness);
    st.staleness = static_cast<int>(v);
    release_held(st); // a looser bound, or none, lets held answers go now
    return {};
  }
  return what + "no such setting";
}

shard_snapshot snapshot_of(const shard_state& st) {
  shard_snapshot out;
  out.optimizer = st.rule.kind;
  for (const auto& key : st.keys) {
    out.weights.push_back(key.current); // never written in place: the handle is a snapshot
    optimizer_state copy{{}, key.state.steps};
    for (const auto& t : key.state.tensors)
      copy.tensors.push_back(t.clone());
    out.state.push_back(std::move(copy));
  }
  out.counters.updates = st.updates;
  out.counters.last_learning_rate = st.last_lr;
  out.counters.last_steps = st.last_steps;
  out.counters.base_lr = st.set_lr;
  out.counters.momentum = st.set_momentum;
  out.counters.weight_decay = st.set_wd;
  return out;
}

caf::result<bool> restore(shard_state& st, const shard_snapshot& s) {
  auto refuse = [](const std::string& why) {
    return make_error(errc::bad_request, "param_shard: restore: " + why);
  };
  if (st.updates != 0 || !st.last_steps.empty())
    return refuse("the shard has applied pushes already");
  if (s.optimizer != st.rule.kind)
    return refuse(std::string("the snapshot holds ") + optimizer_name(s.optimizer)
                  + "'s state, the shard applies " + optimizer_name(st.rule.kind));
  if (s.weights.size() != st.keys.size() || s.state.size() != st.keys.size())
    return refuse("the snapshot holds " + std::to_string(s.weights.size())
                  + " keys, the shard owns " + std::to_string(st.keys.size()));
  const auto tensors = optimizer_state_names(st.rule.kind).size();
  for (std::size_t k = 0; k < st.keys.size(); ++k) {
    const auto& shape = st.keys[k].current.shape();
    bool fits = s.weights[k].shape() == shape && s.state[k].tensors.size() == tensors;
    for (const auto& t : s.state[k].tensors)
      fits = fits && t.shape() == shape;
    if (!fits)
      return refuse("key '" + st.keys[k].name + "' has shape " + shape_string(shape)
                    + ", the snapshot " + shape_string(s.weights[k].shape())
                    + " (or state tensors of other shapes or count)");
  }
  for (std::size_t k = 0; k < st.keys.size(); ++k) {
    st.keys[k].current = s.weights[k].clone();
    st.keys[k].state.steps = s.state[k].steps;
    for (std::size_t i = 0; i < tensors; ++i)
      st.keys[k].state.tensors[i] = s.state[k].tensors[i].clone();
    st.keys[k].spare.clear();
  }
  // The changes the snapshot's run made go on here, each checked as a change is (step 0: no push
  // has been applied here).
  const std::pair<shard_setting, std::optional<float>> changes[] = {
    {shard_setting::lr, s.counters.base_lr},
    {shard_setting::momentum, s.counters.momentum},
    {shard_setting::wd, s.counters.weight_decay}};
  const auto schedule = st.schedule;
  const auto rule = st.rule;
  for (const auto& [setting, value] : changes)
    if (value)
      if (auto problem = take_change(st, {setting, *value, 0}); !problem.empty()) {
        st.schedule = schedule; // nothing changes
        st.rule = rule;
        st.set_lr = st.set_momentum = st.set_wd = std::nullopt;
        return refuse("the snapshot's " + problem);
      }
  st.updates = s.counters.updates;
  st.last_lr = s.counters.last_learning_rate;
  st.last_steps = s.counters.last_steps;
  return true;
}

param_shard_actor::behavior_type param_shard(shard_pointer self, std::vector<shard_key> keys,
                                             shard_options options) {
  auto& st = self->state;
  st.rule = options.optimizer;
  st.schedule = lr_schedule(options.schedule);
  st.last_lr = st.schedule.at(0);
  st.staleness = options.staleness;
  st.step_limit = options.step_limit;
  st.workers = std::max(1, options.workers);
  st.timeline = options.timeline;
  if (st.timeline)
    st.track = st.timeline->track(options.track);
  for (auto& k : keys) {
    key_state key;
    key.name = std::move(k.name);
    key.weight_decay = k.weight_decay;
    key.current = k.initial.clone();
    key.state = initial_optimizer_state(st.rule.kind, key.current.shape());
    st.keys.push_back(std::move(key));
  }
  return {
    [=](push_atom, const gradient_push& push) -> caf::result<weight_set> {
      return apply_push(self, push);
    },
    [=](pull_atom, deadline) -> caf::result<weight_set> {
      return all_weights(self->state);
    }, // answers at once
    [=](rewind_atom, std::int64_t step, std::int32_t source, deadline) -> caf::result<weight_set> {
      return rewound(self->state, step, source);
    },
    [=](snapshot_atom) -> shard_snapshot { return snapshot_of(self->state); },
    [=](restore_atom, const shard_snapshot& s) -> caf::result<bool> {
      return restore(self->state, s);
    },
    [=](replicate_atom, const gradient_push& push) -> caf::result<std::int64_t> {
      auto& st = self->state;
      if (!push.keys.empty() && applied_before(st, push))
        return st.updates;
      if (auto problem = timed_apply(st, push); !problem.empty())
        return make_error(errc::bad_request, "replicated " + problem);
      if (st.staleness >= 0)
        release_held(st);
      return st.updates;
    },
    [=](backup_atom, shard_backup_actor& backup) {
      auto& st = self->state;
      st.backup = std::move(backup);
      if (st.backup)
        return;
      auto held = std::move(st.unreplicated_pushes); // the backup is gone: this copy goes on alone
      st.unreplicated_pushes.clear();
      for (auto& h : held)
        answer_applied(st, h.step, h.keys, std::move(h.promise));
    },
    [=](applied_atom) {
      std::vector<applied_group> out;
      for (const auto& [id, group] : self->state.applied)
        out.push_back(group);
      return out;
    },
    [=](change_atom, const shard_change& change) -> caf::result<bool> {
      if (auto problem = take_change(self->state, change); !problem.empty())
        return make_error(errc::bad_request, problem);
      return true;
    },
    [=](forget_atom, const std::vector<std::int32_t>& workers) {
      auto& st = self->state;
      st.forgotten.insert(workers.begin(), workers.end());
      if (st.staleness >= 0)
        release_held(st);
    },
  };
}

} // namespace

const char* to_string(shard_setting setting) {
  switch (setting) {
  case shard_setting::lr:
    return "lr";
  case shard_setting::momentum:
    return "momentum";
  case shard_setting::wd:
    return "wd";
  case shard_setting::staleness:
    return "staleness";
  }
  return "unknown setting";
}

param_shard_actor spawn_param_shard(caf::actor_system& system, std::vector<shard_key> keys,
                                    shard_options options) {
  if (keys.empty())
    throw std::invalid_argument("param_shard: no keys to own");
  lr_schedule check(options.schedule); // throws on a bad schedule before anything spawns
  return system.spawn(param_shard, std::move(keys), std::move(options));
}

} // namespace troupe
