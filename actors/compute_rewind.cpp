// The first weights of a compute adopted after its worker process was lost: every route's
// weights before the step in flight, so that it recomputes that step (a compute that is not
// adopted pulls the current ones: pull_all, compute_phase.hpp).
#include "actors/compute_state.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

namespace troupe::compute_parts {

namespace {

// An adopted compute's first weights: every route's weights before the step in flight. Each
// route answers for the earliest step it has not summed (before_step); routes can be one step
// apart (one summed the lost rank's last push, another had not got it), so the earliest of
// them is the step in flight, and a route that answered for a later one is asked again for it.
void settle_rewind(compute_pointer self, std::shared_ptr<std::vector<weight_set>> answers,
                   std::function<void()> then) {
  auto& st = self->state;
  std::int64_t step = std::numeric_limits<std::int64_t>::max();
  for (const auto& ws : *answers)
    step = std::min(step, ws.before_step);
  auto missing = std::make_shared<std::size_t>(0);
  for (std::size_t r = 0; r < answers->size(); ++r)
    *missing += (*answers)[r].before_step != step ? 1 : 0;
  auto install_all = [=] {
    auto& s = self->state;
    for (std::size_t r = 0; r < answers->size(); ++r)
      if (auto problem = install(s, s.wiring.shards[r], (*answers)[r]); !problem.empty())
        return fail_phase(self, make_error(errc::bad_request, problem));
    s.resume_from = step;
    if (s.wiring.on_rewound)
      s.wiring.on_rewound(step);
    then();
  };
  if (*missing == 0)
    return install_all();
  const auto due = request_due(st);
  for (std::size_t r = 0; r < answers->size(); ++r) {
    if ((*answers)[r].before_step == step)
      continue;
    watched_request<weight_set>(
      self, st.wiring.shards[r].shard,
      "the weights of route " + std::to_string(r) + " before step " + std::to_string(step), due,
      [=](weight_set& ws) {
        if (ws.before_step != step)
          return fail_phase(
            self,
            make_error(errc::bad_request,
                       "compute " + std::to_string(self->state.wiring.rank) + ": route "
                         + std::to_string(r) + " answered the weights before step "
                         + std::to_string(ws.before_step) + " for step " + std::to_string(step)));
        (*answers)[r] = std::move(ws);
        if (--*missing == 0)
          install_all();
      },
      rewind_atom::value, step, st.wiring.shards[r].source_index, due);
  }
}

} // namespace

void rewind_all(compute_pointer self, std::function<void()> then) {
  auto& st = self->state;
  const auto routes = st.wiring.shards.size();
  auto answers = std::make_shared<std::vector<weight_set>>(routes);
  auto missing = std::make_shared<std::size_t>(routes);
  const auto due = request_due(st);
  for (std::size_t r = 0; r < routes; ++r)
    watched_request<weight_set>(
      self, st.wiring.shards[r].shard,
      "the weights of route " + std::to_string(r) + " before the step in flight", due,
      [=](weight_set& ws) {
        (*answers)[r] = std::move(ws);
        if (--*missing == 0)
          settle_rewind(self, answers, then);
      },
      rewind_atom::value, std::int64_t{-1}, st.wiring.shards[r].source_index, due);
}

} // namespace troupe::compute_parts
