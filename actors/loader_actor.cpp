// Implementation notes: the queue holds batches of the current epoch only, in index order, so
// serving is a pop from the front. Askers that find no batch ready wait in `waiting`, a queue
// of response promises answered in arrival order (a compute actor asks for one batch at a time,
// so normally it holds at most one; the validation loader is shared only by one compute actor).
#include <troupe/actors/loader_actor.hpp>

#include <algorithm>
#include <deque>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>

namespace troupe {

namespace {

struct loader_state {
  std::shared_ptr<const batch_source> source;
  loader_options options;
  std::int64_t epoch = -1;
  std::int64_t next_to_build = 0;
  std::deque<batch> ready;
  std::deque<caf::typed_response_promise<loader_item>> waiting;
  bool fill_armed = false;
  // Image buffers of batches handed out; one that no other handle sees any more (the compute
  // actor and its model let go) is written again instead of allocating a new one.
  std::vector<tensor> spare;
  // Why a batch could not be built: every asker from then on gets it (see the header).
  caf::error failure;
  static inline const char* name = "loader";
};

// The spawned actor: loader_actor plus the prefetch message it sends only itself.
using loader_self_actor = loader_actor::extend<caf::reacts_to<fill_atom>>;
using loader_pointer = loader_self_actor::stateful_pointer<loader_state>;

std::int64_t epoch_batches(const loader_state& st) {
  const auto all = st.source->batches_per_epoch();
  const auto cap = st.options.max_batches_per_epoch;
  return cap > 0 ? std::min(all, cap) : all;
}

bool epoch_exhausted(const loader_state& st) {
  return st.epoch < 0 || st.next_to_build >= epoch_batches(st);
}

void arm_fill(loader_pointer self) {
  auto& st = self->state;
  if (st.fill_armed || epoch_exhausted(st)
      || static_cast<int>(st.ready.size()) >= st.options.prefetch_depth)
    return;
  st.fill_armed = true;
  self->send(self, fill_atom::value);
}

// Answers every waiting asker that can be answered now.
void serve_waiting(loader_pointer self) {
  auto& st = self->state;
  while (!st.waiting.empty() && (!st.ready.empty() || epoch_exhausted(st))) {
    loader_item item;
    if (!st.ready.empty()) {
      item.data = std::move(st.ready.front());
      st.ready.pop_front();
    } else {
      item.end = true;
    }
    st.waiting.front().deliver(std::move(item));
    st.waiting.pop_front();
  }
}

// Batches out of the loader's hands that may still hold their buffer: the one the compute
// actor is stepping on, the one its model keeps as the first layer's input until the next
// forward, and the one fetched ahead.
constexpr int spare_in_use = 3;

// A spare buffer no one else sees (removed from `spare`: make() needs the only handle), or
// an empty tensor.
tensor take_spare(loader_state& st) {
  for (auto it = st.spare.begin(); it != st.spare.end(); ++it)
    if (it->unique()) {
      tensor t = std::move(*it);
      st.spare.erase(it);
      return t;
    }
  return {};
}

void fill_one(loader_pointer self) {
  auto& st = self->state;
  st.fill_armed = false;
  if (st.failure || epoch_exhausted(st)
      || static_cast<int>(st.ready.size()) >= st.options.prefetch_depth)
    return;
  try {
    st.ready.push_back(st.source->make(st.epoch, st.next_to_build, take_spare(st)));
    if (static_cast<int>(st.spare.size()) < st.options.prefetch_depth + spare_in_use)
      st.spare.push_back(st.ready.back().images);
  } catch (const std::exception& e) {
    st.failure = make_error(classify_exception(e), std::string("loader: ") + e.what());
    for (auto& promise : st.waiting)
      promise.deliver(st.failure);
    st.waiting.clear();
    return;
  }
  ++st.next_to_build;
  serve_waiting(self);
  arm_fill(self);
}

loader_self_actor::behavior_type
loader(loader_pointer self, std::shared_ptr<const batch_source> source, loader_options options) {
  self->state.source = std::move(source);
  self->state.options = options;
  if (self->state.options.prefetch_depth < 1)
    self->state.options.prefetch_depth = 1;
  return {
    [=](epoch_atom, std::int64_t epoch) {
      auto& st = self->state;
      st.epoch = epoch;
      st.next_to_build = 0;
      st.ready.clear();
      arm_fill(self);
    },
    [=](next_atom) -> caf::result<loader_item> {
      auto& st = self->state;
      if (st.failure)
        return st.failure;
      if (st.waiting.empty() && !st.ready.empty()) {
        loader_item item{std::move(st.ready.front()), false};
        st.ready.pop_front();
        arm_fill(self);
        return item;
      }
      if (st.waiting.empty() && epoch_exhausted(st))
        return loader_item{{}, true};
      st.waiting.push_back(self->make_response_promise<loader_item>());
      arm_fill(self);
      return caf::delegated<loader_item>();
    },
    [=](fill_atom) { fill_one(self); },
  };
}

} // namespace

loader_actor spawn_loader(caf::actor_system& system, std::shared_ptr<const batch_source> source,
                          loader_options options) {
  return system.spawn(loader, std::move(source), options);
}

} // namespace troupe
