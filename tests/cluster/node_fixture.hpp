// What the node state machines' message-level tests share (scheduler_node_test.cpp,
// member_node_test.cpp): channels that record what a node sends them (send_atom, wire_message),
// a host that asks a node to run and keeps its outcome, probes for the session and the
// metrics actor, a small cluster job, and node_fixture on CAF's deterministic test coordinator
// (caf/test/dsl.hpp): no sockets, no threads, no clock but the coordinator's. What a channel would
// hand its node (node_control.hpp) a test sends itself, in the order a case needs, so every
// interleaving that real channels can produce is reachable, and reproducible.
//
// Include after defining CAF_SUITE: CAF's test framework needs it first.
#pragma once

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
#include "cluster/member/member_node.hpp"
#include "cluster/scheduler/scheduler_state.hpp"
#include "tests/actors/synthetic_job.hpp"

using namespace troupe;

namespace {

using sent_list = std::shared_ptr<std::vector<wire_message>>;

// A channel: records what its node sends through it (a node makes no requests of it).
inline channel_actor::behavior_type fake_channel(channel_actor::pointer, sent_list sent) {
  return {
    [=](call_atom, wire_message&, const deadline&) -> caf::result<wire_message> {
      return make_error(errc::bad_request, "the test's channel takes no requests");
    },
    [=](send_atom, wire_message& m) { sent->push_back(std::move(m)); },
    [=](stats_atom) { return channel_traffic{}; },
    [=](plan_atom, std::uint64_t, wire_keys&) {},
  };
}

// A channel that also takes requests (a compute proxy's phases): records them and answers
// each with an empty phase report (a shard change: two shards took it), or, once `*down` is
// set, fails it as a channel that ended does (errc::peer_down).
inline channel_actor::behavior_type answering_channel(channel_actor::pointer, sent_list sent,
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
      if (std::holds_alternative<change_message>(sent->back())) // two shards took it
        return wire_message{changed_message{0, 2}};
      return wire_message{report_message{0, phase_report{}}};
    },
    [=](send_atom, wire_message& m) { sent->push_back(std::move(m)); },
    [=](stats_atom) { return channel_traffic{}; },
    [=](plan_atom, std::uint64_t, wire_keys&) {},
  };
}

// A channel that answers as answering_channel does, its computes' training phases each taking
// `step_seconds` of training.
inline channel_actor::behavior_type timed_channel(channel_actor::pointer, sent_list sent,
                                                  double step_seconds) {
  return {
    [=](call_atom, wire_message& m, const deadline&) -> caf::result<wire_message> {
      const auto* pull = std::get_if<pull_message>(&m);
      const auto shard = pull ? pull->shard : 0;
      sent->push_back(std::move(m));
      if (pull)
        return wire_message{weights_message{0, shard, weight_set{}}};
      phase_report report;
      report.step_seconds = step_seconds;
      return wire_message{report_message{0, report}};
    },
    [=](send_atom, wire_message& m) { sent->push_back(std::move(m)); },
    [=](stats_atom) { return channel_traffic{}; },
    [=](plan_atom, std::uint64_t, wire_keys&) {},
  };
}

// Asks a compute (the coordinator's handle: a relay) to train `epoch`; records the answer.
struct phase_answer {
  bool answered = false;
  std::string error;
};

inline caf::behavior ask_train(caf::event_based_actor* self, compute_actor compute,
                               std::int64_t epoch, std::shared_ptr<phase_answer> out) {
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
inline caf::behavior host(caf::event_based_actor* self, caf::actor node,
                          std::shared_ptr<outcome> out) {
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

inline fake_session_actor::behavior_type fake_session(fake_session_actor::pointer self,
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
  std::vector<std::pair<std::int64_t, std::string>> traffic;    // (epoch, line)
  std::vector<std::pair<std::string, std::string>> annotations; // (key, json)
  int reports = 0;
};

inline metrics_actor::behavior_type fake_metrics(metrics_actor::pointer,
                                                 std::shared_ptr<metrics_probe> probe) {
  return {
    [=](const batch_report&) {},
    [=](const phase_report&) { ++probe->reports; },
    [=](flush_atom) { return true; },
    [=](annotate_atom, std::int64_t epoch, const std::string& key, const std::string& json,
        const std::string& line) {
      probe->traffic.emplace_back(epoch, line);
      probe->annotations.emplace_back(key, json);
    },
  };
}

// The coordinator's side of the gate between epochs: asks (epoch_done_atom, epoch, due) and
// records the answer, and how many traffic annotations the metrics actor had by then.
struct gate_answer {
  bool answered = false;
  bool yes = false;  // answered, not failed
  bool last = false; // the epoch is the run's last (after_gate::last_epoch)
  bool save = false; // the epoch is saved although no save is due (after_gate::save_epoch)
  std::string error; // the failure's text, when it failed
  std::size_t annotations_before = 0;
};

inline caf::behavior ask_gate(caf::event_based_actor* self, epoch_gate_actor gate,
                              std::int64_t epoch, deadline due,
                              std::shared_ptr<metrics_probe> metrics,
                              std::shared_ptr<gate_answer> out) {
  self->request(gate, caf::infinite, epoch_done_atom::value, epoch, due)
    .then(
      [=](after_gate answer) {
        out->answered = true;
        out->yes = true;
        out->last = answer == after_gate::last_epoch;
        out->save = answer == after_gate::save_epoch;
        out->annotations_before = metrics->traffic.size();
      },
      [=](caf::error& err) {
        out->answered = true;
        out->error = err.category() == error_category ? error_text(err) : std::string("caf error");
      });
  return {[](const std::string&) {}};
}

inline training_job cluster_job(int servers, int workers) {
  auto job = test::synthetic_job("mlp", 64);
  job.topology.workers = workers;
  job.nodes.servers = servers;
  job.nodes.workers = workers;
  return job;
}

const data_facts facts{{1, 28, 28}, 10, 64, 64};

// Options whose log lines go to `lines`.
template <class Options> Options test_options(std::shared_ptr<std::vector<std::string>> lines) {
  Options o{cluster_secret(std::string(32, 's'))};
  o.log = [lines](const std::string& line) { lines->push_back(line); };
  return o;
}

inline scheduler_options scheduler_options_for(std::shared_ptr<std::vector<std::string>> lines) {
  return test_options<scheduler_options>(std::move(lines));
}

inline member_options member_options_for(node_kind role,
                                         std::shared_ptr<std::vector<std::string>> lines) {
  auto o = test_options<member_options>(std::move(lines));
  o.role = role;
  return o;
}

// A record a node made (node_events): its event's name and its fields by name.
struct recorded_event {
  std::string event;
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;
};
using recorded_events = std::shared_ptr<std::vector<recorded_event>>;

// Records of a process in `role` (pid 7) kept in `into`, in the order they were made.
inline std::shared_ptr<node_events> events_into(const recorded_events& into, std::string role) {
  auto keep = [into](const std::vector<std::pair<std::string, double>>& numbers,
                     const std::vector<std::pair<std::string, std::string>>& strings) {
    recorded_event r{"", {numbers.begin(), numbers.end()}, {strings.begin(), strings.end()}};
    r.event = r.strings.at("event");
    into->push_back(std::move(r));
  };
  return std::make_shared<node_events>(keep, std::move(role), -1, 7);
}

inline std::vector<recorded_event> records_of(const recorded_events& all,
                                              const std::string& event) {
  std::vector<recorded_event> out;
  for (const auto& r : *all)
    if (r.event == event)
      out.push_back(r);
  return out;
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

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct node_fixture : test_coordinator_fixture<> {
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
  std::vector<caf::actor> spawned;

  ~node_fixture() override {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::kill);
  }

  channel_actor channel(sent_list& sent) {
    sent = std::make_shared<std::vector<wire_message>>();
    auto a = sys.spawn(fake_channel, sent);
    spawned.push_back(caf::actor_cast<caf::actor>(a));
    return a;
  }

  // A scheduler that member `member` reaches again after losing the first (a restarted one):
  // it (re)joins over the channel, whose frames land in `sent`.
  channel_actor reached_again(const member_node_actor& member, sent_list& sent) {
    auto l = channel(sent);
    caf::anon_send(member, scheduler_channel_atom::value, l);
    settle();
    return l;
  }

  bool logged(const std::string& part) const {
    return std::any_of(lines->begin(), lines->end(), [&](auto& l) { return contains(l, part); });
  }

  void settle() { consume_messages(); }
};

} // namespace
