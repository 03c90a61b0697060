// See backup_mirror.hpp.
#include <troupe/actors/backup_mirror.hpp>

#include <utility>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

namespace {

// The weights of `keys` (a push's, ascending) out of the shard's whole set.
weight_set group_of(const weight_set& all, const std::vector<std::size_t>& keys) {
  weight_set out;
  out.updates = all.updates;
  out.learning_rate = all.learning_rate;
  out.keys = keys;
  for (auto k : keys)
    out.weights.push_back(all.weights.at(k));
  return out;
}

shard_backup_actor::behavior_type backup_mirror(shard_backup_actor::pointer self,
                                                param_shard_actor shard,
                                                compressing_receiver_actor receiver) {
  self->monitor(shard);
  self->monitor(receiver);
  self->set_down_handler([=](caf::down_msg& m) { self->quit(m.reason); });
  const auto start = deadline::after(std::chrono::minutes(10));
  self->request(shard, start.left(), pull_atom::value, start)
    .then([=](weight_set& ws) { caf::anon_send(receiver, hold_atom::value, std::move(ws)); },
          [=](caf::error& err) { self->quit(std::move(err)); });
  return {
    [=](replicate_atom, gradient_push& push) -> caf::result<std::int64_t> {
      auto promise = self->make_response_promise<std::int64_t>();
      const auto due = push.due;
      auto keys = push.keys;
      auto fail = [=](caf::error& err) mutable { promise.deliver(std::move(err)); };
      self->request(shard, due.left(), replicate_atom::value, std::move(push))
        .then(
          [=](std::int64_t updates) mutable {
            self->request(shard, due.left(), pull_atom::value, due)
              .then(
                [=](weight_set& all) mutable {
                  if (keys.empty()) {
                    promise.deliver(updates);
                    return;
                  }
                  self->request(receiver, due.left(), mirror_atom::value, group_of(all, keys))
                    .then([=](bool) mutable { promise.deliver(updates); }, fail);
                },
                fail);
          },
          fail);
      return promise;
    },
  };
}

} // namespace

shard_backup_actor spawn_backup_mirror(caf::actor_system& system, param_shard_actor shard,
                                       compressing_receiver_actor receiver) {
  return system.spawn(backup_mirror, std::move(shard), std::move(receiver));
}

} // namespace troupe
