// The scheduler node and workers that leave or join on purpose, message by message
// (scheduler_fixture.hpp): a leave granted (the worker is let go and its computes are adopted
// once it has gone, the phase its relay held asked again there) or refused, with why, the run
// going on; a worker joining in training that takes an adopted node back at the next gate.
//
// Built on CAF's own test framework (its test coordinator needs it); ctest runs each case
// alone (tests/cluster/CMakeLists.txt).
#define CAF_SUITE node_control

#include "tests/cluster/scheduler_fixture.hpp"

namespace {

struct draining : scheduler_fixture {
  void leave(const channel_actor& l, const std::string& why = "SIGTERM") {
    caf::anon_send(node, leave_atom::value, l, leave_message{why});
    settle();
  }
  void goodbye(const channel_actor& l, const shutdown_message& end) {
    caf::anon_send(node, goodbye_atom::value, l, end);
    settle();
  }

  // Two workers of two computes each in training (adopt), and a third that joined: it takes
  // compute_1 of worker_0 (`node`).
  struct rank_move {
    sent_list server_sent, w0_sent, w1_sent, joiner_sent;
    channel_actor w0, w1, joiner;
    int node = -1;
  };
  rank_move to_rank_move() {
    start(1, 2, false, true, 0, 2);
    rank_move m;
    std::vector<sent_list> ws(2);
    auto server = channel(m.server_sent);
    std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1])};
    to_training(server, m.server_sent, workers, ws);
    m.w0 = workers[0];
    m.w1 = workers[1];
    m.w0_sent = ws[0];
    m.w1_sent = ws[1];
    m.joiner = holding(m.joiner_sent);
    join(m.joiner, node_kind::worker, -1, 300);
    m.node = plan_node(node_kind::worker, 0);
    names[m.w0.address()] = "worker 0";
    names[m.w1.address()] = "worker 1";
    names[m.joiner.address()] = "joiner";
    sents = {{"worker 0", m.w0_sent}, {"worker 1", m.w1_sent}, {"joiner", m.joiner_sent}};
    return m;
  }
  // Two workers of three computes each in training (adopt, 4 epochs), whose training phases take
  // 0.1 s and 0.2 s: the workers' channels and what was sent over them.
  std::pair<std::vector<channel_actor>, std::vector<sent_list>> two_speeds() {
    epochs = 4;
    start(1, 2, false, true, 0, 3);
    sent_list server_sent;
    std::vector<sent_list> ws(2);
    for (auto& w : ws)
      w = std::make_shared<std::vector<wire_message>>();
    auto server = channel(server_sent);
    std::vector<channel_actor> workers{sys.spawn(timed_channel, ws[0], 0.1),
                                       sys.spawn(timed_channel, ws[1], 0.2)};
    for (auto& w : workers) {
      spawned.push_back(caf::actor_cast<caf::actor>(w));
      down[w.address()] = std::make_shared<bool>(false);
    }
    to_training(server, server_sent, workers, ws);
    sents = {{"worker 0", ws[0]}, {"worker 1", ws[1]}};
    return {workers, ws};
  }
  std::size_t compute_of_rank(int rank) const {
    for (auto c : plan.actors_of(plan_role::compute))
      if (plan.actors[c].rank == rank)
        return c;
    return plan.actors.size();
  }
  // Asks compute `compute` to train epoch `epoch` through its relay; names the member whose
  // channel the control went over ("" if none did).
  std::map<caf::actor_addr, std::string> names;
  std::vector<std::pair<std::string, sent_list>> sents;
  std::string trains_asked(std::size_t compute, std::int64_t epoch) {
    std::map<std::string, std::size_t> before;
    for (auto& [name, sent] : sents)
      before[name] = count_of<control_message>(sent);
    auto phase = std::make_shared<phase_answer>();
    spawned.push_back(sys.spawn(ask_train, sinks.node.remote.compute(compute), epoch, phase));
    settle();
    for (auto& [name, sent] : sents)
      if (count_of<control_message>(sent) > before[name])
        return name;
    return "";
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(drain_tests, draining)

// Granted: nothing moves while the worker is there; once its channel has ended, the worker
// with the fewest computes adopts its node, and the phase its compute was asked is asked again
// there once the adopter says ready. The run never hears of a loss.
CAF_TEST(leave_is_granted_and_the_computes_move_once_the_worker_has_gone) {
  start(1, 3, false, true);
  sent_list server_sent;
  std::vector<sent_list> ws(3);
  auto server = channel(server_sent);
  std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1]), holding(ws[2])};
  to_training(server, server_sent, workers, ws);
  const int leaving_node = plan_node(node_kind::worker, 2);
  const auto compute = first_actor(plan_role::compute, leaving_node);
  CAF_REQUIRE(compute < plan.actors.size());
  leave(workers[2]);
  CAF_REQUIRE_EQUAL(count_of<release_message>(ws[2]), 1);
  CAF_CHECK(last_of<release_message>(ws[2])->granted);
  CAF_CHECK(logged("worker 2 (pid 202 on 10.0.0.1) asks to leave (SIGTERM); granted: compute_2 "
                   "move to another worker once it has gone"));
  CAF_CHECK_EQUAL(count_of<adopt_message>(ws[0]) + count_of<adopt_message>(ws[1]), 0);
  leave(workers[2]); // asked again: refused, it is leaving already
  CAF_REQUIRE_EQUAL(count_of<release_message>(ws[2]), 2);
  CAF_CHECK(!last_of<release_message>(ws[2])->granted);
  CAF_CHECK(contains(last_of<release_message>(ws[2])->reason, "it is leaving already"));
  // It closes its channel to the scheduler while its compute is in the middle of a phase: what
  // was asked there fails as a lost channel's requests do.
  *down.at(workers[2].address()) = true;
  auto phase = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_train, sinks.node.remote.compute(compute), 0, phase));
  settle();
  killed(workers[2]);
  CAF_CHECK(!result->answered);
  CAF_CHECK(!phase->answered); // held by the relay
  CAF_CHECK(logged("worker 2 (pid 202 on 10.0.0.1) left at"));
  CAF_CHECK(logged("(drained: SIGTERM); worker 0 (pid 200 on 10.0.0.1) adopts compute_2 of "
                   "worker_2"));
  CAF_CHECK(!logged("lost worker 2"));
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[0]), 1);
  CAF_CHECK_EQUAL(last_of<adopt_message>(ws[0])->node, static_cast<std::uint32_t>(leaving_node));
  ready(workers[0], static_cast<std::uint32_t>(leaving_node));
  CAF_REQUIRE_EQUAL(count_of<control_message>(ws[0]), 1);
  CAF_CHECK(phase->answered);
  CAF_CHECK_EQUAL(phase->error, "");
  CAF_CHECK(!result->answered);
}

// A granted worker that says goodbye before its channel ends leaves as planned too: its
// goodbye is no failure of the run.
CAF_TEST(leave_granted_then_goodbye_is_adopted_not_a_failure) {
  start(1, 2, false, true);
  auto m = to_training();
  leave(m.w1);
  CAF_REQUIRE_EQUAL(count_of<release_message>(m.w1_sent), 1);
  goodbye(m.w1, shutdown_message{"drained (SIGTERM)", true});
  CAF_CHECK(!result->answered);
  CAF_CHECK_EQUAL(count_of<adopt_message>(m.w0_sent), 1);
  CAF_CHECK(!logged("stopped: drained"));
}

// Refused, saying why, and the run goes on: under stop (no adoption), while another worker is
// leaving (no one would be left), and before training.
CAF_TEST(leave_is_refused_under_stop_and_the_run_goes_on) {
  start(1, 2);
  auto m = to_training();
  leave(m.w1);
  CAF_REQUIRE_EQUAL(count_of<release_message>(m.w1_sent), 1);
  const auto* r = last_of<release_message>(m.w1_sent);
  CAF_CHECK(!r->granted);
  CAF_CHECK(contains(r->reason, "only under on_worker_loss = adopt, and this run's is stop"));
  CAF_CHECK(logged("worker 1 (pid 201 on 10.0.0.1) asks to leave (SIGTERM); refused: "));
  CAF_CHECK(logged("; it trains on"));
  CAF_CHECK(!result->answered);
  CAF_CHECK_EQUAL(count_of<shutdown_message>(m.w1_sent), 0);
}

CAF_TEST(leave_is_refused_when_no_other_worker_would_be_left) {
  start(1, 2, false, true);
  auto m = to_training();
  leave(m.w0);
  CAF_REQUIRE(last_of<release_message>(m.w0_sent)->granted);
  leave(m.w1);
  const auto* r = last_of<release_message>(m.w1_sent);
  CAF_REQUIRE(r != nullptr);
  CAF_CHECK(!r->granted);
  CAF_CHECK(contains(r->reason, "no other worker is left to take its computes"));
  CAF_CHECK(!result->answered);
}

CAF_TEST(leave_before_training_is_refused) {
  start(1, 2, false, true);
  sent_list w0_sent;
  auto w0 = channel(w0_sent);
  join(w0, node_kind::worker, -1, 200);
  leave(w0);
  const auto* r = last_of<release_message>(w0_sent);
  CAF_REQUIRE(r != nullptr);
  CAF_CHECK(!r->granted);
  CAF_CHECK(contains(r->reason, "the run is not training"));
}

// A worker that joins in training takes back the node another worker adopted: it is assigned
// that node (adopt), and once it is ready the node moves at the next gate between epochs (no
// phase in flight there): its relays point at the joiner and the worker that ran it is told to
// cede it. The phases after the gate are asked of the joiner.
CAF_TEST(joiner_takes_an_adopted_node_back_at_the_next_gate) {
  start(1, 3, false, true);
  sent_list server_sent, joiner_sent;
  std::vector<sent_list> ws(3);
  auto server = channel(server_sent);
  std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1]), holding(ws[2])};
  to_training(server, server_sent, workers, ws);
  const int moved = plan_node(node_kind::worker, 2);
  const auto compute = first_actor(plan_role::compute, moved);
  leave(workers[2]);
  killed(workers[2]);
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[0]), 1);
  ready(workers[0], static_cast<std::uint32_t>(moved));
  auto joiner = holding(joiner_sent);
  join(joiner, node_kind::worker, -1, 300);
  CAF_CHECK(logged("spare worker 2 (pid 300 on 10.0.0.1) takes compute_2 of worker_2 from worker 0 "
                   "(pid 200 on 10.0.0.1) (the worker running the most computes, 2)"));
  CAF_REQUIRE_EQUAL(count_of<assignment_message>(joiner_sent), 1);
  const auto* a = last_of<assignment_message>(joiner_sent);
  CAF_CHECK(a->adopt);
  CAF_CHECK_EQUAL(a->node, static_cast<std::uint32_t>(moved));
  ready(joiner, static_cast<std::uint32_t>(moved));
  CAF_CHECK(logged("is ready to serve the computes of worker_2"));
  CAF_CHECK(logged("they move at the end of this epoch's training"));
  CAF_CHECK_EQUAL(count_of<cede_message>(ws[0]), 0); // not while a phase may be in flight
  // A phase asked now is still worker 0's.
  auto before = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_train, sinks.node.remote.compute(compute), 0, before));
  settle();
  CAF_CHECK(before->answered);
  CAF_CHECK_EQUAL(count_of<control_message>(joiner_sent), 0);
  auto gate = epoch_done(0);
  CAF_REQUIRE_EQUAL(count_of<cede_message>(ws[0]), 1);
  CAF_CHECK_EQUAL(last_of<cede_message>(ws[0])->node, static_cast<std::uint32_t>(moved));
  CAF_CHECK(logged("compute_2 of worker_2 moved from worker 0 (pid 200 on 10.0.0.1) to spare "
                   "worker 2 (pid 300 on 10.0.0.1) at the end of epoch 0's training"));
  // The next phase goes to the joiner.
  auto after = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_train, sinks.node.remote.compute(compute), 1, after));
  settle();
  CAF_CHECK_EQUAL(count_of<control_message>(joiner_sent), 1);
  CAF_CHECK(after->answered);
  CAF_CHECK(!result->answered);
}

// A joiner lost before its node moved: the node stays where it runs, and nothing is adopted.
CAF_TEST(joiner_lost_before_the_move_leaves_the_node_where_it_runs) {
  start(1, 2, false, true);
  auto m = to_training();
  const int moved = plan_node(node_kind::worker, 1);
  leave(m.w1);
  lost(m.w1, "");
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(m.w0_sent), 1);
  ready(m.w0, static_cast<std::uint32_t>(moved));
  sent_list joiner_sent;
  auto joiner = channel(joiner_sent);
  join(joiner, node_kind::worker, -1, 300);
  CAF_REQUIRE_EQUAL(count_of<assignment_message>(joiner_sent), 1);
  lost(joiner, "the connection closed");
  CAF_CHECK(logged("was lost before worker_1 moved to it; worker 0 (pid 200 on 10.0.0.1) keeps "
                   "running it"));
  CAF_CHECK(!result->answered);
  CAF_CHECK_EQUAL(count_of<adopt_message>(m.w0_sent), 1); // nothing more
  epoch_done(0);
  CAF_CHECK_EQUAL(count_of<cede_message>(m.w0_sent), 0);
}

// Where no worker runs an adopted node, a joiner takes half the computes of the busiest worker
// (the last of its own node's): it is assigned those ranks of that node (adopt), and once it is
// ready they move at the next gate, the worker that ran them told to cede only those. The
// node's other compute stays where it runs.
CAF_TEST(joiner_takes_half_the_computes_of_the_busiest_worker_at_the_next_gate) {
  auto m = to_rank_move();
  const auto kept = compute_of_rank(0), moved = compute_of_rank(1);
  CAF_CHECK(logged("spare worker (pid 300 on 10.0.0.1) takes compute_1 of worker_0 from worker 0 "
                   "(pid 200 on 10.0.0.1) (the worker running the most computes, 2)"));
  CAF_REQUIRE_EQUAL(count_of<assignment_message>(m.joiner_sent), 1);
  const auto* a = last_of<assignment_message>(m.joiner_sent);
  CAF_CHECK(a->adopt);
  CAF_CHECK_EQUAL(a->node, static_cast<std::uint32_t>(m.node));
  CAF_CHECK(a->ranks == std::vector<std::uint32_t>{1});
  ready(m.joiner, static_cast<std::uint32_t>(m.node));
  CAF_CHECK(logged("is ready to serve compute_1 of worker_0"));
  CAF_CHECK_EQUAL(count_of<cede_message>(m.w0_sent), 0); // not while a phase may be in flight
  CAF_CHECK_EQUAL(trains_asked(moved, 0), "worker 0");
  epoch_done(0);
  CAF_REQUIRE_EQUAL(count_of<cede_message>(m.w0_sent), 1);
  CAF_CHECK_EQUAL(last_of<cede_message>(m.w0_sent)->node, static_cast<std::uint32_t>(m.node));
  CAF_CHECK(last_of<cede_message>(m.w0_sent)->ranks == std::vector<std::uint32_t>{1});
  CAF_CHECK(logged("compute_1 of worker_0 moved from worker 0 (pid 200 on 10.0.0.1) to spare "
                   "worker (pid 300 on 10.0.0.1) at the end of epoch 0's training"));
  CAF_CHECK_EQUAL(trains_asked(moved, 1), "joiner");
  CAF_CHECK_EQUAL(trains_asked(kept, 1), "worker 0");
  CAF_CHECK(!result->answered);
}

// The joiner lost after the move: the worker running the fewest computes (the one that gave it,
// now running one) adopts that compute alone, and serves it once ready.
CAF_TEST(joiner_lost_after_a_rank_move_is_adopted_rank_by_rank) {
  auto m = to_rank_move();
  ready(m.joiner, static_cast<std::uint32_t>(m.node));
  epoch_done(0);
  killed(m.joiner);
  CAF_CHECK(logged("worker 0 (pid 200 on 10.0.0.1) adopts compute_1 of worker_0 (the worker "
                   "running the fewest computes, 1,"));
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(m.w0_sent), 1);
  CAF_CHECK_EQUAL(last_of<adopt_message>(m.w0_sent)->node, static_cast<std::uint32_t>(m.node));
  CAF_CHECK(last_of<adopt_message>(m.w0_sent)->ranks == std::vector<std::uint32_t>{1});
  CAF_CHECK_EQUAL(count_of<adopt_message>(m.w1_sent), 0);
  ready(m.w0, static_cast<std::uint32_t>(m.node));
  CAF_CHECK(logged("worker 0 (pid 200 on 10.0.0.1) serves compute_1 of worker_0"));
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(1), 1), "worker 0");
  CAF_CHECK(!result->answered);
}

// The worker that gave a compute lost after the move: only the compute it still ran is adopted
// (by the joiner, running the fewest), and the one it gave stays with the joiner.
CAF_TEST(giver_lost_after_a_rank_move_leaves_the_moved_compute_where_it_runs) {
  auto m = to_rank_move();
  ready(m.joiner, static_cast<std::uint32_t>(m.node));
  epoch_done(0);
  killed(m.w0);
  CAF_CHECK(logged("spare worker (pid 300 on 10.0.0.1) adopts compute_0 of worker_0 (the worker "
                   "running the fewest computes, 1,"));
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(m.joiner_sent), 1);
  CAF_CHECK(last_of<adopt_message>(m.joiner_sent)->ranks == std::vector<std::uint32_t>{0});
  ready(m.joiner, static_cast<std::uint32_t>(m.node));
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(0), 1), "joiner");
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(1), 1), "joiner");
  CAF_CHECK(!result->answered);
}

// The giver lost before the joiner is ready: the computes it was giving are the joiner's (served
// once it is ready, at once), and the rest of its node is adopted by another worker; no second
// loss is counted and the run goes on.
CAF_TEST(giver_lost_before_the_joiner_is_ready_leaves_it_the_computes_it_takes) {
  auto m = to_rank_move();
  killed(m.w0);
  CAF_CHECK(logged("worker 1 (pid 201 on 10.0.0.1) adopts compute_0 of worker_0"));
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(m.w1_sent), 1);
  CAF_CHECK(last_of<adopt_message>(m.w1_sent)->ranks == std::vector<std::uint32_t>{0});
  ready(m.w1, static_cast<std::uint32_t>(m.node));
  ready(m.joiner, static_cast<std::uint32_t>(m.node));
  CAF_CHECK(logged("spare worker (pid 300 on 10.0.0.1) serves compute_1 of worker_0"));
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(0), 0), "worker 1");
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(1), 0), "joiner");
  CAF_CHECK(!result->answered);
}

// balance = auto: after an epoch whose training took worker 1's ranks twice as long as worker
// 0's, worker 0 is told to adopt one of worker 1's (3 + 3 -> 4 + 2); once it is ready the rank
// moves at the next gate, worker 1 ceding it, and its phases after that are worker 0's.
CAF_TEST(balance_moves_a_rank_to_the_faster_worker_at_the_next_gate) {
  options.balance = true;
  auto [workers, ws] = two_speeds();
  for (int rank = 0; rank < 6; ++rank)
    CAF_CHECK_EQUAL(trains_asked(compute_of_rank(rank), 0), rank < 3 ? "worker 0" : "worker 1");
  epoch_done(0);
  CAF_CHECK(logged("scheduler: balance after epoch 0's training, which took worker 0 (pid 200 on "
                   "10.0.0.1) 0.100 s per rank (3 ranks), worker 1 (pid 201 on 10.0.0.1) 0.200 s "
                   "per rank (3 ranks); worker 0 (pid 200 on 10.0.0.1) takes compute_5 of worker_1 "
                   "from worker 1 (pid 201 on 10.0.0.1) (an epoch's 0.600 s of training becomes "
                   "0.400 s, as estimated)"));
  const auto node = plan_node(node_kind::worker, 1);
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[0]), 1);
  CAF_CHECK_EQUAL(last_of<adopt_message>(ws[0])->node, static_cast<std::uint32_t>(node));
  CAF_CHECK(last_of<adopt_message>(ws[0])->ranks == std::vector<std::uint32_t>{5});
  ready(workers[0], static_cast<std::uint32_t>(node));
  CAF_CHECK(logged("is ready to serve compute_5 of worker_1"));
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(5), 1), "worker 1"); // until the next gate
  epoch_done(1);
  CAF_REQUIRE_EQUAL(count_of<cede_message>(ws[1]), 1);
  CAF_CHECK(last_of<cede_message>(ws[1])->ranks == std::vector<std::uint32_t>{5});
  CAF_CHECK(logged("compute_5 of worker_1 moved from worker 1 (pid 201 on 10.0.0.1) to worker 0 "
                   "(pid 200 on 10.0.0.1) at the end of epoch 1's training"));
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(5), 2), "worker 0");
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(4), 2), "worker 1");
  // Balanced now (4 x 0.1 = 2 x 0.2): after another epoch nothing more moves.
  for (int rank = 0; rank < 6; ++rank)
    trains_asked(compute_of_rank(rank), 2);
  epoch_done(2);
  CAF_CHECK_EQUAL(count_of<adopt_message>(ws[0]) + count_of<adopt_message>(ws[1]), 1);
  CAF_CHECK(!result->answered);
}

// The taker of a balance move lost before the move ends: the move is forgotten (the giver keeps
// the rank), and what the taker ran before it (its own node, whole) is adopted.
CAF_TEST(balance_taker_lost_before_the_move_is_adopted_as_it_ran_before) {
  options.balance = true;
  auto [workers, ws] = two_speeds();
  for (int rank = 0; rank < 6; ++rank)
    trains_asked(compute_of_rank(rank), 0);
  epoch_done(0);
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[0]), 1);
  *down.at(workers[0].address()) = true;
  lost(workers[0], "the connection closed");
  CAF_CHECK(logged("was lost before compute_5 of worker_1 moved to it; worker 1 (pid 201 on "
                   "10.0.0.1) keeps running it"));
  const auto own = plan_node(node_kind::worker, 0);
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[1]), 1);
  CAF_CHECK_EQUAL(last_of<adopt_message>(ws[1])->node, static_cast<std::uint32_t>(own));
  CAF_CHECK(last_of<adopt_message>(ws[1])->ranks.empty()); // all of it
  ready(workers[1], static_cast<std::uint32_t>(own));
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(0), 1), "worker 1");
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(5), 1), "worker 1");
  epoch_done(1);
  CAF_CHECK_EQUAL(count_of<cede_message>(ws[1]), 0);
  CAF_CHECK(!result->answered);
}

// Without balance the same times move nothing.
CAF_TEST(without_balance_nothing_moves_for_speed) {
  auto [workers, ws] = two_speeds();
  for (int rank = 0; rank < 6; ++rank)
    trains_asked(compute_of_rank(rank), 0);
  epoch_done(0);
  CAF_CHECK(!logged("balance after"));
  CAF_CHECK_EQUAL(count_of<adopt_message>(ws[0]) + count_of<adopt_message>(ws[1]), 0);
}

// A joiner lost before the ranks it took moved: they stay where they run.
CAF_TEST(joiner_lost_before_a_rank_move_leaves_the_computes_where_they_run) {
  auto m = to_rank_move();
  ready(m.joiner, static_cast<std::uint32_t>(m.node));
  lost(m.joiner, "the connection closed");
  CAF_CHECK(logged("was lost before compute_1 of worker_0 moved to it; worker 0 (pid 200 on "
                   "10.0.0.1) keeps running it"));
  epoch_done(0);
  CAF_CHECK_EQUAL(count_of<cede_message>(m.w0_sent), 0);
  CAF_CHECK_EQUAL(count_of<adopt_message>(m.w0_sent) + count_of<adopt_message>(m.w1_sent), 0);
  CAF_CHECK_EQUAL(trains_asked(compute_of_rank(1), 1), "worker 0");
  CAF_CHECK(!result->answered);
}

CAF_TEST_FIXTURE_SCOPE_END()
