// A server's side of troupe ctl set: every shard it holds, its own and the backups it keeps of
// the previous server's, takes the scheduler's shard change, so a backup promoted later
// goes on with the same optimizer as the primary it replaces. The scheduler asks between two
// epochs, when no push is in flight; the answer comes once every shard has taken the change,
// and the first refusal (naming the shard) is the answer instead.
#include <memory>
#include <utility>

#include <troupe/graph/config/key_ranges.hpp>

#include "cluster/member/member_state.hpp"

namespace troupe {

namespace {

// The shards of this node with their plan names: own ones, then backups.
std::vector<std::pair<param_shard_actor, std::string>> shards_held(const member_state& st) {
  std::vector<std::pair<param_shard_actor, std::string>> out;
  for (std::size_t i = 0; i < st.part.own_shards.size(); ++i)
    if (st.part.own_shards[i])
      out.emplace_back(st.part.own_shards[i], st.plan.actors.at(i).name);
  for (std::size_t i = 0; i < st.backup.backups.shards.size(); ++i)
    if (st.backup.backups.shards[i])
      out.emplace_back(st.backup.backups.shards[i], st.plan.actors.at(i).name + " (backup)");
  return out;
}

} // namespace

caf::result<std::uint32_t> on_change(member_actor self, const shard_change& change, deadline due) {
  auto& st = self->state;
  if (st.ended())
    return make_error(errc::bad_request, st.label + ": takes no change: it is ending");
  const auto shards = shards_held(st);
  if (shards.empty())
    return make_error(errc::bad_request, st.label + ": holds no shards (it has not been assigned)");
  auto promise = self->make_response_promise<std::uint32_t>();
  auto left = std::make_shared<std::size_t>(shards.size());
  auto failed = std::make_shared<bool>(false);
  for (const auto& [shard, name] : shards)
    self->request(shard, due.left(), change_atom::value, change)
      .then(
        [=](bool) mutable {
          if (--*left == 0 && !*failed)
            promise.deliver(static_cast<std::uint32_t>(shards.size()));
        },
        [=, name = name](caf::error& err) mutable {
          if (std::exchange(*failed, true))
            return;
          promise.deliver(
            make_error(troupe_code(err), self->state.label + ": " + name
                                           + " refused the change: " + error_text(err)));
        });
  log_node_line(*st.options, st.label + ": changing " + to_string(change.setting) + " to "
                               + shortest_number(change.value) + " from step "
                               + std::to_string(change.step) + " in its "
                               + std::to_string(shards.size()) + " shards");
  return promise;
}

} // namespace troupe
