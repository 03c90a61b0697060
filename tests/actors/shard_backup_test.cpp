// Shards with a backup (shard_backups = 1) message by message on CAF's deterministic test
// coordinator: a primary shard answers a push only once its backup has the step, one whose backup's
// channel ended holds its answers until told the backup is gone, a backup's refusal fails the push;
// the backup's weights and momentum equal the primary's bit for bit; a group and step applied once
// is answered, not applied again; a promoted backup's aggregator, seeded with what its shard
// applied, answers a repeat of the step in flight with the weights after it and sums the next step
// as usual. ctest runs each case alone.
#define CAF_SUITE shard_backup
#define CAF_TEST_UNIT_TEST_IMPL

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "tests/actors/recorded_answer.hpp"
#include "tests/actors/two_key_pushes.hpp"
#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/param_shard_actor.hpp>

using namespace troupe;

namespace {

shard_options momentum_sgd() {
  shard_options o;
  o.optimizer.sgd = sgd_options{0.9f, 1e-4f, false};
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = 0.05f;
  return o;
}

using test::push_of;
using test::same_bits;
using test::two_keys;

struct backup_probe {
  std::vector<gradient_push> received;
  std::vector<caf::typed_response_promise<std::int64_t>> waiting;
  caf::error refuse; // answer every replicate with this error
};

using release_atom = caf::atom_constant<caf::atom("release")>;
using vanish_atom = caf::atom_constant<caf::atom("vanish")>;
using held_backup_actor =
  shard_backup_actor::extend<caf::reacts_to<release_atom>, caf::reacts_to<vanish_atom>>;

// A backup that records each replicated push and answers only when told (release: every
// waiting push acknowledged), or vanishes as a proxy whose channel ended (its process lost).
held_backup_actor::behavior_type held_backup(held_backup_actor::pointer self,
                                             std::shared_ptr<backup_probe> probe) {
  return {
    [=](release_atom) {
      for (auto& promise : probe->waiting)
        promise.deliver(std::int64_t{1});
      probe->waiting.clear();
    },
    [=](vanish_atom) { // as a proxy whose channel ended: what waits fails with peer_down
      for (auto& promise : probe->waiting)
        promise.deliver(make_error(errc::peer_down, "the connection to server_1 closed"));
      probe->waiting.clear();
      self->quit(caf::exit_reason::kill);
    },
    [=](replicate_atom, gradient_push& push) -> caf::result<std::int64_t> {
      probe->received.push_back(push);
      if (probe->refuse)
        return probe->refuse;
      auto promise = self->make_response_promise<std::int64_t>();
      probe->waiting.push_back(promise);
      return promise;
    },
  };
}

using answer = test::recorded_answer<weight_set>;

struct fixture : test_coordinator_fixture<> {
  std::vector<caf::actor> spawned;
  ~fixture() override {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    consume_messages();
  }
  template <class Handle> Handle keep(Handle h) {
    spawned.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }
  param_shard_actor shard(shard_options o = momentum_sgd()) {
    return keep(spawn_param_shard(sys, two_keys(), o));
  }
  std::shared_ptr<answer> push(push_target_actor to, gradient_push p) {
    auto out = test::ask_and_record<weight_set>(
      sys, to, [this](caf::actor a) { keep(a); }, push_atom::value, std::move(p));
    consume_messages();
    return out;
  }
  template <class T, class Handle, class... Ts> T ask(const Handle& to, Ts... xs) {
    std::optional<T> out;
    caf::error failed;
    auto asker = sys.spawn([=, &out, &failed](caf::event_based_actor* self) -> caf::behavior {
      self->request(caf::actor_cast<caf::actor>(to), caf::infinite, xs...)
        .then([&](T& x) { out = std::move(x); }, [&](caf::error& e) { failed = e; });
      return {[](const std::string&) {}};
    });
    consume_messages();
    caf::anon_send_exit(asker, caf::exit_reason::kill);
    consume_messages();
    CAF_REQUIRE(!failed);
    CAF_REQUIRE(out.has_value());
    return std::move(*out);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(shard_backup_tests, fixture)

// The pusher hears nothing until the backup has acknowledged the step, then the primary's
// weights after it; the backup got the very push the primary applied.
CAF_TEST(a_push_is_answered_only_once_its_backup_has_it) {
  auto probe = std::make_shared<backup_probe>();
  auto primary = shard();
  auto backup = keep(sys.spawn(held_backup, probe));
  caf::anon_send(primary, backup_atom::value, caf::actor_cast<shard_backup_actor>(backup));
  consume_messages();
  auto got = push(primary, push_of(0));
  CAF_REQUIRE_EQUAL(probe->received.size(), 1u);
  CAF_CHECK_EQUAL(probe->received[0].step, 0);
  CAF_CHECK(same_bits(probe->received[0].gradients[0], push_of(0).gradients[0]));
  CAF_CHECK(!got->answered);
  caf::anon_send(backup, release_atom::value);
  consume_messages();
  CAF_REQUIRE(got->answered);
  CAF_REQUIRE(!got->error);
  CAF_REQUIRE_EQUAL(got->value.keys.size(), 2u);
  CAF_CHECK_EQUAL(got->value.updates, 1);
}

// A real backup shard fed by its primary holds the same weights and momentum, bit for bit.
CAF_TEST(a_backup_shard_keeps_the_primarys_weights_and_momentum_bit_for_bit) {
  auto primary = shard();
  auto backup = shard();
  caf::anon_send(primary, backup_atom::value, caf::actor_cast<shard_backup_actor>(backup));
  consume_messages();
  for (std::int64_t step = 0; step < 5; ++step) {
    auto got = push(primary, push_of(step));
    CAF_REQUIRE(got->answered && !got->error);
  }
  auto a = ask<shard_snapshot>(primary, snapshot_atom::value);
  auto b = ask<shard_snapshot>(backup, snapshot_atom::value);
  CAF_REQUIRE_EQUAL(a.weights.size(), 2u);
  CAF_REQUIRE_EQUAL(b.weights.size(), a.weights.size());
  CAF_CHECK_EQUAL(b.counters.updates, 5);
  for (std::size_t k = 0; k < a.weights.size(); ++k) {
    CAF_CHECK(same_bits(a.weights[k], b.weights[k]));
    CAF_CHECK(same_bits(a.state[k].tensors.at(0), b.state[k].tensors.at(0)));
  }
  CAF_CHECK(!same_bits(a.weights[0], two_keys()[0].initial)); // it trained
}

// The channel to the backup ends: the push in flight, and one after it, are held (the backup's
// process may live on behind a broken channel, and would fall behind a step a pusher saw) until
// the shard is told the backup is gone; then both are answered, and later pushes are not
// sent to it any more.
CAF_TEST(a_lost_backup_holds_the_answers_until_it_is_said_gone) {
  auto probe = std::make_shared<backup_probe>();
  auto primary = shard();
  auto backup = sys.spawn(held_backup, probe);
  caf::anon_send(primary, backup_atom::value, caf::actor_cast<shard_backup_actor>(backup));
  consume_messages();
  auto first = push(primary, push_of(0));
  CAF_REQUIRE_EQUAL(probe->received.size(), 1u);
  CAF_CHECK(!first->answered);
  caf::anon_send(backup, vanish_atom::value); // its channel ends with the push in flight
  consume_messages();
  CAF_CHECK(!first->answered);
  auto second = push(primary, push_of(1));
  CAF_CHECK(!second->answered);
  caf::anon_send(primary, backup_atom::value, shard_backup_actor{}); // the scheduler: it is gone
  consume_messages();
  CAF_REQUIRE(first->answered && second->answered);
  CAF_REQUIRE(!first->error);
  CAF_REQUIRE(!second->error);
  // Both with the newest weights, as any held answer (two steps of one group follow each
  // other only in async, where the newest is what a pusher wants).
  CAF_CHECK_EQUAL(first->value.updates, 2);
  CAF_CHECK_EQUAL(second->value.updates, 2);
  auto third = push(primary, push_of(2));
  CAF_REQUIRE(third->answered);
  CAF_CHECK(!third->error);
  CAF_CHECK_EQUAL(third->value.updates, 3);
  CAF_CHECK_EQUAL(probe->received.size(), 1u);
}

// A backup that refuses a step (it would diverge) fails the push, naming the backup.
CAF_TEST(a_backups_refusal_fails_the_push) {
  auto probe = std::make_shared<backup_probe>();
  probe->refuse = make_error(errc::bad_request, "param_shard: push names key 7");
  auto primary = shard();
  caf::anon_send(primary, backup_atom::value,
                 caf::actor_cast<shard_backup_actor>(keep(sys.spawn(held_backup, probe))));
  consume_messages();
  auto got = push(primary, push_of(0));
  CAF_REQUIRE(got->answered);
  CAF_REQUIRE(got->error);
  CAF_CHECK_EQUAL(troupe_code(got->error), errc::bad_request);
  CAF_CHECK(error_text(got->error).find("its backup failed step 0") != std::string::npos);
}

// A group and step a source pushed before is answered with the current weights, not applied
// again (a request retried after its first target was lost); `applied` lists the group.
CAF_TEST(a_repeated_group_and_step_is_answered_not_applied) {
  auto s = shard();
  auto first = push(s, push_of(0));
  auto again = push(s, push_of(0));
  CAF_REQUIRE(first->answered && again->answered);
  CAF_REQUIRE(!again->error);
  CAF_CHECK_EQUAL(again->value.updates, 1);
  CAF_REQUIRE_EQUAL(again->value.weights.size(), 2u);
  CAF_CHECK(same_bits(again->value.weights[0], first->value.weights[0]));
  auto applied = ask<std::vector<applied_group>>(s, applied_atom::value);
  CAF_REQUIRE_EQUAL(applied.size(), 1u);
  CAF_CHECK_EQUAL(applied[0].step, 0);
  CAF_CHECK_EQUAL(applied[0].source, 0);
  CAF_CHECK_EQUAL(applied[0].keys, (std::vector<std::size_t>{0, 1}));
  // The replicate path is idempotent the same way.
  auto updates = ask<std::int64_t>(s, replicate_atom::value, push_of(0));
  CAF_CHECK_EQUAL(updates, 1);
}

// Two sources through an aggregator into a primary with a backup; the primary is lost after
// step 0 reached the backup and source 0 heard its answer, source 1 did not. The backup's
// aggregator, seeded with its shard's applied steps, answers source 1's repeat of step 0 at
// once with the weights after it, then sums step 1 of both: the result equals, bit for bit,
// the run that lost nothing.
CAF_TEST(a_promoted_backup_answers_the_repeat_and_sums_the_next_step) {
  aggregator_options two{2, 0, true, 0};
  // The run that lost nothing.
  auto reference = shard();
  auto reference_sum = keep(spawn_aggregator(sys, reference, two));
  for (std::int64_t step = 0; step < 2; ++step) {
    auto a = push(reference_sum, push_of(step, 0));
    auto b = push(reference_sum, push_of(step, 1));
    CAF_REQUIRE(a->answered && b->answered && !a->error && !b->error);
  }
  // The replicated run: step 0 reaches the backup through the primary.
  auto primary = shard();
  auto backup = shard();
  caf::anon_send(primary, backup_atom::value, caf::actor_cast<shard_backup_actor>(backup));
  auto primary_sum = keep(spawn_aggregator(sys, primary, two));
  consume_messages();
  auto a0 = push(primary_sum, push_of(0, 0));
  auto b0 = push(primary_sum, push_of(0, 1));
  CAF_REQUIRE(a0->answered && b0->answered && !a0->error);
  // Promotion: the backup's aggregator starts from what its shard applied.
  auto promoted = keep(spawn_aggregator(sys, backup, two));
  caf::anon_send(promoted, seed_atom::value,
                 ask<std::vector<applied_group>>(backup, applied_atom::value));
  consume_messages();
  auto repeat = push(promoted, push_of(0, 1));
  CAF_REQUIRE(repeat->answered);
  CAF_REQUIRE(!repeat->error);
  CAF_CHECK_EQUAL(repeat->value.updates, 1);
  CAF_CHECK(same_bits(repeat->value.weights[0], a0->value.weights[0]));
  auto a1 = push(promoted, push_of(1, 0));
  CAF_CHECK(!a1->answered); // waits for source 1's step 1
  auto b1 = push(promoted, push_of(1, 1));
  CAF_REQUIRE(a1->answered && b1->answered && !a1->error && !b1->error);
  CAF_CHECK_EQUAL(b1->value.updates, 2);
  auto want = ask<shard_snapshot>(reference, snapshot_atom::value);
  auto got = ask<shard_snapshot>(backup, snapshot_atom::value);
  CAF_REQUIRE_EQUAL(got.weights.size(), want.weights.size());
  for (std::size_t k = 0; k < want.weights.size(); ++k) {
    CAF_CHECK(same_bits(got.weights[k], want.weights[k]));
    CAF_CHECK(same_bits(got.state[k].tensors.at(0), want.state[k].tensors.at(0)));
  }
}

CAF_TEST_FIXTURE_SCOPE_END()
