// A member node's (a server's or a worker's) state machine, message by message
// (node_fixture.hpp): joining and retrying, refusals before it runs, the assignment and the
// part it spawns, traffic queries, a lost scheduler (rejoining a restarted one), goodbyes and
// their grace.
//
// Built on CAF's own test framework (its test coordinator needs it); ctest runs each case
// alone (tests/cluster/CMakeLists.txt).
#define CAF_SUITE node_control

#include "tests/cluster/node_fixture.hpp"

namespace {

// A worker node, before its assignment (spawning a part needs data and threads).
struct member_fixture : node_fixture {
  member_node_actor node;
  std::shared_ptr<outcome> result = std::make_shared<outcome>();
  std::shared_ptr<traffic_registry> traffic = std::make_shared<traffic_registry>();
  member_options options = member_options_for(node_kind::worker, lines);
  channel_actor scheduler;
  sent_list to_scheduler;
  recorded_events records = std::make_shared<std::vector<recorded_event>>();

  explicit member_fixture(std::chrono::milliseconds scheduler_timeout = std::chrono::seconds(30)) {
    options.scheduler_timeout = scheduler_timeout;
    options.events = events_into(records, "worker");
    node = spawn_member_node(sys, options, std::make_shared<serving_registry>(), traffic, false);
    spawned.push_back(caf::actor_cast<caf::actor>(node));
    spawned.push_back(sys.spawn(host<bool>, caf::actor_cast<caf::actor>(node), result));
    scheduler = channel(to_scheduler);
    caf::anon_send(node, scheduler_channel_atom::value, scheduler);
    settle();
  }
  void lost(const channel_actor& l, const std::string& why) {
    caf::anon_send(node, channel_lost_atom::value, l,
                   why.empty() ? caf::error{} : make_error(errc::peer_down, why));
    settle();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(member_node_tests, member_fixture)

// An adopt from another channel is ignored; one from the scheduler before the node runs its own
// part is refused, and the node ends naming why (the scheduler adopts only with running workers).
CAF_TEST(member_refuses_an_adopt_before_it_runs) {
  sent_list other_sent;
  auto other = channel(other_sent);
  caf::anon_send(node, adopt_atom::value, other, adopt_message{2, {}});
  settle();
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("ignored an adopt from a channel other than the scheduler's"));
  caf::anon_send(node, adopt_atom::value, scheduler, adopt_message{2, {}});
  settle();
  CAF_CHECK(contains(last_of<shutdown_message>(to_scheduler)->reason,
                     "cannot adopt as the scheduler asked: this node is no running worker"));
}

// Asked by its host to leave before it runs its part (SIGTERM while joining): it ends at once
// naming why, as the signal would have ended it; a release nobody asked for, or from another
// channel, changes nothing.
CAF_TEST(member_asked_to_leave_before_it_runs_ends_naming_why) {
  sent_list other_sent;
  auto other = channel(other_sent);
  caf::anon_send(node, release_atom::value, other, release_message{true, ""});
  settle();
  CAF_CHECK(logged("ignored a release from a channel other than the scheduler's"));
  caf::anon_send(node, release_atom::value, scheduler, release_message{true, ""});
  settle();
  CAF_CHECK(logged("ignored a release it did not ask for"));
  CAF_CHECK(!result->answered);
  CAF_CHECK_EQUAL(count_of<leave_message>(to_scheduler), 0);
  caf::anon_send(node, leave_asked_atom::value, std::string("SIGTERM"));
  settle();
  CAF_CHECK_EQUAL(count_of<leave_message>(to_scheduler), 0);
  CAF_REQUIRE(last_of<shutdown_message>(to_scheduler) != nullptr);
  CAF_CHECK(contains(last_of<shutdown_message>(to_scheduler)->reason,
                     "asked to leave (SIGTERM) while joining: only a worker in training drains"));
  lost(scheduler, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(!result->ok);
}

// A drain (troupe ctl's, through the scheduler) before it runs, or from another channel, is
// logged and changes nothing: only a worker in training drains, and nothing ends this one.
CAF_TEST(member_ignores_a_drain_before_it_runs) {
  sent_list other_sent;
  auto other = channel(other_sent);
  caf::anon_send(node, drain_atom::value, other, drain_message{"troupe ctl drain"});
  settle();
  CAF_CHECK(logged("ignored a drain from a channel other than the scheduler's"));
  caf::anon_send(node, drain_atom::value, scheduler, drain_message{"troupe ctl drain"});
  settle();
  CAF_CHECK(logged("ignored a drain (troupe ctl drain) while joining: only a worker in training "
                   "drains"));
  CAF_CHECK_EQUAL(count_of<leave_message>(to_scheduler), 0);
  CAF_CHECK_EQUAL(count_of<shutdown_message>(to_scheduler), 0);
  CAF_CHECK(!result->answered);
}

// A cede of a node it did not adopt, of ranks it does not run, or from another channel changes
// nothing.
CAF_TEST(member_ignores_a_cede_of_a_node_it_did_not_adopt) {
  sent_list other_sent;
  auto other = channel(other_sent);
  caf::anon_send(node, cede_atom::value, other, cede_message{2, {}});
  settle();
  CAF_CHECK(logged("ignored a cede from a channel other than the scheduler's"));
  caf::anon_send(node, cede_atom::value, scheduler, cede_message{2, {}});
  settle();
  CAF_CHECK(logged("ignored a cede of plan node 2, which it did not adopt"));
  caf::anon_send(node, cede_atom::value, scheduler, cede_message{2, {5}});
  settle();
  CAF_CHECK(logged("ignored a cede of compute_5, which it does not run"));
  CAF_CHECK(!result->answered);
}

// A promote from another channel is ignored; one from the scheduler before the node runs (or in
// a run without shard backups) is refused, and the node ends naming why.
CAF_TEST(member_refuses_a_promote_before_it_runs) {
  sent_list other_sent;
  auto other = channel(other_sent);
  caf::anon_send(node, promote_atom::value, other, promote_message{1, 2});
  settle();
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("ignored a promote from a channel other than the scheduler's"));
  caf::anon_send(node, promote_atom::value, scheduler, promote_message{1, 2});
  settle();
  CAF_CHECK(contains(
    last_of<shutdown_message>(to_scheduler)->reason,
    "the scheduler asked for a promotion this node cannot take (shard_backups 0, nodes 1 and 2)"));
}

CAF_TEST(member_joins_on_its_scheduler_channel) {
  const auto* join = last_of<join_message>(to_scheduler);
  CAF_REQUIRE(join != nullptr);
  CAF_CHECK(join->role == node_kind::worker);
  CAF_CHECK_EQUAL(join->rank, -1);
}

// The join is recorded as it is sent, with where the scheduler is; a scheduler lost before the
// assignment is recorded as a loss naming why; every record is this worker's, rank unknown.
CAF_TEST(member_records_its_join_and_its_loss) {
  const auto joined = records_of(records, "joined");
  CAF_REQUIRE_EQUAL(joined.size(), 1u);
  CAF_CHECK_EQUAL(joined[0].strings.at("scheduler_host"), options.scheduler_host);
  CAF_CHECK_EQUAL(joined[0].numbers.at("scheduler_port"), options.scheduler_port);
  CAF_CHECK_EQUAL(joined[0].strings.at("spare"), "no");
  lost(scheduler, "the connection to the scheduler closed");
  const auto gone = records_of(records, "lost");
  CAF_REQUIRE_EQUAL(gone.size(), 1u);
  CAF_CHECK_EQUAL(gone[0].strings.at("lost"), "scheduler");
  CAF_CHECK(contains(gone[0].strings.at("reason"), "the connection to the scheduler closed"));
  for (const auto& r : *records) {
    CAF_CHECK_EQUAL(r.strings.at("role"), "worker");
    CAF_CHECK_EQUAL(r.numbers.at("rank"), -1);
  }
}

// The scheduler is lost while the node waits for its assignment: it ends naming the loss.
// A node with no place yet whose scheduler is lost joins a restarted one as it joined the
// lost one (a first join, not a rejoin).
CAF_TEST(member_loses_its_scheduler_during_join) {
  lost(scheduler, "the connection to the scheduler closed");
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("it has no place yet"));
  sent_list to_restarted;
  auto restarted = reached_again(node, to_restarted);
  const auto* join = last_of<join_message>(to_restarted);
  CAF_REQUIRE(join != nullptr);
  CAF_CHECK(!join->rejoin);
  CAF_CHECK_EQUAL(join->role, node_kind::worker);
}

// The scheduler's goodbye says why; its channel's end then ends the node with that reason, or
// normally when the run finished.
CAF_TEST(member_ends_with_the_reason_its_scheduler_gave) {
  caf::anon_send(node, goodbye_atom::value, scheduler,
                 shutdown_message{"lost worker 1 (pid 9)", false, -1});
  settle();
  CAF_CHECK(!result->answered);
  lost(scheduler, "scheduler shut down: lost worker 1 (pid 9)");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost the scheduler at"));
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 9)"));
}

// The scheduler's fence is said and taken; one from another channel is ignored. A peer's goodbye
// that says this node is fenced ends it at once, naming why: its part runs elsewhere.
CAF_TEST(member_takes_a_fence_and_ends_once_told_it_is_fenced_itself) {
  sent_list to_peer;
  const auto peer = channel(to_peer);
  caf::anon_send(node, fence_atom::value, peer, fence_message{2, 9, "lost at 10:00"});
  settle();
  CAF_CHECK(logged("ignored a fence from a channel other than the scheduler's"));
  caf::anon_send(node, fence_atom::value, scheduler, fence_message{2, 9, "lost at 10:00"});
  settle();
  CAF_CHECK(logged("the scheduler fenced node 2 (term 9): lost at 10:00; nothing of that term is "
                   "taken here from now on"));
  CAF_CHECK(!result->answered);
  shutdown_message told{"fenced by server_1: the scheduler declared it lost: lost at 10:00"};
  told.fenced = true;
  caf::anon_send(node, goodbye_atom::value, peer, told);
  settle();
  lost(scheduler, ""); // the channel it said goodbye on ends
  CAF_REQUIRE(result->answered);
  CAF_CHECK(!result->ok);
  CAF_CHECK(
    contains(result->error, "(term 0): fenced by server_1: the scheduler declared it lost"));
  CAF_CHECK(contains(result->error, "it takes no further part in the run"));
}

CAF_TEST(member_finishes_after_a_finished_goodbye) {
  caf::anon_send(node, goodbye_atom::value, scheduler,
                 shutdown_message{"the run finished", true, -1});
  settle();
  lost(scheduler, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(result->ok);
}

// An assignment whose server cannot be reached, with the scheduler's goodbye already behind it
// in the mailbox (it ended the run, having lost that server): the node ends with the
// scheduler's reason, not its own echo of it.
CAF_TEST(member_that_cannot_reach_a_server_names_the_schedulers_reason_when_it_came) {
  const auto job = cluster_job(1, 2);
  const auto plan = plan_placement(job, facts);
  assignment_message a;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == node_kind::worker && plan.nodes[n].rank == 0)
      a.node = static_cast<std::uint32_t>(n);
  a.job = job_bytes(job);
  a.job_hash = job_hash(job);
  a.plan_hash = plan.hash;
  a.facts = facts;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == node_kind::server)
      a.servers.push_back(
        {static_cast<std::uint32_t>(n), "127.0.0.1", 1}); // nothing listens on port 1
  caf::anon_send(node, assignment_atom::value, scheduler, a);
  caf::anon_send(node, goodbye_atom::value, scheduler,
                 shutdown_message{"scheduler: lost server 0 (pid 9)", false, -1});
  settle();
  const auto* bye = last_of<shutdown_message>(to_scheduler);
  CAF_REQUIRE(bye != nullptr);
  lost(scheduler, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost the scheduler at"));
  CAF_CHECK(contains(result->error, "lost server 0 (pid 9)"));
  CAF_CHECK(!contains(result->error, "cannot connect"));
}

// An assignment that does not decode ends the node; the scheduler hears why.
CAF_TEST(member_refuses_a_broken_assignment) {
  assignment_message a;
  a.job = {'x', 'y'};
  caf::anon_send(node, assignment_atom::value, scheduler, a);
  settle();
  const auto* bye = last_of<shutdown_message>(to_scheduler);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(!bye->finished);
  CAF_CHECK_EQUAL(bye->lost_node, -1);
  CAF_CHECK(!result->answered); // waits for the scheduler to read it
  lost(scheduler, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(!result->ok);
}

// Only the scheduler's channel may assign: an assignment from another channel is ignored.
CAF_TEST(member_ignores_an_assignment_from_another_channel) {
  sent_list other_sent;
  auto other = channel(other_sent);
  assignment_message a;
  a.job = {'x', 'y'};
  caf::anon_send(node, assignment_atom::value, other, a);
  settle();
  CAF_CHECK(logged("ignored an assignment from a channel other than the scheduler's"));
  CAF_CHECK_EQUAL(count_of<shutdown_message>(to_scheduler), 0);
  CAF_CHECK(!result->answered);
}

// The answer names the epoch asked and carries what every channel of the node counted so far.
CAF_TEST(member_answers_a_traffic_query) {
  auto counted = traffic->add(scheduler.address(), "scheduler");
  counted->count_out(0, 123);
  counted->count_in(1, 45);
  caf::anon_send(node, traffic_query_atom::value, scheduler, traffic_query_message{3});
  settle();
  CAF_REQUIRE_EQUAL(count_of<traffic_message>(to_scheduler), 1);
  const auto* t = last_of<traffic_message>(to_scheduler);
  CAF_CHECK_EQUAL(t->epoch, 3);
  CAF_REQUIRE_EQUAL(t->peers.size(), 1u);
  CAF_CHECK_EQUAL(t->peers[0].peer, "scheduler");
  CAF_REQUIRE_GREATER(t->peers[0].bytes_out.size(), 1u);
  CAF_CHECK_EQUAL(t->peers[0].bytes_out[0], 123u);
  CAF_CHECK_EQUAL(t->peers[0].bytes_in[1], 45u);
}

// Only the scheduler asks for traffic: a query on another channel is named and not answered.
CAF_TEST(member_ignores_a_traffic_query_from_another_channel) {
  sent_list other_sent;
  auto other = channel(other_sent);
  caf::anon_send(node, traffic_query_atom::value, other, traffic_query_message{3});
  settle();
  CAF_CHECK(logged("ignored a traffic query from a channel other than the scheduler's"));
  CAF_CHECK_EQUAL(count_of<traffic_message>(to_scheduler), 0);
  CAF_CHECK_EQUAL(count_of<traffic_message>(other_sent), 0);
  CAF_CHECK(!result->answered);
}

// A node that has ended (here: it refused its assignment) answers no traffic query: its
// goodbye is the last thing it says to the scheduler.
CAF_TEST(member_answers_no_traffic_query_once_it_has_ended) {
  assignment_message a;
  a.job = {'x', 'y'};
  caf::anon_send(node, assignment_atom::value, scheduler, a);
  settle();
  CAF_REQUIRE_EQUAL(count_of<shutdown_message>(to_scheduler), 1);
  caf::anon_send(node, traffic_query_atom::value, scheduler, traffic_query_message{0});
  settle();
  CAF_CHECK_EQUAL(count_of<traffic_message>(to_scheduler), 0);
  CAF_CHECK(std::holds_alternative<shutdown_message>(to_scheduler->back()));
}

CAF_TEST(member_unknown_message_kind_is_ignored) {
  caf::anon_send(caf::actor_cast<caf::actor>(node), std::string("hello"));
  settle();
  CAF_CHECK(logged("ignored a message outside the node-control protocol"));
  CAF_CHECK(!result->answered);
}

// No assignment within the deadline: the node gives up and says so.
CAF_TEST(member_gives_up_without_an_assignment) {
  advance_time(options.join_timeout * 2 + std::chrono::seconds(5));
  settle();
  CAF_REQUIRE(last_of<shutdown_message>(to_scheduler) != nullptr);
  lost(scheduler, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "no assignment from the scheduler in time"));
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

struct impatient_member_fixture : member_fixture {
  impatient_member_fixture() : member_fixture(std::chrono::milliseconds(0)) {}
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(impatient_member_tests, impatient_member_fixture)

// With no scheduler timeout a node that loses its scheduler while it joins stops at once.
CAF_TEST(member_without_a_scheduler_timeout_stops_when_its_scheduler_is_lost_during_join) {
  lost(scheduler, "the connection to the scheduler closed");
  CAF_CHECK(result->answered);
  CAF_CHECK(!result->ok);
  CAF_CHECK(contains(result->error, "lost the scheduler at"));
  CAF_CHECK(contains(result->error, "the connection to the scheduler closed"));
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

// A worker node that has yet to reach its scheduler, which does not listen (a port bound on
// 127.0.0.1 without listening: connecting is refused at once).
struct connecting_fixture : node_fixture {
  member_node_actor node;
  std::shared_ptr<outcome> result = std::make_shared<outcome>();
  member_options options = member_options_for(node_kind::worker, lines);
  int closed_port_fd = -1;

  connecting_fixture() {
    closed_port_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(closed_port_fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(closed_port_fd, reinterpret_cast<sockaddr*>(&address), &length);
    options.scheduler_port = ntohs(address.sin_port);
    node = spawn_member_node(sys, options, std::make_shared<serving_registry>(),
                             std::make_shared<traffic_registry>(), false);
    spawned.push_back(caf::actor_cast<caf::actor>(node));
    caf::anon_send(node, connect_atom::value);
    spawned.push_back(sys.spawn(host<bool>, caf::actor_cast<caf::actor>(node), result));
    settle();
  }
  ~connecting_fixture() override { ::close(closed_port_fd); }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(member_connect_tests, connecting_fixture)

// A node started before its scheduler tries again every retry period until the join timeout,
// then gives up naming the address and the reason; no try blocks the node's timers.
CAF_TEST(member_retries_until_the_join_timeout) {
  const auto where = "127.0.0.1:" + std::to_string(options.scheduler_port);
  CAF_CHECK(logged("worker: no scheduler at " + where + " yet; retrying until the join timeout"));
  CAF_CHECK(!result->answered);
  advance_time(options.join_timeout / 2);
  settle();
  CAF_CHECK(!result->answered);
  CAF_CHECK_EQUAL(
    std::count_if(lines->begin(), lines->end(), [](auto& l) { return contains(l, "retrying"); }),
    1);
  advance_time(options.join_timeout / 2);
  settle();
  CAF_CHECK(result->answered);
  CAF_CHECK(!result->ok);
  CAF_CHECK(contains(result->error, "no scheduler at " + where + " within 120 s (--join-timeout)"));
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

// A server node given a real assignment: it spawns its shards and a listener (bound on
// 127.0.0.1, accepting nobody) and says ready; its shards are in `shards`.
struct server_member_fixture : node_fixture {
  training_job job = cluster_job(1, 2);
  placement_plan plan = plan_placement(job, facts);
  member_node_actor node;
  std::shared_ptr<serving_registry> shards = std::make_shared<serving_registry>();
  std::shared_ptr<outcome> result = std::make_shared<outcome>();
  member_options options = member_options_for(node_kind::server, lines);
  channel_actor scheduler;
  sent_list to_scheduler;
  std::uint32_t server_node = 0;
  std::uint16_t bound_port = 0; // of the socket bound before joining, if one was given

  explicit server_member_fixture(
    std::shared_ptr<listening_socket> listening = nullptr,
    std::chrono::milliseconds scheduler_timeout = std::chrono::seconds(30)) {
    options.scheduler_timeout = scheduler_timeout;
    if (listening)
      bound_port = listening->port();
    for (std::size_t n = 0; n < plan.nodes.size(); ++n)
      if (plan.nodes[n].kind == node_kind::server)
        server_node = static_cast<std::uint32_t>(n);
    node = spawn_member_node(sys, options, shards, std::make_shared<traffic_registry>(), false,
                             std::move(listening));
    spawned.push_back(caf::actor_cast<caf::actor>(node));
    spawned.push_back(sys.spawn(host<bool>, caf::actor_cast<caf::actor>(node), result));
    scheduler = channel(to_scheduler);
    caf::anon_send(node, scheduler_channel_atom::value, scheduler);
    settle();
    caf::anon_send(node, assignment_atom::value, scheduler, assignment());
    settle();
  }
  ~server_member_fixture() override {
    // A node that still runs ends as the scheduler ends a run: its part goes with it.
    caf::anon_send(node, goodbye_atom::value, scheduler,
                   shutdown_message{"the run finished", true, -1});
    caf::anon_send(node, channel_lost_atom::value, scheduler, caf::error{});
    settle();
  }
  assignment_message assignment() const {
    assignment_message a;
    a.node = server_node;
    a.job = job_bytes(job);
    a.job_hash = job_hash(job);
    a.plan_hash = plan.hash;
    a.facts = facts;
    return a;
  }
  void lost(const channel_actor& l, const std::string& why) {
    caf::anon_send(node, channel_lost_atom::value, l,
                   why.empty() ? caf::error{} : make_error(errc::peer_down, why));
    settle();
  }
  // The scheduler on `l` ends the run as finished: the node ends, and with it its part.
  void finished_over(const channel_actor& l) {
    caf::anon_send(node, goodbye_atom::value, l, shutdown_message{"the run finished", true, -1});
    lost(l, "");
    CAF_CHECK(result->answered);
    CAF_CHECK(result->ok);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(server_member_tests, server_member_fixture)

CAF_TEST(member_server_says_ready_with_its_port) {
  const auto* ready = last_of<ready_message>(to_scheduler);
  CAF_REQUIRE(ready != nullptr);
  CAF_CHECK_EQUAL(ready->node, server_node);
  CAF_CHECK_NOT_EQUAL(ready->port, 0);
  CAF_CHECK(shards->find<remote_interface::push_target>(0) != nullptr);
  CAF_CHECK(!result->answered);
}

namespace {

struct change_answer {
  bool answered = false;
  std::uint32_t shards = 0;
  std::string error;
};

caf::behavior ask_change(caf::event_based_actor* self, shard_change_actor server,
                         shard_change change, std::shared_ptr<change_answer> out) {
  self
    ->request(server, caf::infinite, change_atom::value, change,
              deadline::after(std::chrono::hours(1)))
    .then(
      [=](std::uint32_t shards) {
        out->answered = true;
        out->shards = shards;
      },
      [=](caf::error& err) {
        out->answered = true;
        out->error = err.category() == error_category ? error_text(err) : std::string("caf error");
      });
  return {};
}

} // namespace

// troupe ctl set's server side: every shard the server holds takes the change, and the answer
// counts them; a value a shard refuses is the answer, naming the shard.
CAF_TEST(member_server_changes_every_shard_it_holds) {
  const auto server = shards->find<remote_interface::shard_change>(0);
  CAF_REQUIRE(server != nullptr);
  std::size_t own = 0;
  for (auto a : plan.actors_of(plan_role::shard))
    own += plan.actors[a].node == static_cast<int>(server_node) ? 1 : 0;
  CAF_REQUIRE(own > 0);
  auto taken = std::make_shared<change_answer>();
  spawned.push_back(sys.spawn(ask_change, server, shard_change{shard_setting::lr, 0.01, 0}, taken));
  settle();
  CAF_REQUIRE(taken->answered);
  CAF_CHECK_EQUAL(taken->error, "");
  CAF_CHECK_EQUAL(taken->shards, own);
  CAF_CHECK(logged("changing lr to 0.01 from step 0 in its " + std::to_string(own) + " shards"));
  auto refused = std::make_shared<change_answer>();
  spawned.push_back(
    sys.spawn(ask_change, server, shard_change{shard_setting::momentum, 1.5, 0}, refused));
  settle();
  CAF_REQUIRE(refused->answered);
  CAF_CHECK(contains(refused->error, "refused the change: param_shard: change of momentum"));
  CAF_CHECK(contains(refused->error, "momentum must be at least 0 and below 1"));
  CAF_CHECK(!result->answered);
}

// A member spawned scheduled, as in these tests, spawns its part scheduled too, checkpoint
// part included: on a thread of its own that actor would race the deterministic coordinator,
// which is not thread-safe, and a case could lose the node's last message.
CAF_TEST(member_server_spawned_scheduled_spawns_its_part_scheduled) {
  CAF_REQUIRE(shards->find<remote_interface::checkpoint_part>(0) != nullptr);
  CAF_CHECK_EQUAL(sys.detached_actors(), 0u);
}

CAF_TEST(member_assignment_twice_is_refused) {
  caf::anon_send(node, assignment_atom::value, scheduler, assignment());
  settle();
  const auto* bye = last_of<shutdown_message>(to_scheduler);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(contains(bye->reason, "the scheduler sent an assignment twice"));
}

// An actor of the part ends on its own: the node ends naming it, and tells the scheduler why.
CAF_TEST(member_part_down_alone_names_the_actor) {
  caf::anon_send_exit(shards->find<remote_interface::push_target>(0), caf::exit_reason::kill);
  settle();
  const auto* bye = last_of<shutdown_message>(to_scheduler);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(contains(bye->reason, "terminated"));
  CAF_CHECK_EQUAL(bye->lost_node, -1);
  lost(scheduler, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "terminated"));
}

// A finished run: the workers still linked to this server hear it say so on their channels
// (rather than a closed connection when its listener goes), and the server ends once those
// channels closed.
CAF_TEST(member_server_says_goodbye_to_connected_workers_when_the_run_finished) {
  sent_list to_worker;
  auto worker = channel(to_worker);
  caf::anon_send(node, channel_up_atom::value, worker, std::string("worker_0"));
  settle();
  caf::anon_send(node, goodbye_atom::value, scheduler,
                 shutdown_message{"the run finished", true, -1});
  lost(scheduler, "");
  const auto* bye = last_of<shutdown_message>(to_worker);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(bye->finished);
  CAF_CHECK(!result->answered); // until the worker's channel closed
  lost(worker, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(result->ok);
}

// A failed run: the workers linked here hear why from this server too, and it ends once their
// channels closed. (Found by scripts/chaos.py: this server closed their channels without a word,
// and a worker that read the close before the scheduler's goodbye named this server as the node
// lost, not the one the scheduler lost.)
CAF_TEST(member_server_tells_connected_workers_why_the_run_failed) {
  sent_list to_worker;
  auto worker = channel(to_worker);
  caf::anon_send(node, channel_up_atom::value, worker, std::string("worker_0"));
  settle();
  caf::anon_send(node, goodbye_atom::value, scheduler,
                 shutdown_message{"scheduler: lost worker 1 (pid 9 from 10.0.0.3)", false, -1});
  lost(scheduler, "the peer shut down: scheduler: lost worker 1 (pid 9 from 10.0.0.3)");
  const auto* bye = last_of<shutdown_message>(to_worker);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(!bye->finished);
  CAF_CHECK(contains(bye->reason, "lost worker 1 (pid 9 from 10.0.0.3)"));
  CAF_CHECK(!result->answered); // until the worker's channel closed
  lost(worker, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 9 from 10.0.0.3)"));
}

// The scheduler's channel is lost in training: the server keeps its part (its shards still
// serve) and, once a scheduler is reached again, rejoins it saying where it stands: its plan
// node, its port, its shards' last applied step (none yet).
CAF_TEST(member_server_trains_on_without_its_scheduler_and_rejoins_a_restarted_one) {
  lost(scheduler, "the connection to the scheduler closed");
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("lost the scheduler at"));
  CAF_CHECK(logged("training goes on here"));
  CAF_CHECK(shards->find<remote_interface::push_target>(0) != nullptr);
  const auto* first_ready = last_of<ready_message>(to_scheduler);
  CAF_REQUIRE(first_ready != nullptr);
  sent_list to_restarted;
  auto restarted = reached_again(node, to_restarted);
  const auto* join = last_of<join_message>(to_restarted);
  CAF_REQUIRE(join != nullptr);
  CAF_REQUIRE(join->rejoin.has_value());
  CAF_CHECK_EQUAL(join->role, node_kind::server);
  CAF_CHECK_EQUAL(join->rejoin->node, server_node);
  CAF_CHECK_EQUAL(join->port, first_ready->port);
  CAF_CHECK_EQUAL(join->rejoin->applied_step, -1);
  CAF_CHECK_EQUAL(join->job_hash, job_hash_without_counts(job));
  CAF_CHECK(join->rejoin->promoted.empty());
  CAF_CHECK(!result->answered);
  // The restarted scheduler is its scheduler now: its traffic query is answered there.
  caf::anon_send(node, traffic_query_atom::value, restarted, traffic_query_message{0});
  settle();
  CAF_CHECK(last_of<traffic_message>(to_restarted) != nullptr);
  finished_over(restarted);
}

// No scheduler comes back within the scheduler timeout: the node stops, naming the scheduler
// and the timeout.
CAF_TEST(member_server_stops_when_no_scheduler_comes_back_in_time) {
  lost(scheduler, "the connection to the scheduler closed");
  CAF_CHECK(!result->answered);
  advance_time(options.scheduler_timeout);
  settle();
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost the scheduler, and no scheduler came back at"));
  CAF_CHECK(contains(result->error, "(--scheduler-timeout)"));
}

// A rejoin over a channel that is never admitted (a frozen scheduler's port still takes
// connections) does not end the absence: at the timeout the node stops. Once the channel is
// admitted, the timeout passes without a word.
CAF_TEST(member_server_stops_when_its_rejoin_is_never_admitted) {
  lost(scheduler, "the connection to the scheduler closed");
  sent_list to_frozen;
  auto frozen = reached_again(node, to_frozen);
  CAF_CHECK(last_of<join_message>(to_frozen) != nullptr);
  advance_time(options.scheduler_timeout);
  settle();
  const auto* bye = last_of<shutdown_message>(to_frozen);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(contains(bye->reason, "no scheduler came back"));
  lost(frozen, "the connection closed");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "no scheduler came back"));
}

CAF_TEST(member_server_rejoined_once_its_channel_is_admitted) {
  lost(scheduler, "the connection to the scheduler closed");
  sent_list to_restarted;
  auto restarted = reached_again(node, to_restarted);
  caf::anon_send(node, channel_up_atom::value, restarted, std::string("scheduler"));
  settle();
  advance_time(options.scheduler_timeout);
  settle();
  CAF_CHECK(!result->answered);
  finished_over(restarted);
}

// A restarted scheduler that is lost before the rejoin is sent (or one reached while it was
// dying): the node retries within the same timeout, and rejoins the next one.
CAF_TEST(member_server_rejoins_after_a_second_loss_within_the_timeout) {
  lost(scheduler, "the connection to the scheduler closed");
  sent_list to_dying;
  auto dying = reached_again(node, to_dying);
  CAF_CHECK(last_of<join_message>(to_dying) != nullptr);
  lost(dying, "the connection closed");
  CAF_CHECK(!result->answered);
  sent_list to_restarted;
  auto restarted = reached_again(node, to_restarted);
  const auto* join = last_of<join_message>(to_restarted);
  CAF_REQUIRE(join != nullptr);
  CAF_CHECK(join->rejoin.has_value());
  CAF_CHECK(!result->answered);
  finished_over(restarted);
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

// A server that stops at once when it loses its scheduler (--scheduler-timeout 0).
struct impatient_server_fixture : server_member_fixture {
  impatient_server_fixture() : server_member_fixture(nullptr, std::chrono::milliseconds(0)) {}
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(impatient_server_tests, impatient_server_fixture)

// The scheduler's channel is lost, then an actor of the part ends (its echo): the node ends
// naming the loss, and the later end changes nothing.
CAF_TEST(member_part_down_after_a_lost_channel_keeps_the_loss) {
  lost(scheduler, "the connection to the scheduler closed");
  caf::anon_send_exit(shards->find<remote_interface::push_target>(0), caf::exit_reason::kill);
  settle();
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost the scheduler at"));
  CAF_CHECK(!contains(result->error, "terminated"));
}

// A node that ends still hears its channels close: their channels find it where they always did
// (were the registry cleared with the part, a server's channels from workers could not say they
// closed, and a failing server would wait the whole grace).
CAF_TEST(member_server_still_hears_its_channels_while_it_ends) {
  sent_list to_worker;
  auto worker = channel(to_worker);
  caf::anon_send(node, channel_up_atom::value, worker, std::string("worker_0"));
  settle();
  lost(scheduler, "the connection to the scheduler closed");
  CAF_CHECK(!result->answered);
  auto inbox = shards->find<remote_interface::member_control>(0);
  CAF_REQUIRE(inbox != nullptr);
  caf::anon_send(inbox, channel_lost_atom::value, worker, caf::error{});
  settle();
  CAF_CHECK(result->answered);
}

// A worker frozen (its channel neither talks nor closes) holds a failing server at most the grace.
CAF_TEST(member_server_ends_after_the_grace_when_a_worker_does_not_close) {
  sent_list to_worker;
  auto worker = channel(to_worker);
  caf::anon_send(node, channel_up_atom::value, worker, std::string("worker_0"));
  settle();
  lost(scheduler, "the connection to the scheduler closed");
  CAF_REQUIRE(last_of<shutdown_message>(to_worker) != nullptr);
  CAF_CHECK(!result->answered);
  advance_time(options.clocks().goodbye_grace());
  settle();
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost the scheduler at"));
}

// With no scheduler timeout a lost scheduler ends the node at once, naming it.
CAF_TEST(member_server_without_a_scheduler_timeout_stops_at_once) {
  lost(scheduler, "the connection to the scheduler closed");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost the scheduler at"));
  CAF_CHECK(!logged("training goes on here"));
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

// A server whose port was bound before it joined (run_member does so, so that a port in use
// ends it at once): it listens for workers on that socket.
struct bound_server_fixture : server_member_fixture {
  bound_server_fixture() : server_member_fixture(bind_any()) {}
  static std::shared_ptr<listening_socket> bind_any() {
    auto bound = listening_socket::bind("127.0.0.1", 0);
    if (!bound)
      throw std::runtime_error(error_text(bound.error()));
    return std::move(*bound);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(bound_server_tests, bound_server_fixture)

CAF_TEST(member_server_listens_on_the_socket_bound_before_joining) {
  const auto* ready = last_of<ready_message>(to_scheduler);
  CAF_REQUIRE(ready != nullptr);
  CAF_CHECK_NOT_EQUAL(bound_port, 0);
  CAF_CHECK_EQUAL(ready->port, bound_port);
}

CAF_TEST_FIXTURE_SCOPE_END()
