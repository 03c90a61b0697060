// A compressed hop message by message on CAF's deterministic test coordinator: a sender's push
// waits at the barrier behind its receiving end until every source of the step has pushed; then
// every source is answered in the same message round, each through its own sending end, with
// the same weights bit for bit (one delta per step and group, added to each sender's copy).
// ctest runs each case alone.
#define CAF_SUITE compressed_hop
#define CAF_TEST_UNIT_TEST_IMPL

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "tests/actors/recorded_answer.hpp"
#include "tests/actors/two_key_pushes.hpp"
#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/compressed_hop.hpp>
#include <troupe/actors/param_shard_actor.hpp>

using namespace troupe;

namespace {

using test::push_of;
using test::same_bits;
using test::two_keys;

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
  // Asks `to` (a push or a pull) from an actor of its own and records the answer.
  std::shared_ptr<answer> ask(push_target_actor to, caf::message msg) {
    auto out = test::ask_and_record<weight_set>(
      sys, caf::actor_cast<caf::actor>(to), [this](caf::actor a) { keep(a); }, msg);
    consume_messages();
    return out;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(compressed_hop_tests, fixture)

CAF_TEST(every_source_of_a_step_gets_the_same_weights_once_the_last_has_pushed) {
  std::string why;
  const auto spec = *parse_compression("2bit:0.25", why);
  shard_options o;
  o.optimizer.sgd = sgd_options{0.9f, 1e-4f, false};
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = 0.05f;
  auto shard = keep(spawn_param_shard(sys, two_keys(), o));
  auto agg = keep(spawn_aggregator(sys, shard, aggregator_options{2, 0, true, 0}));
  auto receiver = keep(spawn_compressing_receiver(sys, agg, spec, "the hop into aggregator_0"));
  std::vector<push_target_actor> senders{
    keep(spawn_compressing_sender(sys, receiver, spec, "compute 0 hop")),
    keep(spawn_compressing_sender(sys, receiver, spec, "compute 1 hop"))};
  for (auto& s : senders) {
    auto pulled = ask(s, caf::make_message(pull_atom::value, deadline{}));
    CAF_REQUIRE(pulled->answered && !pulled->error);
    CAF_REQUIRE_EQUAL(pulled->value.encoding, value_encoding::none);
  }
  for (std::int64_t step = 0; step < 4; ++step) {
    auto first = ask(senders[0], caf::make_message(push_atom::value, push_of(step, 0)));
    CAF_CHECK(!first->answered); // the barrier waits for source 1
    auto second = ask(senders[1], caf::make_message(push_atom::value, push_of(step, 1)));
    CAF_REQUIRE(first->answered && second->answered);
    CAF_REQUIRE(!first->error && !second->error);
    CAF_REQUIRE_EQUAL(first->value.weights.size(), 2u);
    CAF_REQUIRE_EQUAL(second->value.weights.size(), 2u);
    CAF_CHECK_EQUAL(first->value.encoding, value_encoding::none); // summed into the weights held
    for (std::size_t k = 0; k < 2; ++k) {
      CAF_CHECK(same_bits(first->value.weights[k], second->value.weights[k]));
      // each sending end holds its own copy: the senders' replicas never share a buffer
      CAF_CHECK(!first->value.weights[k].shares_storage_with(second->value.weights[k]));
    }
    if (step == 0)
      CAF_CHECK(!same_bits(first->value.weights[0], two_keys()[0].initial)); // something arrived
  }
}

CAF_TEST_FIXTURE_SCOPE_END()
