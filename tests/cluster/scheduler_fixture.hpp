// node_fixture.hpp's scheduler: a scheduler of `servers` + `workers` nodes with a fake
// session and metrics actor, and the steps that bring members to each phase
// (scheduler_node_test.cpp, scheduler_recovery_test.cpp).
#pragma once

#include "tests/cluster/node_fixture.hpp"

namespace {

// A scheduler of `servers` + `workers` nodes, with a fake session and metrics actor.
struct scheduler_fixture : node_fixture {
  training_job job;
  placement_plan plan;
  scheduler_node_actor node;
  std::shared_ptr<session_probe> session = std::make_shared<session_probe>();
  fake_session_actor session_actor;
  std::shared_ptr<metrics_probe> metrics = std::make_shared<metrics_probe>();
  std::shared_ptr<outcome> result = std::make_shared<outcome>();
  scheduler_options options = scheduler_options_for(lines);
  session_output setup_output; // what the scheduler is given as its output (checkpoints...)

  session_sinks sinks; // what the scheduler gave its session (the relays, with adopt)
  int epochs = 0;      // the job's epochs, where given (> 0); else cluster_job's

  void start(int servers = 1, int workers = 2, bool continue_on_loss = false, bool adopt = false,
             int shard_backups = 0, int computes_per_worker = 1) {
    job = cluster_job(servers, workers);
    job.topology.workers = workers * computes_per_worker;
    if (epochs > 0)
      job.epochs = epochs;
    if (computes_per_worker > 1) // every compute needs a batch of the 64 examples
      job.train_batches.batch_size = 8;
    job.nodes.continue_on_worker_loss = continue_on_loss;
    job.nodes.adopt_on_worker_loss = adopt;
    job.nodes.shard_backups = shard_backups;
    if (continue_on_loss)
      use_preset(job.topology, topology_kind::async);
    plan = plan_placement(job, facts);
    auto sink = sys.spawn(fake_metrics, metrics);
    spawned.push_back(caf::actor_cast<caf::actor>(sink));
    scheduler_setup setup{options, job, setup_output, plan, facts, sink, nullptr, nullptr};
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
    caf::anon_send(node, channel_lost_atom::value, l,
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

  // A channel that answers the requests made over it (answering_channel).
  std::map<caf::actor_addr, std::shared_ptr<bool>> down; // by answering channel: it fails requests
  channel_actor holding(sent_list& sent) {
    sent = std::make_shared<std::vector<wire_message>>();
    auto is_down = std::make_shared<bool>(false);
    auto a = sys.spawn(answering_channel, sent, is_down);
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
  // The worker's channel fails what is asked over it from now on, and the scheduler hears it ended.
  void killed(const channel_actor& l) {
    *down.at(l.address()) = true;
    lost(l, "the connection closed");
  }

  // Joins one server and `workers.size()` workers on the channels given, makes them ready.
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
    m.server = channel(m.server_sent);
    m.w0 = channel(m.w0_sent);
    m.w1 = channel(m.w1_sent);
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
