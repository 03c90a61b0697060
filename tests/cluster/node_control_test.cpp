// The scheduler and member nodes' state machines, message by message, on CAF's deterministic
// test coordinator (caf/test/dsl.hpp): no sockets, no threads, no clock but the coordinator's.
// Channels are stand-ins that record what a node sends them (send_atom, wire_message); what a
// link would hand its node (node_control.hpp) the test sends itself, in the order a case needs,
// so every interleaving that real links can produce is reachable, and reproducible.
//
// Built on CAF's own test framework (its test coordinator needs it); ctest runs each case
// alone (tests/cluster/CMakeLists.txt).
#define CAF_SUITE node_control

#include <caf/test/dsl.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <map>
#include <memory>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/job_transfer.hpp>
#include <troupe/graph/placement.hpp>
#include <troupe/graph/value_hash.hpp>

#include "cluster/frame_socket.hpp"
#include "cluster/member_node.hpp"
#include "cluster/scheduler_state.hpp"
#include "tests/actors/synthetic_job.hpp"

using namespace troupe;

namespace {

using sent_list = std::shared_ptr<std::vector<wire_message>>;

// A channel: records what its node sends through it (a node makes no requests of it).
channel_actor::behavior_type fake_link(channel_actor::pointer, sent_list sent) {
  return {
    [=](call_atom, wire_message&, const deadline&) -> caf::result<wire_message> {
      return make_error(errc::bad_request, "the test's channel takes no requests");
    },
    [=](send_atom, wire_message& m) { sent->push_back(std::move(m)); },
    [=](stats_atom) { return link_traffic{}; },
    [=](plan_atom, std::uint64_t, wire_keys&) {},
  };
}

// A channel that also takes requests (a compute proxy's phases): records them and answers
// each with an empty phase report, or, once `*down` is set, fails it as a link that ended does
// (errc::peer_down).
channel_actor::behavior_type answering_link(channel_actor::pointer, sent_list sent,
                                            std::shared_ptr<bool> down) {
  return {
    [=](call_atom, wire_message& m, const deadline&) -> caf::result<wire_message> {
      const auto* pull = std::get_if<pull_message>(&m);
      const auto shard = pull ? pull->shard : 0;
      sent->push_back(std::move(m));
      if (*down)
        return make_error(errc::peer_down, "the connection closed");
      if (pull) // a shard's weights (none: the test counts the pulls)
        return wire_message{weights_message{0, shard, weight_set{}}};
      return wire_message{report_message{0, phase_report{}}};
    },
    [=](send_atom, wire_message& m) { sent->push_back(std::move(m)); },
    [=](stats_atom) { return link_traffic{}; },
    [=](plan_atom, std::uint64_t, wire_keys&) {},
  };
}

// Asks a compute (the coordinator's handle: a relay) to train `epoch`; records the answer.
struct phase_answer {
  bool answered = false;
  std::string error;
};

caf::behavior ask_train(caf::event_based_actor* self, compute_actor compute, std::int64_t epoch,
                        std::shared_ptr<phase_answer> out) {
  const auto due = deadline::after(std::chrono::hours(1));
  self->request(compute, caf::infinite, train_atom::value, epoch, due)
    .then([=](phase_report&) { out->answered = true; },
          [=](caf::error& err) {
            out->answered = true;
            out->error =
              err.category() == error_category ? error_text(err) : std::string("caf error");
          });
  return {[](const std::string&) {}};
}

// The host's view of a run request: what came back, if anything.
struct outcome {
  bool answered = false;
  bool ok = false;
  std::string error;
};

template <class Result>
caf::behavior host(caf::event_based_actor* self, caf::actor node, std::shared_ptr<outcome> out) {
  self->request(node, caf::infinite, run_atom::value)
    .then([=](Result&) { out->answered = out->ok = true; },
          [=](caf::error& err) {
            out->answered = true;
            out->error =
              err.category() == error_category ? error_text(err) : std::string("caf error");
          });
  return {[](const std::string&) {}};
}

// The training session: answers run when the test says so (end_atom: the run finished, or
// failed with the error given).
using end_atom = caf::atom_constant<caf::atom("testend")>;
using fake_session_actor =
  training_session_actor::extend<caf::reacts_to<end_atom>, caf::reacts_to<end_atom, caf::error>>;

struct session_probe {
  int runs = 0;
  caf::typed_response_promise<training_result> promise;
};

fake_session_actor::behavior_type fake_session(fake_session_actor::pointer self,
                                               std::shared_ptr<session_probe> probe) {
  return {
    [=](run_atom) -> caf::result<training_result> {
      ++probe->runs;
      probe->promise = self->make_response_promise<training_result>();
      return probe->promise;
    },
    [=](end_atom) { probe->promise.deliver(training_result{}); },
    [=](end_atom, caf::error& err) { probe->promise.deliver(std::move(err)); },
  };
}

// The metrics actor: records the traffic annotations.
struct metrics_probe {
  std::vector<std::pair<std::int64_t, std::string>> traffic; // (epoch, line)
  int reports = 0;
};

metrics_actor::behavior_type fake_metrics(metrics_actor::pointer,
                                          std::shared_ptr<metrics_probe> probe) {
  return {
    [=](const batch_report&) {},
    [=](const phase_report&) { ++probe->reports; },
    [=](flush_atom) { return true; },
    [=](annotate_atom, std::int64_t epoch, const std::string&, const std::string&,
        const std::string& line) { probe->traffic.emplace_back(epoch, line); },
  };
}

// The coordinator's side of the gate between epochs: asks (epoch_done_atom, epoch, due) and
// records the answer, and how many traffic annotations the metrics actor had by then.
struct gate_answer {
  bool answered = false;
  bool yes = false;
  std::string error; // the failure's text, when it failed
  std::size_t annotations_before = 0;
};

caf::behavior ask_gate(caf::event_based_actor* self, epoch_gate_actor gate, std::int64_t epoch,
                       deadline due, std::shared_ptr<metrics_probe> metrics,
                       std::shared_ptr<gate_answer> out) {
  self->request(gate, caf::infinite, epoch_done_atom::value, epoch, due)
    .then(
      [=](bool yes) {
        out->answered = true;
        out->yes = yes;
        out->annotations_before = metrics->traffic.size();
      },
      [=](caf::error& err) {
        out->answered = true;
        out->error = err.category() == error_category ? error_text(err) : std::string("caf error");
      });
  return {[](const std::string&) {}};
}

training_job cluster_job(int servers, int workers) {
  auto job = test::synthetic_job("mlp", 64);
  job.topology.workers = workers;
  job.nodes.servers = servers;
  job.nodes.workers = workers;
  return job;
}

const data_facts facts{{1, 28, 28}, 10, 64, 64};

cluster_node_options node_options(node_kind role, std::shared_ptr<std::vector<std::string>> lines) {
  cluster_node_options o{cluster_secret(std::string(32, 's'))};
  o.role = role;
  o.log = [lines](const std::string& line) { lines->push_back(line); };
  return o;
}

template <class T> const T* last_of(const sent_list& sent) {
  for (auto it = sent->rbegin(); it != sent->rend(); ++it)
    if (auto* m = std::get_if<T>(&*it))
      return m;
  return nullptr;
}

template <class T> int count_of(const sent_list& sent) {
  return static_cast<int>(std::count_if(sent->begin(), sent->end(),
                                        [](auto& m) { return std::holds_alternative<T>(m); }));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct node_fixture : test_coordinator_fixture<> {
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
  std::vector<caf::actor> spawned;

  ~node_fixture() override {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::kill);
  }

  channel_actor link(sent_list& sent) {
    sent = std::make_shared<std::vector<wire_message>>();
    auto a = sys.spawn(fake_link, sent);
    spawned.push_back(caf::actor_cast<caf::actor>(a));
    return a;
  }

  // A scheduler that member `member` reaches again after losing the first (a restarted one):
  // it (re)joins over the link, whose frames land in `sent`.
  channel_actor reached_again(const member_node_actor& member, sent_list& sent) {
    auto l = link(sent);
    caf::anon_send(member, scheduler_link_atom::value, l);
    settle();
    return l;
  }

  bool logged(const std::string& part) const {
    return std::any_of(lines->begin(), lines->end(), [&](auto& l) { return contains(l, part); });
  }

  void settle() { consume_messages(); }
};

// A scheduler of `servers` + `workers` nodes, with a fake session and metrics actor.
struct scheduler_fixture : node_fixture {
  training_job job;
  placement_plan plan;
  scheduler_node_actor node;
  std::shared_ptr<session_probe> session = std::make_shared<session_probe>();
  fake_session_actor session_actor;
  std::shared_ptr<metrics_probe> metrics = std::make_shared<metrics_probe>();
  std::shared_ptr<outcome> result = std::make_shared<outcome>();
  cluster_node_options options = node_options(node_kind::scheduler, lines);

  session_sinks sinks; // what the scheduler gave its session (the relays, with adopt)

  void start(int servers = 1, int workers = 2, bool continue_on_loss = false, bool adopt = false,
             int replicas = 1) {
    job = cluster_job(servers, workers);
    job.nodes.continue_on_worker_loss = continue_on_loss;
    job.nodes.adopt_on_worker_loss = adopt;
    job.nodes.replicas = replicas;
    if (continue_on_loss)
      use_preset(job.topology, topology_kind::async);
    plan = plan_placement(job, facts);
    auto sink = sys.spawn(fake_metrics, metrics);
    spawned.push_back(caf::actor_cast<caf::actor>(sink));
    scheduler_setup setup{options, job, session_output{}, plan, facts, sink, nullptr, nullptr};
    setup.listen = false;
    auto probe = session;
    setup.spawn_session = [this, probe](caf::actor_system& system, const training_job&,
                                        session_sinks given) {
      sinks = std::move(given);
      auto s = system.spawn(fake_session, probe);
      spawned.push_back(caf::actor_cast<caf::actor>(s));
      session_actor = s;
      return training_session_actor{s};
    };
    node = spawn_scheduler_node(sys, std::move(setup));
    spawned.push_back(caf::actor_cast<caf::actor>(node));
    spawned.push_back(sys.spawn(host<training_result>, caf::actor_cast<caf::actor>(node), result));
    settle();
  }

  void join(const channel_actor& l, node_kind role, int rank = -1, std::uint32_t pid = 1) {
    caf::anon_send(node, join_atom::value, l, join_message{role, "10.0.0.1", 0, pid, rank, 0});
    settle();
  }
  void ready(const channel_actor& l, std::uint32_t plan_node, std::uint16_t port = 0) {
    caf::anon_send(node, ready_atom::value, l, ready_message{plan_node, port});
    settle();
  }
  void lost(const channel_actor& l, const std::string& why) {
    caf::anon_send(node, link_lost_atom::value, l,
                   why.empty() ? caf::error{} : make_error(errc::peer_down, why));
    settle();
  }

  // The coordinator says epoch `epoch` trained (a deadline of `limit`); returns its answer.
  std::shared_ptr<gate_answer> epoch_done(std::int64_t epoch,
                                          caf::timespan limit = std::chrono::hours(1)) {
    auto out = std::make_shared<gate_answer>();
    spawned.push_back(
      sys.spawn(ask_gate, epoch_gate_actor{node}, epoch, deadline::after(limit), metrics, out));
    settle();
    return out;
  }
  // A member's traffic answer: `sent` bytes (its total since it started) to one peer.
  void traffic(const channel_actor& l, std::int64_t epoch, std::uint64_t sent = 0) {
    traffic_message t{epoch, {}};
    if (sent > 0)
      t.peers.push_back(peer_traffic{"peer", {0}, {sent}});
    caf::anon_send(node, traffic_atom::value, l, std::move(t));
    settle();
  }

  // The session's run ends: with `err`, or finished when it is empty.
  void session_ends(const caf::error& err = caf::error{}) {
    if (err)
      caf::anon_send(session_actor, end_atom::value, err);
    else
      caf::anon_send(session_actor, end_atom::value);
    settle();
  }

  // A link that answers the requests made over it (answering_link).
  std::map<caf::actor_addr, std::shared_ptr<bool>> down; // by answering link: it fails requests
  channel_actor holding(sent_list& sent) {
    sent = std::make_shared<std::vector<wire_message>>();
    auto is_down = std::make_shared<bool>(false);
    auto a = sys.spawn(answering_link, sent, is_down);
    down[a.address()] = is_down;
    spawned.push_back(caf::actor_cast<caf::actor>(a));
    return a;
  }
  // Plan node of the server or worker of rank `rank`, and the first plan actor of a role on
  // a plan node (its compute, its shard).
  int plan_node(node_kind kind, int rank) const {
    for (std::size_t n = 0; n < plan.nodes.size(); ++n)
      if (plan.nodes[n].kind == kind && plan.nodes[n].rank == rank)
        return static_cast<int>(n);
    return -1;
  }
  std::size_t first_actor(plan_role role, int on_node) const {
    for (auto a : plan.actors_of(role))
      if (plan.actors[a].node == on_node)
        return a;
    return plan.actors.size();
  }
  // The worker's link fails what is asked over it from now on, and the scheduler hears it ended.
  void killed(const channel_actor& l) {
    *down.at(l.address()) = true;
    lost(l, "the connection closed");
  }

  // Joins one server and `workers.size()` workers on the links given, makes them ready.
  void to_training(const channel_actor& server, sent_list& server_sent,
                   const std::vector<channel_actor>& workers,
                   const std::vector<sent_list>& worker_sent) {
    join(server, node_kind::server, -1, 100);
    for (std::size_t w = 0; w < workers.size(); ++w)
      join(workers[w], node_kind::worker, static_cast<int>(w), 200 + static_cast<std::uint32_t>(w));
    ready(server, last_of<assignment_message>(server_sent)->node, 4000);
    for (std::size_t w = 0; w < workers.size(); ++w)
      ready(workers[w], last_of<assignment_message>(worker_sent[w])->node);
    // The relays the scheduler made end with the test (the scheduler's own end only asks them to).
    for (auto c : plan.actors_of(plan_role::compute))
      spawned.push_back(caf::actor_cast<caf::actor>(sinks.node.remote.compute(c)));
  }

  // Joins one server and two workers, makes them ready: the session trains.
  struct members {
    channel_actor server, w0, w1;
    sent_list server_sent, w0_sent, w1_sent;
  };
  members to_training() {
    members m;
    m.server = link(m.server_sent);
    m.w0 = link(m.w0_sent);
    m.w1 = link(m.w1_sent);
    join(m.server, node_kind::server, -1, 100);
    join(m.w0, node_kind::worker, -1, 200);
    join(m.w1, node_kind::worker, -1, 201);
    ready(m.server, last_of<assignment_message>(m.server_sent)->node, 4000);
    ready(m.w0, last_of<assignment_message>(m.w0_sent)->node);
    ready(m.w1, last_of<assignment_message>(m.w1_sent)->node);
    return m;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(scheduler_node_tests, scheduler_fixture)

// Every order of one server's and two workers' joins: nobody is assigned before all joined;
// then the server alone; the workers once it is ready, with its endpoint; ranks in join order.
CAF_TEST(joins_in_every_order) {
  std::vector<int> order{0, 1, 2}; // 0: the server, 1 and 2: workers
  int orders = 0;
  do {
    auto out = std::make_unique<scheduler_fixture>();
    out->start();
    std::vector<channel_actor> links(3);
    std::vector<sent_list> sent(3);
    for (int i = 0; i < 3; ++i)
      links[i] = out->link(sent[i]);
    std::vector<int> worker_order;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const int who = order[k];
      for (auto& s : sent)
        CAF_CHECK_EQUAL(count_of<assignment_message>(s), 0);
      out->join(links[who], who == 0 ? node_kind::server : node_kind::worker, -1, 10 + who);
      if (who != 0)
        worker_order.push_back(who);
    }
    CAF_REQUIRE_EQUAL(count_of<assignment_message>(sent[0]), 1);
    CAF_CHECK_EQUAL(count_of<assignment_message>(sent[1]) + count_of<assignment_message>(sent[2]),
                    0);
    const auto server_node = last_of<assignment_message>(sent[0])->node;
    CAF_CHECK(out->plan.nodes.at(server_node).kind == node_kind::server);
    out->ready(links[0], server_node, 4000);
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
      out->ready(links[static_cast<std::size_t>(worker_order[static_cast<std::size_t>(w)])],
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
  auto server = link(s), w1 = link(a), w0 = link(b);
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
  auto server = link(s), first = link(a), second = link(b), third = link(c);
  join(server, node_kind::server);
  join(first, node_kind::worker, 1, 300);
  join(second, node_kind::worker, 1, 301);
  const auto* refusal = last_of<shutdown_message>(b);
  CAF_REQUIRE(refusal != nullptr);
  CAF_CHECK(!refusal->finished);
  CAF_CHECK(contains(refusal->reason, "worker rank 1 is taken by worker 1 (pid 300"));
  CAF_CHECK(logged("refused a worker (pid 301"));
  CAF_CHECK_EQUAL(count_of<assignment_message>(s), 0);
  // A refused node is no member: its link ending loses nothing.
  lost(second, "closed");
  CAF_CHECK(!result->answered);
  join(third, node_kind::worker, 0, 302);
  CAF_CHECK_EQUAL(count_of<assignment_message>(s), 1);
  // The same link joining twice is refused too.
  join(first, node_kind::worker, -1, 300);
  CAF_CHECK(last_of<shutdown_message>(a) != nullptr);
}

// A member lost before the run started ends it, naming the node; the others are told why, and
// the answer comes once their links have closed.
CAF_TEST(peer_lost_during_join) {
  start();
  sent_list s, a;
  auto server = link(s), w0 = link(a);
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
  session_ends(make_error(errc::peer_down, "worker_1: the link to server_0 closed"));
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
  session_ends(make_error(errc::peer_down, "worker_1: the link to server_0 closed"));
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
// server's plan node) before the scheduler's own link to the server ends: the run names the
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
  session_ends(make_error(errc::peer_down, "worker_0: the link to server_0 closed"));
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

// Stragglers (issue 20): the members' barriers say, by source node, how long they waited for
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
// links have closed, and no deadline left behind releases anything.
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
  session_ends(make_error(errc::peer_down, "worker_1: the link to server_0 closed"));
  CAF_REQUIRE(gate->answered);
  CAF_CHECK(!gate->yes);
  CAF_CHECK(contains(gate->error, "the link to server_0 closed"));
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK_EQUAL(count_of<shutdown_message>(m.w0_sent), 0); // the cause is not known yet
  traffic(m.w0, 0);
  CAF_CHECK(
    logged("scheduler: dropped worker 0 (pid 200 on 10.0.0.1)'s traffic answer for epoch 0: "
           "no epoch's traffic is gathered"));
  auto after = epoch_done(1);
  CAF_REQUIRE(after->answered);
  CAF_CHECK(contains(after->error, "the run is ending: worker_1: the link to server_0 closed"));
  CAF_CHECK_EQUAL(count_of<traffic_query_message>(m.w0_sent), 1);
  lost(m.w1, "the connection to worker 1 closed");
  CAF_REQUIRE(last_of<shutdown_message>(m.w0_sent) != nullptr);
  lost(m.w0, "");
  lost(m.server, "");
  CAF_REQUIRE(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 201"));
  CAF_CHECK_EQUAL(metrics->traffic.size(), 1u);
}

// A member's link is lost while the epoch's traffic is gathered, and the job does not go on
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

// Traffic answers from nodes that were not asked are dropped, each named in the log: a link
// that never joined, a worker the run went on without (on_worker_loss = continue), an epoch
// that is not being gathered. The question still waits for the members it asked, and its
// figures hold only theirs.
CAF_TEST(traffic_from_a_node_that_was_not_asked_is_dropped) {
  start(1, 2, true);
  auto m = to_training();
  lost(m.w1, "no frame for 5000 ms"); // the run goes on without worker 1
  CAF_REQUIRE(!result->answered);
  sent_list stranger_sent;
  auto stranger = link(stranger_sent);
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
  auto server = link(s);
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
  auto server = link(s), w0 = link(a);
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
  auto server = link(s), w0 = link(a), w1 = link(b);
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
  auto server = link(server_sent);
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
  CAF_CHECK_EQUAL(again->worker, static_cast<std::uint32_t>(plan.actors[compute].worker));
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
    logged("worker 1 (pid 201 on 10.0.0.1) adopts compute_0, compute_2 of worker_0, worker_2"));
}

// A second worker lost while an adoption is under way stops the run naming both.
CAF_TEST(second_loss_during_an_adoption_stops_naming_both) {
  start(1, 3, false, true);
  sent_list server_sent;
  std::vector<sent_list> ws(3);
  auto server = link(server_sent);
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

namespace {

// A worker node, before its assignment (spawning a part needs data and threads).
struct member_fixture : node_fixture {
  member_node_actor node;
  std::shared_ptr<outcome> result = std::make_shared<outcome>();
  std::shared_ptr<traffic_registry> traffic = std::make_shared<traffic_registry>();
  cluster_node_options options = node_options(node_kind::worker, lines);
  channel_actor scheduler;
  sent_list to_scheduler;

  explicit member_fixture(std::chrono::milliseconds scheduler_timeout = std::chrono::seconds(30)) {
    options.scheduler_timeout = scheduler_timeout;
    node = spawn_member_node(sys, options, std::make_shared<serving_registry>(), traffic, false);
    spawned.push_back(caf::actor_cast<caf::actor>(node));
    spawned.push_back(sys.spawn(host<bool>, caf::actor_cast<caf::actor>(node), result));
    scheduler = link(to_scheduler);
    caf::anon_send(node, scheduler_link_atom::value, scheduler);
    settle();
  }
  void lost(const channel_actor& l, const std::string& why) {
    caf::anon_send(node, link_lost_atom::value, l,
                   why.empty() ? caf::error{} : make_error(errc::peer_down, why));
    settle();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(member_node_tests, member_fixture)

// An adopt from another link is ignored; one from the scheduler before the node runs its own
// part is refused, and the node ends naming why (the scheduler adopts only with running workers).
CAF_TEST(member_refuses_an_adopt_before_it_runs) {
  sent_list other_sent;
  auto other = link(other_sent);
  caf::anon_send(node, adopt_atom::value, other, adopt_message{2});
  settle();
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("ignored an adopt from a link other than the scheduler's"));
  caf::anon_send(node, adopt_atom::value, scheduler, adopt_message{2});
  settle();
  CAF_CHECK(contains(last_of<shutdown_message>(to_scheduler)->reason,
                     "cannot adopt as the scheduler asked: this node is no running worker"));
}

// A promote from another link is ignored; one from the scheduler before the node runs (or in
// a run without replicas) is refused, and the node ends naming why.
CAF_TEST(member_refuses_a_promote_before_it_runs) {
  sent_list other_sent;
  auto other = link(other_sent);
  caf::anon_send(node, promote_atom::value, other, promote_message{1, 2});
  settle();
  CAF_CHECK(!result->answered);
  CAF_CHECK(logged("ignored a promote from a link other than the scheduler's"));
  caf::anon_send(node, promote_atom::value, scheduler, promote_message{1, 2});
  settle();
  CAF_CHECK(contains(
    last_of<shutdown_message>(to_scheduler)->reason,
    "the scheduler asked for a promotion this node cannot take (replicas 1, nodes 1 and 2)"));
}

CAF_TEST(member_joins_on_its_scheduler_link) {
  const auto* join = last_of<join_message>(to_scheduler);
  CAF_REQUIRE(join != nullptr);
  CAF_CHECK(join->role == node_kind::worker);
  CAF_CHECK_EQUAL(join->rank, -1);
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

// The scheduler's goodbye says why; its link's end then ends the node with that reason, or
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
// scheduler's reason, not its own echo of it (found by scripts/chaos.py).
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

// Only the scheduler's link may assign: an assignment from another link is ignored.
CAF_TEST(member_ignores_an_assignment_from_another_link) {
  sent_list other_sent;
  auto other = link(other_sent);
  assignment_message a;
  a.job = {'x', 'y'};
  caf::anon_send(node, assignment_atom::value, other, a);
  settle();
  CAF_CHECK(logged("ignored an assignment from a link other than the scheduler's"));
  CAF_CHECK_EQUAL(count_of<shutdown_message>(to_scheduler), 0);
  CAF_CHECK(!result->answered);
}

// The answer names the epoch asked and carries what every link of the node counted so far.
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

// Only the scheduler asks for traffic: a query on another link is named and not answered.
CAF_TEST(member_ignores_a_traffic_query_from_another_link) {
  sent_list other_sent;
  auto other = link(other_sent);
  caf::anon_send(node, traffic_query_atom::value, other, traffic_query_message{3});
  settle();
  CAF_CHECK(logged("ignored a traffic query from a link other than the scheduler's"));
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
  cluster_node_options options = node_options(node_kind::worker, lines);
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
  cluster_node_options options = node_options(node_kind::server, lines);
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
    scheduler = link(to_scheduler);
    caf::anon_send(node, scheduler_link_atom::value, scheduler);
    settle();
    caf::anon_send(node, assignment_atom::value, scheduler, assignment());
    settle();
  }
  ~server_member_fixture() override {
    // A node that still runs ends as the scheduler ends a run: its part goes with it.
    caf::anon_send(node, goodbye_atom::value, scheduler,
                   shutdown_message{"the run finished", true, -1});
    caf::anon_send(node, link_lost_atom::value, scheduler, caf::error{});
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
    caf::anon_send(node, link_lost_atom::value, l,
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

// A member spawned scheduled, as in these tests, spawns its part scheduled too, checkpoint
// part included: on a thread of its own that actor raced the deterministic coordinator, and
// about one run in fifty of member_server_tells_linked_workers_why_the_run_failed lost the
// node's last message (CI, 2026-11-29).
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

// A finished run: the workers still linked to this server hear it say so on their links
// (rather than a closed connection when its listener goes), and the server ends once those
// links closed.
CAF_TEST(member_server_says_goodbye_to_linked_workers_when_the_run_finished) {
  sent_list to_worker;
  auto worker = link(to_worker);
  caf::anon_send(node, link_up_atom::value, worker, std::string("worker_0"));
  settle();
  caf::anon_send(node, goodbye_atom::value, scheduler,
                 shutdown_message{"the run finished", true, -1});
  lost(scheduler, "");
  const auto* bye = last_of<shutdown_message>(to_worker);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(bye->finished);
  CAF_CHECK(!result->answered); // until the worker's link closed
  lost(worker, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(result->ok);
}

// A failed run: the workers linked here hear why from this server too, and it ends once their
// links closed. (Found by scripts/chaos.py: this server closed their links without a word, and
// a worker that read the close before the scheduler's goodbye named this server as the node
// lost, not the one the scheduler lost.)
CAF_TEST(member_server_tells_linked_workers_why_the_run_failed) {
  sent_list to_worker;
  auto worker = link(to_worker);
  caf::anon_send(node, link_up_atom::value, worker, std::string("worker_0"));
  settle();
  caf::anon_send(node, goodbye_atom::value, scheduler,
                 shutdown_message{"scheduler: lost worker 1 (pid 9 from 10.0.0.3)", false, -1});
  lost(scheduler, "the peer shut down: scheduler: lost worker 1 (pid 9 from 10.0.0.3)");
  const auto* bye = last_of<shutdown_message>(to_worker);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(!bye->finished);
  CAF_CHECK(contains(bye->reason, "lost worker 1 (pid 9 from 10.0.0.3)"));
  CAF_CHECK(!result->answered); // until the worker's link closed
  lost(worker, "");
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost worker 1 (pid 9 from 10.0.0.3)"));
}

// The scheduler's link is lost in training: the server keeps its part (its shards still
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

// A rejoin over a link that is never admitted (a frozen scheduler's port still takes
// connections) does not end the absence: at the timeout the node stops. Once the link is
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

CAF_TEST(member_server_rejoined_once_its_link_is_admitted) {
  lost(scheduler, "the connection to the scheduler closed");
  sent_list to_restarted;
  auto restarted = reached_again(node, to_restarted);
  caf::anon_send(node, link_up_atom::value, restarted, std::string("scheduler"));
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

// The scheduler's link is lost, then an actor of the part ends (its echo): the node ends
// naming the loss, and the later end changes nothing.
CAF_TEST(member_part_down_after_a_lost_link_keeps_the_loss) {
  lost(scheduler, "the connection to the scheduler closed");
  caf::anon_send_exit(shards->find<remote_interface::push_target>(0), caf::exit_reason::kill);
  settle();
  CAF_CHECK(result->answered);
  CAF_CHECK(contains(result->error, "lost the scheduler at"));
  CAF_CHECK(!contains(result->error, "terminated"));
}

// A node that ends still hears its links close: their channels find it where they always did
// (found by scripts/chaos.py: the registry was cleared with the part, so a server's links from
// workers could not say they closed and a failing server waited the whole grace).
CAF_TEST(member_server_still_hears_its_links_while_it_ends) {
  sent_list to_worker;
  auto worker = link(to_worker);
  caf::anon_send(node, link_up_atom::value, worker, std::string("worker_0"));
  settle();
  lost(scheduler, "the connection to the scheduler closed");
  CAF_CHECK(!result->answered);
  auto inbox = shards->find<remote_interface::member_control>(0);
  CAF_REQUIRE(inbox != nullptr);
  caf::anon_send(inbox, link_lost_atom::value, worker, caf::error{});
  settle();
  CAF_CHECK(result->answered);
}

// A worker frozen (its link neither talks nor closes) holds a failing server at most the grace.
CAF_TEST(member_server_ends_after_the_grace_when_a_worker_does_not_close) {
  sent_list to_worker;
  auto worker = link(to_worker);
  caf::anon_send(node, link_up_atom::value, worker, std::string("worker_0"));
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

namespace {

// Pulls the weights through `target` (the session's handle on a shard: a relay with
// replicas); records the answer.
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

// Two servers and two workers of a job with replicas = 2, training; the servers joined with
// the ports they bound.
struct replicated : scheduler_fixture {
  std::vector<sent_list> ss{2}, ws{2};
  std::vector<channel_actor> servers, workers;
  void to_replicated_training() {
    start(2, 2, false, false, 2);
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

// replicas = 2: the servers' assignments say where every server listens (from their joins);
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
                   + plan.actors[shard].name + "): promoting them (replicas = 2)"));
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

// Without replicas a lost server stops the run, naming it; nothing is promoted.
CAF_TEST(lost_server_without_replicas_stops) {
  start(2, 2);
  sent_list s0, s1, w0, w1;
  std::vector<channel_actor> servers{link(s0), link(s1)};
  std::vector<channel_actor> workers{link(w0), link(w1)};
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

// With replicas a server that said no port when it joined cannot be linked to by the others:
// the scheduler ends the run naming it before any server is assigned.
CAF_TEST(replicas_need_each_servers_port_at_join) {
  start(2, 2, false, false, 2);
  sent_list s0, s1, w0, w1;
  auto a = link(s0), b = link(s1);
  join(a, node_kind::server, 0, 100); // port 0
  caf::anon_send(node, join_atom::value, b,
                 join_message{node_kind::server, "10.0.0.1", 4001, 101, 1, 0});
  settle();
  join(link(w0), node_kind::worker, 0, 200);
  join(link(w1), node_kind::worker, 1, 201);
  CAF_CHECK_EQUAL(count_of<assignment_message>(s0), 0);
  CAF_CHECK_EQUAL(count_of<assignment_message>(s1), 0);
  CAF_CHECK(logged("server 0 (pid 100 on 10.0.0.1) said no port when it joined"));
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST_FIXTURE_SCOPE(spare_tests, scheduler_fixture)

// A spare worker (join_message::spare) joins beside the plan's workers: it is not counted, gets
// no assignment while the run starts, and its loss before a worker's costs nothing. When a
// worker is lost in training (adopt), the spare gets the lost node's assignment with `adopt`,
// and the lost compute's relay is re-pointed at the spare's link once it says ready.
CAF_TEST(a_spare_takes_a_lost_workers_node) {
  start(1, 2, false, true);
  sent_list server_sent, spare_sent, idle_sent;
  std::vector<sent_list> ws(2);
  auto server = link(server_sent);
  std::vector<channel_actor> workers{holding(ws[0]), holding(ws[1])};
  auto spare = holding(spare_sent);
  auto idle = link(idle_sent);
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
// train, with each member's link serving its node.
CAF_TEST(resumed_scheduler_goes_on_once_every_plan_node_rejoined) {
  options.resume = true;
  start(1, 2);
  sent_list server_sent;
  std::vector<sent_list> ws(2);
  auto server = link(server_sent);
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
  // The session's stand-in for worker 1's compute asks over worker 1's link.
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
  std::vector<channel_actor> links{link(sent[0]), link(sent[1]), link(sent[2])};
  const std::vector<std::uint32_t> nodes{
    static_cast<std::uint32_t>(plan_node(node_kind::server, 0)),
    static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)),
    static_cast<std::uint32_t>(plan_node(node_kind::worker, 1))};
  for (std::size_t i = 0; i < links.size(); ++i) {
    auto j = rejoin_of(i == 0 ? node_kind::server : node_kind::worker, nodes[i],
                       100 + static_cast<std::uint32_t>(i), hash, i == 0 ? -1 : 1,
                       i == 0 ? 100 : -1, i == 0 ? 4000 : 0);
    j.rejoin->counted = traffic_message{0, {peer_traffic{"peer", {0}, {1000}}}};
    caf::anon_send(node, join_atom::value, links[i], j);
  }
  settle();
  CAF_REQUIRE_EQUAL(session->runs, 1);
  auto gate = epoch_done(1);
  for (auto& l : links)
    traffic(l, 1, 1500);
  CAF_REQUIRE(gate->answered);
  CAF_REQUIRE_EQUAL(metrics->traffic.size(), 1u);
  CAF_CHECK(contains(metrics->traffic[0].second, "server_0 rx 0 B tx 500 B"));
  CAF_CHECK(contains(metrics->traffic[0].second, "worker_1 rx 0 B tx 500 B"));
}

// A member that had adopted a lost worker's computes before the scheduler was lost rejoins
// holding that node: the session reaches the adopted computes over the adopter's link.
CAF_TEST(resumed_scheduler_reaches_an_adopted_node_through_its_adopter) {
  options.resume = true;
  start(1, 2, false, true);
  sent_list server_sent, w0_sent;
  auto server = link(server_sent);
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

// What a restarted scheduler refuses, each naming why on the member's link: a first join (not
// a spare's), a node of another role, a node back already, another job; a scheduler not
// started with --resume refuses a rejoin.
CAF_TEST(resumed_scheduler_refuses_what_cannot_rejoin) {
  options.resume = true;
  start(1, 2);
  const auto hash = job_hash_without_counts(job);
  const auto w0_node = static_cast<std::uint32_t>(plan_node(node_kind::worker, 0));
  auto refusal = [&](join_message j) {
    sent_list sent;
    auto l = link(sent);
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
  auto server = link(server_sent);
  join(server, node_kind::server, 0, 100);
  CAF_CHECK(logged("the run starts afresh"));
  caf::anon_send(node, join_atom::value, link(late_sent),
                 rejoin_of(node_kind::worker,
                           static_cast<std::uint32_t>(plan_node(node_kind::worker, 0)), 300,
                           job_hash_without_counts(job), 0, -1));
  settle();
  const auto* bye = last_of<shutdown_message>(late_sent);
  CAF_REQUIRE(bye != nullptr);
  CAF_CHECK(contains(bye->reason, "starts the run afresh"));
  join(link(w0_sent), node_kind::worker, 0, 200);
  join(link(w1_sent), node_kind::worker, 1, 201);
  CAF_CHECK_EQUAL(count_of<assignment_message>(server_sent), 1);
  CAF_CHECK(!result->answered);
}

CAF_TEST(scheduler_not_resumed_refuses_a_rejoin) {
  start(1, 2);
  sent_list sent;
  auto l = link(sent);
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
  caf::anon_send(node, join_atom::value, link(s),
                 rejoin_of(node_kind::server,
                           static_cast<std::uint32_t>(plan_node(node_kind::server, 0)), 100, hash,
                           -1, 3, 4000));
  caf::anon_send(node, join_atom::value, link(w),
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
