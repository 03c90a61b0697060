// The scheduler node's recovery, message by message (scheduler_fixture.hpp): promotion of a
// lost server's backups (shard_backups = 1), a spare taking a lost worker's node, and a resumed
// scheduler gathering its plan's nodes again.
//
// Built on CAF's own test framework (its test coordinator needs it); ctest runs each case
// alone (tests/cluster/CMakeLists.txt).
#define CAF_SUITE node_control

#include <set>

#include "tests/cluster/scheduler_fixture.hpp"

namespace {

// Pulls the weights through `target` (the session's handle on a shard: a relay with
// shard backups); records the answer.
caf::behavior ask_pull(caf::event_based_actor* self, push_target_actor target,
                       std::shared_ptr<phase_answer> out) {
  self->request(target, caf::infinite, pull_atom::value, deadline::after(std::chrono::hours(1)))
    .then([=](weight_set&) { out->answered = true; },
          [=](caf::error& err) {
            out->answered = true;
            out->error =
              err.category() == error_category ? error_text(err) : std::string("caf error");
          });
  return {[](const std::string&) {}};
}

// Two servers and two workers of a job with shard_backups = 1, training; the servers joined with
// the ports they bound.
struct replicated : scheduler_fixture {
  std::vector<sent_list> ss{2}, ws{2};
  std::vector<channel_actor> servers, workers;
  void to_replicated_training() {
    start(2, 2, false, false, 1);
    for (int s = 0; s < 2; ++s) {
      servers.push_back(holding(ss[static_cast<std::size_t>(s)]));
      caf::anon_send(node, join_atom::value, servers.back(),
                     join_message{node_kind::server, "10.0.0.1",
                                  static_cast<std::uint16_t>(4000 + s),
                                  static_cast<std::uint32_t>(100 + s), s, 0});
      settle();
    }
    for (int w = 0; w < 2; ++w) {
      workers.push_back(holding(ws[static_cast<std::size_t>(w)]));
      join(workers.back(), node_kind::worker, w, 200 + static_cast<std::uint32_t>(w));
    }
    for (int s = 0; s < 2; ++s)
      ready(servers[static_cast<std::size_t>(s)],
            last_of<assignment_message>(ss[static_cast<std::size_t>(s)])->node,
            static_cast<std::uint16_t>(4000 + s));
    for (int w = 0; w < 2; ++w)
      ready(workers[static_cast<std::size_t>(w)],
            last_of<assignment_message>(ws[static_cast<std::size_t>(w)])->node);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(replica_tests, replicated)

// shard_backups = 1: the servers' assignments say where every server listens (from their joins);
// a server lost in training has its backups promoted on the next server, and only once that
// server says ready for the lost node are the workers told and the session's pull, held by
// its relay since the loss, asked there.
CAF_TEST(lost_server_is_promoted_on_the_next_and_workers_told_after) {
  to_replicated_training();
  CAF_REQUIRE_EQUAL(session->runs, 1);
  for (int s = 0; s < 2; ++s) {
    const auto* a = last_of<assignment_message>(ss[static_cast<std::size_t>(s)]);
    CAF_REQUIRE(a != nullptr);
    CAF_REQUIRE_EQUAL(a->servers.size(), 2u);
    CAF_CHECK_EQUAL(a->servers[0].port + a->servers[1].port, 8001);
  }
  const int lost_node = plan_node(node_kind::server, 0), holder = plan_node(node_kind::server, 1);
  const auto shard = first_actor(plan_role::shard, lost_node);
  CAF_REQUIRE(shard < plan.actors.size());
  auto relay = sinks.node.remote.push_target(shard);
  spawned.push_back(caf::actor_cast<caf::actor>(relay));
  *down.at(servers[0].address()) = true;
  auto pulled = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_pull, relay, pulled));
  settle();
  CAF_REQUIRE_EQUAL(count_of<pull_message>(ss[0]), 1);
  killed(servers[0]);
  CAF_CHECK(!result->answered);
  CAF_CHECK(!pulled->answered); // held, not failed
  CAF_CHECK(logged("lost server 0 (pid 100"));
  CAF_CHECK(logged("server 1 (pid 101 on 10.0.0.1) holds the backups of its shards ("
                   + plan.actors[shard].name + "): promoting them (shard_backups = 1)"));
  CAF_REQUIRE_EQUAL(count_of<promote_message>(ss[1]), 1);
  CAF_CHECK_EQUAL(last_of<promote_message>(ss[1])->node, static_cast<std::uint32_t>(lost_node));
  CAF_CHECK_EQUAL(last_of<promote_message>(ss[1])->server, static_cast<std::uint32_t>(holder));
  for (auto& w : ws)
    CAF_CHECK_EQUAL(count_of<promote_message>(w), 0); // not before the holder serves them
  CAF_CHECK_EQUAL(count_of<pull_message>(ss[1]), 0);
  ready(servers[1], static_cast<std::uint32_t>(lost_node));
  for (auto& w : ws) {
    CAF_REQUIRE_EQUAL(count_of<promote_message>(w), 1);
    CAF_CHECK_EQUAL(last_of<promote_message>(w)->server, static_cast<std::uint32_t>(holder));
  }
  CAF_REQUIRE_EQUAL(count_of<pull_message>(ss[1]), 1);
  CAF_CHECK_EQUAL(last_of<pull_message>(ss[1])->shard,
                  static_cast<std::uint32_t>(plan.actors[shard].shard));
  CAF_CHECK(pulled->answered);
  CAF_CHECK_EQUAL(pulled->error, "");
  CAF_CHECK(logged("server 1 (pid 101 on 10.0.0.1) serves the shards of server_0"));
  CAF_CHECK(!result->answered);
}

// Every member's assignment gives it a term of its own. A server lost in training is fenced
// before anything of it moves: every other member hears its term (the holder before it is asked
// to promote), so none of them takes a frame of that process again if it runs once more.
CAF_TEST(lost_server_is_fenced_before_its_backups_are_promoted) {
  to_replicated_training();
  std::set<std::uint64_t> terms;
  for (const auto& sent : {ss[0], ss[1], ws[0], ws[1]}) {
    const auto* a = last_of<assignment_message>(sent);
    CAF_REQUIRE(a != nullptr);
    CAF_CHECK(a->term >= 1);
    terms.insert(a->term);
  }
  CAF_CHECK_EQUAL(terms.size(), 4u);
  const auto lost_term = last_of<assignment_message>(ss[0])->term;
  const int lost_node = plan_node(node_kind::server, 0);
  killed(servers[0]);
  CAF_CHECK(logged("scheduler: fenced server 0 (pid 100"));
  for (const auto& sent : {ss[1], ws[0], ws[1]}) {
    CAF_REQUIRE_EQUAL(count_of<fence_message>(sent), 1);
    CAF_CHECK_EQUAL(last_of<fence_message>(sent)->term, lost_term);
    CAF_CHECK_EQUAL(last_of<fence_message>(sent)->node, static_cast<std::uint32_t>(lost_node));
    CAF_CHECK(contains(last_of<fence_message>(sent)->reason,
                       "the scheduler declared it lost: lost server 0 (pid 100"));
  }
  CAF_CHECK_EQUAL(count_of<fence_message>(ss[0]), 0);
  auto index_of = [](const sent_list& sent, auto is) {
    return std::find_if(sent->begin(), sent->end(), is) - sent->begin();
  };
  const auto fenced_at =
    index_of(ss[1], [](auto& m) { return std::holds_alternative<fence_message>(m); });
  const auto promoted_at =
    index_of(ss[1], [](auto& m) { return std::holds_alternative<promote_message>(m); });
  CAF_REQUIRE(promoted_at < static_cast<std::ptrdiff_t>(ss[1]->size()));
  CAF_CHECK(fenced_at < promoted_at);
}

// The server serving promoted backups is lost too: their only copy is gone, the run stops
// naming it.
CAF_TEST(losing_the_promoted_copy_stops_the_run) {
  to_replicated_training();
  killed(servers[0]);
  ready(servers[1], static_cast<std::uint32_t>(plan_node(node_kind::server, 0)));
  killed(servers[1]);
  session_ends(make_error(errc::peer_down, "the run ends"));
  for (auto& w : workers)
    lost(w, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost server 1 (pid 101"));
  CAF_CHECK(
    contains(result->error,
             "not promoted: it served the promoted backups of server_0, their only copy left"));
}

// A second server lost while a promotion is under way stops the run naming both.
CAF_TEST(second_server_lost_during_a_promotion_stops_naming_both) {
  to_replicated_training();
  killed(servers[0]);
  CAF_REQUIRE_EQUAL(count_of<promote_message>(ss[1]), 1);
  killed(servers[1]);
  session_ends(make_error(errc::peer_down, "the run ends"));
  for (auto& w : workers)
    lost(w, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost server 1 (pid 101"));
  CAF_CHECK(contains(result->error, "served the promoted backups of server_0"));
}

// Without shard backups a lost server stops the run, naming it; nothing is promoted.
CAF_TEST(lost_server_without_backups_stops) {
  start(2, 2);
  sent_list s0, s1, w0, w1;
  std::vector<channel_actor> servers{channel(s0), channel(s1)};
  std::vector<channel_actor> workers{channel(w0), channel(w1)};
  for (int s = 0; s < 2; ++s)
    join(servers[static_cast<std::size_t>(s)], node_kind::server, s,
         100 + static_cast<std::uint32_t>(s));
  for (int w = 0; w < 2; ++w)
    join(workers[static_cast<std::size_t>(w)], node_kind::worker, w,
         200 + static_cast<std::uint32_t>(w));
  CAF_CHECK(last_of<assignment_message>(s0)->servers.empty()); // servers learn of no other server
  ready(servers[0], last_of<assignment_message>(s0)->node, 4000);
  ready(servers[1], last_of<assignment_message>(s1)->node, 4001);
  ready(workers[0], last_of<assignment_message>(w0)->node);
  ready(workers[1], last_of<assignment_message>(w1)->node);
  lost(servers[0], "the connection closed");
  CAF_CHECK_EQUAL(count_of<promote_message>(s1), 0);
  session_ends(make_error(errc::peer_down, "the run ends"));
  lost(servers[1], "");
  for (auto& w : workers)
    lost(w, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost server 0 (pid 100"));
  CAF_CHECK(!contains(result->error, "promot"));
}

// With shard backups a server that said no port when it joined cannot be reached by the others:
// the scheduler ends the run naming it before any server is assigned.
CAF_TEST(backups_need_each_servers_port_at_join) {
  start(2, 2, false, false, 1);
  sent_list s0, s1, w0, w1;
  auto a = channel(s0), b = channel(s1);
  join(a, node_kind::server, 0, 100); // port 0
  caf::anon_send(node, join_atom::value, b,
                 join_message{node_kind::server, "10.0.0.1", 4001, 101, 1, 0});
  settle();
  join(channel(w0), node_kind::worker, 0, 200);
  join(channel(w1), node_kind::worker, 1, 201);
  CAF_CHECK_EQUAL(count_of<assignment_message>(s0), 0);
  CAF_CHECK_EQUAL(count_of<assignment_message>(s1), 0);
  CAF_CHECK(logged("server 0 (pid 100 on 10.0.0.1) said no port when it joined"));
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST_FIXTURE_SCOPE(spare_tests, scheduler_fixture)

// A spare worker (join_message::spare) joins beside the plan's workers: it is not counted, gets
// no assignment while the run starts, and its loss before a worker's costs nothing. When a
// worker is lost in training (adopt), the spare gets the lost node's assignment with `adopt`,
// and the lost compute's relay is re-pointed at the spare's channel once it says ready.
CAF_TEST(a_spare_takes_a_lost_workers_node) {
  start(1, 2, false, true);
  sent_list server_sent, spare_sent, idle_sent;
  std::vector<sent_list> ws(2);
  auto server = channel(server_sent);
  std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1])};
  auto spare = holding(spare_sent);
  auto idle = channel(idle_sent);
  join_message as_spare{node_kind::worker, "10.0.0.2", 0, 300, -1, 0};
  as_spare.spare = true;
  caf::anon_send(node, join_atom::value, spare, as_spare);
  settle();
  CAF_CHECK(logged("spare worker (pid 300 on 10.0.0.2) joined as a spare; it takes the place of "
                   "the first worker lost"));
  to_training(server, server_sent, workers, ws);
  CAF_REQUIRE_EQUAL(session->runs, 1);
  CAF_CHECK_EQUAL(count_of<assignment_message>(spare_sent), 0);
  // A second spare joins during training (any worker joining then is one), and is lost idle.
  caf::anon_send(node, join_atom::value, idle,
                 join_message{node_kind::worker, "10.0.0.3", 0, 301, -1, 0});
  settle();
  CAF_CHECK(logged("spare worker (pid 301 on 10.0.0.3) joined as a spare"));
  lost(idle, "the connection closed");
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("a spare, it held nothing: the run goes on"));
  // Worker 1 is lost mid-phase: the spare takes its node.
  const int lost_node = plan_node(node_kind::worker, 1);
  const auto compute = first_actor(plan_role::compute, lost_node);
  auto relay = sinks.node.remote.compute(compute);
  *down.at(workers[1].address()) = true;
  auto phase = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_train, relay, 0, phase));
  settle();
  killed(workers[1]);
  CAF_CHECK(!result->answered);
  CAF_CHECK(!phase->answered);
  CAF_REQUIRE_EQUAL(count_of<assignment_message>(spare_sent), 1);
  const auto* a = last_of<assignment_message>(spare_sent);
  CAF_CHECK(a->adopt);
  CAF_CHECK_EQUAL(a->node, static_cast<std::uint32_t>(lost_node));
  CAF_CHECK_EQUAL(a->rank, 1u);
  CAF_CHECK_EQUAL(a->servers.size(), 1u);
  CAF_CHECK_EQUAL(count_of<adopt_message>(ws[0]), 0); // not the surviving worker
  CAF_CHECK(logged(
    "spare worker 1 (pid 300 on 10.0.0.2) adopts compute_1 of worker_1 (a spare, idle until now"));
  CAF_CHECK_EQUAL(count_of<control_message>(spare_sent), 0);
  ready(spare, static_cast<std::uint32_t>(lost_node));
  CAF_REQUIRE_EQUAL(count_of<control_message>(spare_sent), 1);
  CAF_CHECK(phase->answered);
  CAF_CHECK_EQUAL(phase->error, "");
  CAF_CHECK(logged("spare worker 1 (pid 300 on 10.0.0.2) serves the computes of worker_1"));
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST_FIXTURE_SCOPE(resume_tests, scheduler_fixture)

namespace {

// A member's rejoin to a restarted scheduler (join_message::rejoin).
join_message rejoin_of(node_kind role, std::uint32_t plan_node, std::uint32_t pid,
                       std::uint64_t job_hash, std::int64_t epoch, std::int64_t applied_step,
                       std::uint16_t port = 0) {
  join_message j{role, "10.0.0.1", port, pid, -1, job_hash};
  j.rejoin = rejoin_message{plan_node, 2, epoch, applied_step, {}, {}};
  return j;
}

} // namespace

// A scheduler restarted with --resume takes rejoins only; it sends no assignment, and once
// every plan node is back the session starts at the latest epoch any compute was asked to
// train, with each member's channel serving its node.
CAF_TEST(resumed_scheduler_goes_on_once_every_plan_node_rejoined) {
  options.resume = true;
  start(1, 2);
  sent_list server_sent;
  std::vector<sent_list> ws(2);
  auto server = channel(server_sent);
  std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1])};
  const auto hash = job_hash_without_counts(job);
  auto send = [&](const channel_actor& l, join_message j) {
    caf::anon_send(node, join_atom::value, l, std::move(j));
    settle();
  };
  send(server,
       rejoin_of(node_kind::server, static_cast<std::uint32_t>(plan_node(node_kind::server, 0)),
                 100, hash, -1, 140, 4000));
  send(workers[0],
       rejoin_of(node_kind::worker, static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)),
                 200, hash, 1, -1));
  CAF_CHECK_EQUAL(session->runs, 0);
  CAF_CHECK(logged("rejoined as server_0; its shards applied step 140 last; 1 of 3 plan nodes "
                   "back; waiting for worker_0"));
  CAF_CHECK(logged("rejoined as worker_0; its computes were last asked to train epoch 1; 2 of 3 "
                   "plan nodes back; waiting for worker_1"));
  send(workers[1],
       rejoin_of(node_kind::worker, static_cast<std::uint32_t>(plan_node(node_kind::worker, 1)),
                 201, hash, 2, -1));
  CAF_REQUIRE_EQUAL(session->runs, 1);
  CAF_CHECK_EQUAL(sinks.node.resume_at_epoch, 2);
  CAF_CHECK(logged("every plan node is back; the run goes on at epoch 2"));
  CAF_CHECK(logged("(the shards applied step 140 last)"));
  for (auto* sent : {&server_sent, &ws[0], &ws[1]})
    CAF_CHECK_EQUAL(count_of<assignment_message>(*sent), 0);
  // The session's stand-in for worker 1's compute asks over worker 1's channel.
  auto compute =
    sinks.node.remote.compute(first_actor(plan_role::compute, plan_node(node_kind::worker, 1)));
  spawned.push_back(caf::actor_cast<caf::actor>(compute));
  auto phase = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_train, compute, 2, phase));
  settle();
  CAF_CHECK(phase->answered);
  CAF_CHECK_EQUAL(count_of<control_message>(ws[1]), 1);
  CAF_CHECK_EQUAL(count_of<control_message>(ws[0]), 0);
  session_ends();
  CAF_CHECK(!result->answered);
}

// The epoch the run goes on in is counted from where each member's traffic stood at the
// previous epoch's end (its last traffic answer, in its rejoin), not from the member's start.
CAF_TEST(resumed_scheduler_counts_the_epochs_traffic_from_the_previous_epochs_end) {
  options.resume = true;
  start(1, 2);
  const auto hash = job_hash_without_counts(job);
  std::vector<sent_list> sent(3);
  std::vector<channel_actor> channels{channel(sent[0]), channel(sent[1]), channel(sent[2])};
  const std::vector<std::uint32_t> nodes{
    static_cast<std::uint32_t>(plan_node(node_kind::server, 0)),
    static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)),
    static_cast<std::uint32_t>(plan_node(node_kind::worker, 1))};
  for (std::size_t i = 0; i < channels.size(); ++i) {
    auto j = rejoin_of(i == 0 ? node_kind::server : node_kind::worker, nodes[i],
                       100 + static_cast<std::uint32_t>(i), hash, i == 0 ? -1 : 1,
                       i == 0 ? 100 : -1, i == 0 ? 4000 : 0);
    j.rejoin->counted = traffic_message{0, {peer_traffic{"peer", {0}, {1000}}}};
    caf::anon_send(node, join_atom::value, channels[i], j);
  }
  settle();
  CAF_REQUIRE_EQUAL(session->runs, 1);
  auto gate = epoch_done(1);
  for (auto& l : channels)
    traffic(l, 1, 1500);
  CAF_REQUIRE(gate->answered);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK(contains(metrics->traffic[0].second, "server_0 rx 0 B tx 500 B"));
  CAF_CHECK(contains(metrics->traffic[0].second, "worker_1 rx 0 B tx 500 B"));
}

// A member that had adopted a lost worker's computes before the scheduler was lost rejoins
// holding that node: the session reaches the adopted computes over the adopter's channel.
CAF_TEST(resumed_scheduler_reaches_an_adopted_node_through_its_adopter) {
  options.resume = true;
  start(1, 2, false, true);
  sent_list server_sent, w0_sent;
  auto server = channel(server_sent);
  auto w0 = holding(w0_sent);
  const auto hash = job_hash_without_counts(job);
  caf::anon_send(node, join_atom::value, server,
                 rejoin_of(node_kind::server,
                           static_cast<std::uint32_t>(plan_node(node_kind::server, 0)), 100, hash,
                           -1, 7, 4000));
  auto adopter =
    rejoin_of(node_kind::worker, static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)), 200,
              hash, 0, -1);
  adopter.rejoin->adopted = {static_cast<std::uint32_t>(plan_node(node_kind::worker, 1))};
  caf::anon_send(node, join_atom::value, w0, adopter);
  settle();
  CAF_REQUIRE_EQUAL(session->runs, 1);
  CAF_CHECK(logged("holding worker_1 (adopted)"));
  auto compute =
    sinks.node.remote.compute(first_actor(plan_role::compute, plan_node(node_kind::worker, 1)));
  spawned.push_back(caf::actor_cast<caf::actor>(compute));
  auto phase = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_train, compute, 0, phase));
  settle();
  CAF_CHECK(phase->answered);
  CAF_CHECK_EQUAL(count_of<control_message>(w0_sent), 1);
}

// What a restarted scheduler refuses, each naming why on the member's channel: a first join (not
// a spare's), a node of another role, a node back already, another job; a scheduler not
// started with --resume refuses a rejoin.
CAF_TEST(resumed_scheduler_refuses_what_cannot_rejoin) {
  options.resume = true;
  start(1, 2);
  const auto hash = job_hash_without_counts(job);
  const auto w0_node = static_cast<std::uint32_t>(plan_node(node_kind::worker, 0));
  auto refusal = [&](join_message j) {
    sent_list sent;
    auto l = channel(sent);
    caf::anon_send(node, join_atom::value, l, std::move(j));
    settle();
    const auto* bye = last_of<shutdown_message>(sent);
    return bye ? bye->reason : std::string("(no refusal)");
  };
  CAF_CHECK(contains(refusal(rejoin_of(node_kind::server, w0_node, 301, hash, -1, 3, 4000)),
                     "worker_0 is no server node of the plan"));
  CAF_CHECK(contains(refusal(rejoin_of(node_kind::worker, w0_node, 302, hash + 1, 0, -1)),
                     "it trains another job"));
  CAF_CHECK_EQUAL(refusal(rejoin_of(node_kind::worker, w0_node, 303, hash, 0, -1)), "(no refusal)");
  CAF_CHECK(contains(refusal(rejoin_of(node_kind::worker, w0_node, 304, hash, 0, -1)),
                     "worker_0 is back already"));
  // Once a member rejoined, the run is the one it kept training: a first join is refused.
  CAF_CHECK(contains(
    refusal(join_message{node_kind::worker, "10.0.0.1", 0, 300, 1, hash}),
    "this scheduler was started with --resume and takes over the run its members kept training"));
  CAF_CHECK_EQUAL(session->runs, 0);
  CAF_CHECK(!result->answered);
}

// A scheduler lost before training: its members had no place, and join the restarted one as
// they joined the lost one. The first join decides: the run starts afresh (assignments as
// usual), and a rejoin is refused from then on.
CAF_TEST(resumed_scheduler_starts_afresh_when_a_first_join_comes_first) {
  options.resume = true;
  start(1, 2);
  sent_list server_sent, w0_sent, w1_sent, late_sent;
  auto server = channel(server_sent);
  join(server, node_kind::server, 0, 100);
  CAF_CHECK(logged("the run starts afresh"));
  caf::anon_send(node, join_atom::value, channel(late_sent),
                 rejoin_of(node_kind::worker,
                           static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)), 300,
                           job_hash_without_counts(job), 0, -1));
  settle();
  const auto* bye = last_of<shutdown_message>(late_sent);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(contains(bye->reason, "starts the run afresh"));
  join(channel(w0_sent), node_kind::worker, 0, 200);
  join(channel(w1_sent), node_kind::worker, 1, 201);
  CAF_CHECK_EQUAL(count_of<assignment_message>(server_sent), 1);
  CAF_CHECK(!result->answered);
}

CAF_TEST(scheduler_not_resumed_refuses_a_rejoin) {
  start(1, 2);
  sent_list sent;
  auto l = channel(sent);
  caf::anon_send(node, join_atom::value, l,
                 rejoin_of(node_kind::worker,
                           static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)), 300,
                           job_hash_without_counts(job), 0, -1));
  settle();
  const auto* bye = last_of<shutdown_message>(sent);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(contains(bye->reason, "this scheduler runs a run of its own"));
}

// A plan node that never comes back (lost for good before the scheduler was): the restarted
// scheduler gives up at its join deadline, naming the node it waits for.
CAF_TEST(resumed_scheduler_gives_up_naming_the_node_that_did_not_rejoin) {
  options.resume = true;
  start(1, 2);
  const auto hash = job_hash_without_counts(job);
  sent_list s, w;
  caf::anon_send(node, join_atom::value, channel(s),
                 rejoin_of(node_kind::server,
                           static_cast<std::uint32_t>(plan_node(node_kind::server, 0)), 100, hash,
                           -1, 3, 4000));
  caf::anon_send(node, join_atom::value, channel(w),
                 rejoin_of(node_kind::worker,
                           static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)), 200, hash,
                           0, -1));
  settle();
  advance_time(options.join_timeout);
  settle();
  CAF_CHECK_EQUAL(session->runs, 0);
  CAF_CHECK(logged("the run failed: gave up after"));
  CAF_CHECK(logged("2 of 3 plan nodes back; waiting for worker_1"));
}

CAF_TEST_FIXTURE_SCOPE_END()
