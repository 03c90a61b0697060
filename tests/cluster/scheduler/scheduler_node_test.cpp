// The scheduler node's state machine, message by message (scheduler_fixture.hpp): joins and
// ranks, losses in every phase, the epoch's traffic query and its deadline, messages out of
// turn, the run's end, and adoption of a lost worker.
//
// Built on CAF's own test framework (its test coordinator needs it); ctest runs each case
// alone (tests/cluster/CMakeLists.txt).
#define CAF_SUITE node_control

#include "tests/cluster/scheduler_fixture.hpp"

CAF_TEST_FIXTURE_SCOPE(scheduler_node_tests, scheduler_fixture)

// Every order of one server's and two workers' joins: nobody is assigned before all joined;
// then the server alone; the workers once it is ready, with its endpoint; ranks in join order.
CAF_TEST(joins_in_every_order) {
  std::vector<int> order{0, 1, 2}; // 0: the server, 1 and 2: workers
  int orders = 0;
  do {
    auto out = std::make_unique<scheduler_fixture>();
    out->start();
    std::vector<channel_actor> channels(3);
    std::vector<sent_list> sent(3);
    for (int i = 0; i < 3; ++i)
      channels[i] = out->channel(sent[i]);
    std::vector<int> worker_order;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const int who = order[k];
      for (auto& s : sent)
        CAF_CHECK_EQUAL(count_of<assignment_message>(s), 0);
      out->join(channels[who], who == 0 ? node_kind::server : node_kind::worker, -1, 10 + who);
      if (who != 0)
        worker_order.push_back(who);
    }
    CAF_REQUIRE_EQUAL(count_of<assignment_message>(sent[0]), 1);
    CAF_CHECK_EQUAL(count_of<assignment_message>(sent[1]) + count_of<assignment_message>(sent[2]),
                    0);
    const auto server_node = last_of<assignment_message>(sent[0])->node;
    CAF_CHECK(out->plan.nodes.at(server_node).kind == node_kind::server);
    out->ready(channels[0], server_node, 4000);
    for (int w = 0; w < 2; ++w) {
      const auto& s = sent[static_cast<std::size_t>(worker_order[static_cast<std::size_t>(w)])];
      CAF_REQUIRE_EQUAL(count_of<assignment_message>(s), 1);
      const auto* a = last_of<assignment_message>(s);
      CAF_CHECK_EQUAL(a->rank, static_cast<std::uint32_t>(w)); // join order
      CAF_REQUIRE_EQUAL(a->servers.size(), 1u);
      CAF_CHECK_EQUAL(a->servers[0].node, server_node);
      CAF_CHECK_EQUAL(a->servers[0].port, 4000);
      CAF_CHECK_EQUAL(a->servers[0].host, "10.0.0.1");
      CAF_CHECK_EQUAL(a->plan_hash, out->plan.hash);
      CAF_CHECK_EQUAL(out->session->runs, 0);
      out->ready(channels[static_cast<std::size_t>(worker_order[static_cast<std::size_t>(w)])],
                 a->node);
    }
    CAF_CHECK_EQUAL(out->session->runs, 1);
    CAF_CHECK(!out->result->answered);
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  CAF_CHECK_EQUAL(orders, 6);
}

// Ranks a launcher gave are kept whatever the join order.
CAF_TEST(given_ranks_are_kept_in_any_order) {
  start();
  sent_list s, a, b;
  auto server = channel(s), w1 = channel(a), w0 = channel(b);
  join(w1, node_kind::worker, 1);
  join(server, node_kind::server, 0);
  join(w0, node_kind::worker, 0);
  ready(server, last_of<assignment_message>(s)->node, 4000);
  CAF_CHECK_EQUAL(last_of<assignment_message>(a)->rank, 1u);
  CAF_CHECK_EQUAL(last_of<assignment_message>(b)->rank, 0u);
}

// A rank that is taken is refused naming its holder; the run waits for a proper node.
CAF_TEST(duplicate_rank_is_refused) {
  start();
  sent_list s, a, b, c;
  auto server = channel(s), first = channel(a), second = channel(b), third = channel(c);
  join(server, node_kind::server);
  join(first, node_kind::worker, 1, 300);
  join(second, node_kind::worker, 1, 301);
  const auto* refusal = last_of<shutdown_message>(b);
  CAF_REQUIRE(refusal != nullptr);
  CAF_CHECK(!refusal->finished);
  CAF_CHECK(contains(refusal->reason, "worker rank 1 is taken by worker 1 (pid 300"));
  CAF_CHECK(logged("refused a worker (pid 301"));
  CAF_CHECK_EQUAL(count_of<assignment_message>(s), 0);
  // A refused node is no member: its channel ending loses nothing.
  lost(second, "closed");
  CAF_CHECK(!result->answered);
  join(third, node_kind::worker, 0, 302);
  CAF_CHECK_EQUAL(count_of<assignment_message>(s), 1);
  // The same channel joining twice is refused too.
  join(first, node_kind::worker, -1, 300);
  CAF_CHECK(last_of<shutdown_message>(a) != nullptr);
}

// A member lost before the run started ends it, naming the node; the others are told why, and
// the answer comes once their channels have closed.
CAF_TEST(peer_lost_during_join) {
  start();
  sent_list s, a;
  auto server = channel(s), w0 = channel(a);
  join(server, node_kind::server, -1, 100);
  join(w0, node_kind::worker, -1, 200);
  lost(w0, "the connection closed");
  const auto* told = last_of<shutdown_message>(s);
  CAF_REQUIRE(told != nullptr);
  CAF_CHECK(!told->finished);
  CAF_CHECK(contains(told->reason, "lost worker 0 (pid 200"));
  CAF_CHECK(!result->answered); // the server has not closed yet
  lost(server, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(!result->ok);
  CAF_CHECK(contains(result->error, "lost worker 0 (pid 200 on 10.0.0.1)"));
  CAF_CHECK(contains(result->error, "the connection closed"));
}

// The session fails with a lost peer (a remote compute's request failed) before the loss
// itself reaches the scheduler: the run ends naming the lost node, not the echo.
CAF_TEST(peer_lost_during_epoch_echo_first) {
  start();
  auto m = to_training();
  CAF_REQUIRE_EQUAL(session->runs, 1);
  session_ends(make_error(errc::peer_down, "worker_1: the channel to server_0 closed"));
  CAF_CHECK(!result->answered);
  CAF_CHECK_EQUAL(count_of<shutdown_message>(m.w0_sent), 0); // nothing decided yet
  lost(m.w1, "the connection to worker 1 closed");
  const auto* told = last_of<shutdown_message>(m.w0_sent);
  CAF_REQUIRE(told != nullptr);
  CAF_CHECK(contains(told->reason, "lost worker 1 (pid 201"));
  lost(m.w0, "");
  lost(m.server, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 201"));
}

// The same loss reported first, then its echo: the loss decides.
CAF_TEST(peer_lost_during_epoch_loss_first) {
  start();
  auto m = to_training();
  lost(m.w1, "the connection to worker 1 closed");
  session_ends(make_error(errc::peer_down, "worker_1: the channel to server_0 closed"));
  lost(m.w0, "");
  lost(m.server, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 201"));
}

// A peer_down whose loss is never reported (within the connection timeout) ends the run as it came.
CAF_TEST(unexplained_loss_ends_the_run_after_the_connection_timeout) {
  start();
  auto m = to_training();
  session_ends(make_error(errc::peer_down, "something closed"));
  CAF_CHECK(!result->answered);
  advance_time(options.connection_timeout + options.heartbeat_interval);
  settle();
  lost(m.w0, "");
  lost(m.w1, "");
  lost(m.server, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "something closed"));
}

// During validation a server is lost; a worker that lost it says so (its goodbye names the
// server's plan node) before the scheduler's own channel to the server ends: the run names the
// server either way.
CAF_TEST(peer_lost_during_validation_named_by_a_worker) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0); // epoch 0 trained; validating once every member answered
  traffic(m.server, 0);
  traffic(m.w0, 0);
  traffic(m.w1, 0);
  CAF_REQUIRE(gate->answered);
  const auto server_node =
    static_cast<std::int32_t>(last_of<assignment_message>(m.server_sent)->node);
  caf::anon_send(node, goodbye_atom::value, m.w0,
                 shutdown_message{"lost server_0 at 10:00:00.000 UTC: the connection closed", false,
                                  server_node});
  settle();
  lost(m.w0, "worker 0 shut down");
  session_ends(make_error(errc::peer_down, "worker_0: the channel to server_0 closed"));
  lost(m.server, "the connection closed");
  lost(m.w1, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost server 0 (pid 100"));
  CAF_CHECK(contains(result->error, "worker 0 (pid 200 on 10.0.0.1) lost it"));
}

// With on_worker_loss = continue a lost worker is logged and the run goes on.
CAF_TEST(lost_worker_with_continue_goes_on) {
  start(1, 2, true);
  auto m = to_training();
  lost(m.w1, "no frame for 5000 ms");
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("the run goes on without it"));
  CAF_CHECK_EQUAL(count_of<shutdown_message>(m.w0_sent), 0);
}

// The scheduler answers the coordinator's epoch_done only once every member has answered
// its traffic query, and the epoch's traffic reaches the metrics actor before that answer
// (so it is in the epoch's metrics line).
CAF_TEST(epoch_done_waits_for_every_member) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0);
  CAF_CHECK_EQUAL(count_of<traffic_query_message>(m.server_sent), 1);
  CAF_CHECK_EQUAL(count_of<traffic_query_message>(m.w0_sent), 1);
  CAF_REQUIRE_EQUAL(count_of<traffic_query_message>(m.w1_sent), 1);
  CAF_CHECK_EQUAL(last_of<traffic_query_message>(m.w1_sent)->epoch, 0);
  traffic(m.w1, 0);
  traffic(m.server, 0);
  CAF_CHECK(!gate->answered);
  CAF_CHECK(metrics->traffic.empty());
  traffic(m.w0, 0);
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(gate->yes);
  CAF_CHECK_EQUAL(gate->annotations_before, 1u);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK_EQUAL(metrics->traffic[0].first, 0);
  CAF_CHECK(contains(metrics->traffic[0].second, "Epoch[0] Traffic:"));
  CAF_CHECK(!logged("traffic goes without"));
}

// Stragglers: the members' barriers say, by source node, how long they waited for
// it (totals); the scheduler takes each epoch's share, the longest of the nodes reporting the
// same source, and names them, the longest first, in a line and the metrics (`waited_for`).
CAF_TEST(epoch_done_names_who_the_barriers_waited_for) {
  start();
  auto m = to_training();
  auto answer = [&](const channel_actor& l, std::int64_t epoch, std::vector<node_wait> waits) {
    traffic_message t{epoch, {}};
    t.waits = std::move(waits);
    caf::anon_send(node, traffic_atom::value, l, std::move(t));
    settle();
  };
  auto gate = epoch_done(0);
  answer(m.server, 0, {{"worker_1", 2.0, 30}, {"worker_0", 0.5, 2}});
  answer(m.w0, 0, {});
  answer(m.w1, 0, {});
  CAF_REQUIRE(gate->answered);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 2u);
  CAF_CHECK(contains(metrics->traffic[1].second, "Epoch[0] Waited for: worker_1 2.000 s (last in "
                                                 "30 steps), worker_0 0.500 s (last in 2 steps)"));
  // Epoch 1: the totals grew by worker_0's share only; worker_1 is not named.
  gate = epoch_done(1);
  answer(m.server, 1, {{"worker_1", 2.0, 30}, {"worker_0", 1.75, 12}});
  answer(m.w0, 1, {});
  answer(m.w1, 1, {});
  CAF_REQUIRE(gate->answered);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 4u);
  CAF_CHECK(contains(metrics->traffic[3].second,
                     "Epoch[1] Waited for: worker_0 1.250 s (last in 10 steps)"));
  CAF_CHECK(!contains(metrics->traffic[3].second, "worker_1"));
}

// A member that does not answer: at the coordinator's deadline (here earlier than the
// request timeout) the scheduler answers anyway, with the traffic that came, and names the
// silent member in its log.
CAF_TEST(epoch_done_answers_at_its_deadline_naming_the_silent) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0, std::chrono::seconds(2));
  traffic(m.server, 0);
  traffic(m.w0, 0);
  CAF_CHECK(!gate->answered);
  advance_time(std::chrono::seconds(2));
  settle();
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(gate->yes);
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK(logged("scheduler: epoch 0's traffic goes without worker 1 (pid 201 on 10.0.0.1): no "
                   "answer by its deadline"));
  CAF_CHECK(!logged("without worker 0"));
  CAF_CHECK(!logged("without server 0"));
}

// Traffic answers after their deadline are dropped, also when they arrive while the next
// epoch's answers are being gathered; each epoch's figures are released once.
CAF_TEST(reply_after_deadline_is_dropped) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0);
  CAF_REQUIRE_EQUAL(count_of<traffic_query_message>(m.w0_sent), 1);
  traffic(m.server, 0);
  traffic(m.w0, 0);
  CAF_CHECK(metrics->traffic.empty());
  advance_time(options.timeouts.step); // worker 1 never answered in time
  settle();
  CAF_REQUIRE(gate->answered);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK_EQUAL(metrics->traffic[0].first, 0);
  CAF_CHECK_EQUAL(metrics->reports, 0); // reports never pass through the scheduler
  traffic(m.w1, 0);                     // late, with no question open
  CAF_CHECK(logged(
    "scheduler: dropped worker 1 (pid 201 on 10.0.0.1)'s traffic answer for epoch 0: no epoch's "
    "traffic is gathered (it came after its deadline)"));
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  auto next = epoch_done(1);
  traffic(m.w1, 0); // epoch 0's, late: not an answer for epoch 1
  CAF_CHECK(
    logged("scheduler: dropped worker 1 (pid 201 on 10.0.0.1)'s traffic answer for epoch 0: "
           "epoch 1's is gathered"));
  traffic(m.server, 1);
  traffic(m.w0, 1);
  CAF_CHECK(!next->answered);
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  traffic(m.w1, 1);
  CAF_CHECK(next->answered);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 2u);
  CAF_CHECK_EQUAL(metrics->traffic[1].first, 1);
}

// A worker lost while the epoch's traffic is gathered (on_worker_loss = continue): the
// others' answers complete the epoch.
CAF_TEST(epoch_done_goes_on_without_a_lost_worker) {
  start(1, 2, true);
  auto m = to_training();
  auto gate = epoch_done(0);
  traffic(m.server, 0);
  traffic(m.w0, 0);
  CAF_CHECK(!gate->answered);
  lost(m.w1, "no frame for 5000 ms");
  CAF_CHECK(gate->answered);
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
}

// The coordinator asks for epoch 1 while epoch 0's traffic is still gathered (it gave up on
// that question): epoch 0's question is answered at once with what came, and its figures go
// out once, under epoch 0; epoch 1 gathers answers of its own. Epoch 0's late answers and
// epoch 0's deadline touch nothing of epoch 1's.
CAF_TEST(second_epoch_done_while_a_query_is_open) {
  start();
  auto m = to_training();
  auto first = epoch_done(0, std::chrono::seconds(2));
  traffic(m.server, 0, 100);
  CAF_CHECK(!first->answered);
  auto second = epoch_done(1);
  CAF_REQUIRE(first->answered);
  CAF_CHECK(first->yes);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK_EQUAL(metrics->traffic[0].first, 0);
  CAF_CHECK(contains(metrics->traffic[0].second, "server_0 rx 0 B tx 100 B"));
  CAF_CHECK(logged("epoch 0's traffic goes without worker 0 (pid 200 on 10.0.0.1), worker 1 (pid "
                   "201 on 10.0.0.1)"));
  CAF_CHECK(!second->answered);
  CAF_REQUIRE_EQUAL(count_of<traffic_query_message>(m.w0_sent), 2);
  CAF_CHECK_EQUAL(last_of<traffic_query_message>(m.w0_sent)->epoch, 1);
  CAF_CHECK_EQUAL(last_of<traffic_query_message>(m.w1_sent)->epoch, 1);
  CAF_CHECK_EQUAL(last_of<traffic_query_message>(m.server_sent)->epoch, 1);
  traffic(m.w0, 0, 700); // epoch 0's answers, after that question was answered
  traffic(m.w1, 0, 700);
  traffic(m.server, 1, 150);
  CAF_CHECK(!second->answered);
  advance_time(std::chrono::seconds(2)); // epoch 0's deadline
  settle();
  CAF_CHECK(!second->answered);
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  traffic(m.w0, 1, 900);
  CAF_CHECK(!second->answered);
  traffic(m.w1, 1, 800);
  CAF_REQUIRE(second->answered);
  CAF_CHECK(second->yes);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 2u);
  CAF_CHECK_EQUAL(metrics->traffic[1].first, 1);
  const auto& line = metrics->traffic[1].second;
  CAF_CHECK(contains(line, "Epoch[1] Traffic:"));
  CAF_CHECK(
    contains(line, "server_0 rx 0 B tx 50 B")); // its 150 since it started, less epoch 0's 100
  CAF_CHECK(contains(line, "worker_0 rx 0 B tx 900 B"));
  CAF_CHECK(contains(line, "worker_1 rx 0 B tx 800 B"));
  CAF_CHECK(!logged("epoch 1's traffic goes without"));
  advance_time(options.timeouts.step); // epoch 1's deadline: released already, nothing twice
  settle();
  CAF_CHECK_EQUAL(metrics->traffic.size(), 2u);
}

// The same epoch asked again while its query is open: the first question is answered with
// what came, and the second keeps its own deadline: the first one's does not cut it short.
CAF_TEST(same_epoch_asked_again_keeps_its_own_deadline) {
  start();
  auto m = to_training();
  auto first = epoch_done(0, std::chrono::seconds(2));
  auto second = epoch_done(0);
  CAF_REQUIRE(first->answered);
  CAF_CHECK(first->yes);
  CAF_CHECK(!second->answered);
  traffic(m.server, 0);
  advance_time(std::chrono::seconds(2)); // the first question's deadline
  settle();
  CAF_CHECK(!second->answered);
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  traffic(m.w0, 0);
  traffic(m.w1, 0);
  CAF_REQUIRE(second->answered);
  CAF_CHECK(second->yes);
  CAF_CHECK_EQUAL(metrics->traffic.size(), 2u);
}

// The run ends (its session fails) while a traffic query is open: the question is answered
// at once and says the run ends (the coordinator must not start another phase); the traffic
// that came still reaches the metrics, once; answers after the end change nothing; a
// question after the end is refused without asking anyone; the run's answer comes once the
// channels have closed, and no deadline left behind releases anything.
CAF_TEST(run_ends_while_a_traffic_query_is_open) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0);
  traffic(m.server, 0, 100);
  session_ends(make_error(errc::internal, "compute 0: the loss is not a number"));
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(!gate->yes);
  CAF_CHECK(contains(gate->error, "compute 0: the loss is not a number"));
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK(contains(metrics->traffic[0].second, "server_0 rx 0 B tx 100 B"));
  CAF_REQUIRE(last_of<shutdown_message>(m.w0_sent) != nullptr);
  CAF_CHECK(!last_of<shutdown_message>(m.w0_sent)->finished);
  traffic(m.w0, 0, 5);
  traffic(m.w1, 0, 5);
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  auto after = epoch_done(1);
  CAF_REQUIRE(after->answered);
  CAF_CHECK(!after->yes);
  CAF_CHECK(contains(after->error, "the run is ending"));
  CAF_CHECK_EQUAL(count_of<traffic_query_message>(m.w0_sent), 1);
  CAF_CHECK(!result->answered);
  lost(m.w0, "");
  lost(m.w1, "");
  lost(m.server, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "compute 0: the loss is not a number"));
  advance_time(options.timeouts.step);
  settle();
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
}

// The session fails with a lost peer while a traffic query is open, before the loss itself
// is reported (failing): the question fails at once with that failure, as one after it does;
// the answers that come later are dropped; the loss, once reported, names the run's end.
CAF_TEST(session_fails_while_a_traffic_query_is_open) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0);
  traffic(m.server, 0);
  session_ends(make_error(errc::peer_down, "worker_1: the channel to server_0 closed"));
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(!gate->yes);
  CAF_CHECK(contains(gate->error, "the channel to server_0 closed"));
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK_EQUAL(count_of<shutdown_message>(m.w0_sent), 0); // the cause is not known yet
  traffic(m.w0, 0);
  CAF_CHECK(
    logged("scheduler: dropped worker 0 (pid 200 on 10.0.0.1)'s traffic answer for epoch 0: "
           "no epoch's traffic is gathered"));
  auto after = epoch_done(1);
  CAF_REQUIRE(after->answered);
  CAF_CHECK(contains(after->error, "the run is ending: worker_1: the channel to server_0 closed"));
  CAF_CHECK_EQUAL(count_of<traffic_query_message>(m.w0_sent), 1);
  lost(m.w1, "the connection to worker 1 closed");
  CAF_REQUIRE(last_of<shutdown_message>(m.w0_sent) != nullptr);
  lost(m.w0, "");
  lost(m.server, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 201"));
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
}

// A member's channel is lost while the epoch's traffic is gathered, and the job does not go on
// without it: the question fails at once naming the member (not at its deadline), the
// traffic that came reaches the metrics, and the run ends naming it.
CAF_TEST(member_lost_while_a_traffic_query_is_open) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0);
  traffic(m.server, 0);
  traffic(m.w0, 0);
  lost(m.w1, "no frame for 5000 ms");
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(!gate->yes);
  CAF_CHECK(contains(gate->error, "lost worker 1 (pid 201 on 10.0.0.1)"));
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK(!logged("traffic goes without")); // lost, not silent
  lost(m.w0, "");
  lost(m.server, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 201 on 10.0.0.1)"));
}

// A worker stops while the epoch's traffic is gathered because it lost the server (its
// goodbye names the server's plan node): the question fails at once naming the server.
CAF_TEST(member_stops_for_a_lost_peer_while_a_traffic_query_is_open) {
  start();
  auto m = to_training();
  auto gate = epoch_done(0);
  traffic(m.w1, 0);
  const auto server_node =
    static_cast<std::int32_t>(last_of<assignment_message>(m.server_sent)->node);
  caf::anon_send(node, goodbye_atom::value, m.w0,
                 shutdown_message{"lost server_0 at 10:00:00.000 UTC: the connection closed", false,
                                  server_node});
  settle();
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(!gate->yes);
  CAF_CHECK(contains(gate->error, "lost server 0 (pid 100"));
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  lost(m.w0, "");
  lost(m.w1, "");
  lost(m.server, "the connection closed");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost server 0 (pid 100"));
}

// Traffic answers from nodes that were not asked are dropped, each named in the log: a channel
// that never joined, a worker the run went on without (on_worker_loss = continue), an epoch
// that is not being gathered. The question still waits for the members it asked, and its
// figures hold only theirs.
CAF_TEST(traffic_from_a_node_that_was_not_asked_is_dropped) {
  start(1, 2, true);
  auto m = to_training();
  lost(m.w1, "no frame for 5000 ms"); // the run goes on without worker 1
  CAF_REQUIRE(!result->answered);
  sent_list stranger_sent;
  auto stranger = channel(stranger_sent);
  auto gate = epoch_done(0);
  CAF_CHECK_EQUAL(count_of<traffic_query_message>(m.w1_sent), 0);
  CAF_REQUIRE_EQUAL(count_of<traffic_query_message>(m.w0_sent), 1);
  traffic(stranger, 0, 1);
  traffic(m.w1, 0, 1);
  traffic(m.server, 3, 1);
  traffic(m.w0, 0, 10);
  CAF_CHECK(!gate->answered);
  CAF_CHECK(
    logged("scheduler: dropped a traffic answer for epoch 0 from a node that did not join"));
  CAF_CHECK(
    logged("scheduler: dropped worker 1 (pid 201 on 10.0.0.1)'s traffic answer for epoch 0: "
           "it was not asked"));
  CAF_CHECK(
    logged("scheduler: dropped server 0 (pid 100 on 10.0.0.1)'s traffic answer for epoch 3: "
           "epoch 0's is gathered"));
  traffic(m.server, 0, 20);
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(gate->yes);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK(contains(metrics->traffic[0].second, "server_0 rx 0 B tx 20 B"));
  CAF_CHECK(contains(metrics->traffic[0].second, "worker_0 rx 0 B tx 10 B"));
  CAF_CHECK(!contains(metrics->traffic[0].second, "worker_1"));
}

// A member that floods the scheduler with node messages out of turn (readies, traffic) does
// not move the state machine: each is refused or dropped, the join deadline still holds.
CAF_TEST(flood_of_messages_out_of_turn) {
  start();
  sent_list s;
  auto server = channel(s);
  join(server, node_kind::server, -1, 100);
  for (int i = 0; i < 1000; ++i)
    caf::anon_send(node, traffic_atom::value, server, traffic_message{i, {}});
  settle();
  CAF_CHECK(!result->answered);
  // Each is dropped for what it is: no question is open (and none was late: no run yet).
  const auto dropped = std::count_if(lines->begin(), lines->end(), [](auto& l) {
    return contains(l, "'s traffic answer for epoch")
           && contains(l, ": no epoch's traffic is gathered");
  });
  CAF_CHECK_EQUAL(dropped, 1000);
  CAF_CHECK(!logged("after its deadline"));
  CAF_CHECK_EQUAL(count_of<assignment_message>(s), 0);
  advance_time(options.join_timeout);
  settle();
  lost(server, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "gave up after 120 s"));
  CAF_CHECK(contains(result->error, "waiting for worker 0"));
}

// A ready out of turn (before the node's assignment) ends the run naming the node.
CAF_TEST(ready_out_of_turn_fails_the_run) {
  start();
  sent_list s, a;
  auto server = channel(s), w0 = channel(a);
  join(server, node_kind::server, -1, 100);
  join(w0, node_kind::worker, -1, 200);
  ready(w0, 1);
  lost(server, "");
  lost(w0, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "worker 0 (pid 200 on 10.0.0.1) reported ready out of turn"));
}

// A message outside the protocol is named in the log and dropped; the node goes on.
CAF_TEST(unknown_message_kind_is_ignored) {
  start();
  caf::anon_send(caf::actor_cast<caf::actor>(node), std::string("hello"), 42);
  settle();
  CAF_CHECK(logged("scheduler: ignored a message outside the node-control protocol"));
  sent_list s, a, b;
  auto server = channel(s), w0 = channel(a), w1 = channel(b);
  join(server, node_kind::server);
  join(w0, node_kind::worker);
  join(w1, node_kind::worker);
  CAF_CHECK_EQUAL(count_of<assignment_message>(s), 1);
}

// The run finished: workers are told first, servers once the workers have gone, then the answer.
CAF_TEST(finished_run_ends_workers_then_servers) {
  start();
  auto m = to_training();
  session_ends();
  CAF_REQUIRE(last_of<shutdown_message>(m.w0_sent) != nullptr);
  CAF_CHECK(last_of<shutdown_message>(m.w0_sent)->finished);
  CAF_CHECK_EQUAL(count_of<shutdown_message>(m.server_sent), 0);
  lost(m.w0, "");
  lost(m.w1, "");
  CAF_REQUIRE(last_of<shutdown_message>(m.server_sent) != nullptr);
  CAF_CHECK(!result->answered);
  lost(m.server, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(result->ok);
}

// on_worker_loss = adopt: a worker lost mid-phase. The scheduler picks the survivor with the
// fewest computes (lowest rank among equals), tells it to adopt the lost node (an adopt frame
// naming that plan node), and re-points the lost compute's relay only once the adopter says
// ready for that node: the phase the relay held is asked again there, the coordinator never
// sees the loss.
CAF_TEST(lost_worker_is_adopted_and_its_phase_asked_again) {
  start(1, 3, false, true);
  sent_list server_sent;
  std::vector<sent_list> ws(3);
  auto server = channel(server_sent);
  std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1]), holding(ws[2])};
  to_training(server, server_sent, workers, ws);
  CAF_REQUIRE_EQUAL(session->runs, 1);
  const int lost_node = plan_node(node_kind::worker, 2);
  const auto compute = first_actor(plan_role::compute, lost_node);
  CAF_REQUIRE(compute < plan.actors.size());
  auto relay = sinks.node.remote.compute(compute);
  *down.at(workers[2].address()) = true; // its process is gone: what is asked there fails
  auto phase = std::make_shared<phase_answer>();
  spawned.push_back(sys.spawn(ask_train, relay, 0, phase));
  settle();
  CAF_REQUIRE_EQUAL(count_of<control_message>(ws[2]), 1); // asked where it lived
  killed(workers[2]);
  CAF_CHECK(!result->answered);
  CAF_CHECK(!phase->answered); // held by the relay, not failed
  CAF_CHECK(logged("lost worker 2 (pid 202"));
  CAF_CHECK(logged("worker 0 (pid 200 on 10.0.0.1) adopts compute_2 of worker_2 (the worker "
                   "running the fewest computes, 1"));
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[0]), 1);
  CAF_CHECK_EQUAL(count_of<adopt_message>(ws[1]), 0);
  CAF_CHECK_EQUAL(last_of<adopt_message>(ws[0])->node, static_cast<std::uint32_t>(lost_node));
  CAF_CHECK_EQUAL(count_of<control_message>(ws[0]), 0); // not before the adopter is ready
  ready(workers[0], static_cast<std::uint32_t>(lost_node));
  CAF_REQUIRE_EQUAL(count_of<control_message>(ws[0]), 1);
  const auto* again = last_of<control_message>(ws[0]);
  CAF_CHECK_EQUAL(again->rank, static_cast<std::uint32_t>(plan.actors[compute].rank));
  CAF_CHECK_EQUAL(again->epoch, 0);
  CAF_CHECK(again->kind == control_kind::train);
  CAF_CHECK(logged("worker 0 (pid 200 on 10.0.0.1) serves the computes of worker_2"));
  // The adopter's answer is the coordinator's answer.
  CAF_CHECK(phase->answered);
  CAF_CHECK_EQUAL(phase->error, "");
  // The next loss goes to the worker with the fewest computes: worker 1 (1), not worker 0 (2),
  // and worker 0's adopted node goes with it when it is the one lost.
  lost(workers[0], "the connection closed");
  CAF_CHECK(!result->answered);
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[1]), 2);
  CAF_CHECK(
    logged("worker 1 (pid 201 on 10.0.0.1) adopts compute_0 of worker_0; compute_2 of worker_2"));
}

// A second worker lost while an adoption is under way stops the run naming both.
CAF_TEST(second_loss_during_an_adoption_stops_naming_both) {
  start(1, 3, false, true);
  sent_list server_sent;
  std::vector<sent_list> ws(3);
  auto server = channel(server_sent);
  std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1]), holding(ws[2])};
  to_training(server, server_sent, workers, ws);
  killed(workers[2]);
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(ws[0]), 1);
  killed(workers[1]); // before worker 0 said ready for worker_2
  session_ends(make_error(errc::peer_down, "the run ends"));
  lost(workers[0], "");
  lost(server, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 201"));
  CAF_CHECK(contains(result->error, "while worker 0 (pid 200 on 10.0.0.1) was adopting worker_2"));
  CAF_CHECK(contains(result->error, "a second loss during an adoption stops the run"));
}

// The adopter itself lost before it said ready: the run stops naming it and the node it was
// adopting (no survivor is left to take both here).
CAF_TEST(no_worker_left_to_adopt_stops_naming_the_lost_worker) {
  start(1, 2, false, true);
  auto m = to_training();
  lost(m.w1, "the connection closed");
  CAF_REQUIRE_EQUAL(count_of<adopt_message>(m.w0_sent), 1);
  lost(m.w0, "the connection closed");
  session_ends(make_error(errc::peer_down, "the run ends"));
  lost(m.server, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "scheduler: lost worker 0 (pid 200"));
  CAF_CHECK(contains(result->error, "not adopted: no worker is left to adopt its computes"));
}

// Without adopt (the default stop) a lost worker stops the run as before, and nothing is adopted.
CAF_TEST(lost_worker_with_stop_is_not_adopted) {
  start(1, 2);
  auto m = to_training();
  lost(m.w1, "the connection closed");
  CAF_CHECK_EQUAL(count_of<adopt_message>(m.w0_sent), 0);
  session_ends(make_error(errc::peer_down, "the run ends"));
  lost(m.w0, "");
  lost(m.server, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "scheduler: lost worker 1 (pid 201"));
  CAF_CHECK(!contains(result->error, "adopt"));
}

CAF_TEST_FIXTURE_SCOPE_END()
