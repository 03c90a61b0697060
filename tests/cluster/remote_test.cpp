// The remote path's layer between the node and the wire (cluster/remote/, channel.cpp), message
// by message on CAF's deterministic test coordinator (caf/test/dsl.hpp): the channel itself and
// the push target, compute driver, metrics sink and node control interfaces. The fixtures
// (remote_fixture.hpp) run skeletons inside a real channel over a socket pair and proxies over
// a fake channel.
#define CAF_SUITE remote

#include "tests/cluster/remote_fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace {

// A shard's weights as four_shards() has them (one key of 2 values), after `updates` updates.
weight_set weights_after(std::int64_t updates) {
  weight_set ws;
  ws.updates = updates;
  ws.keys = {0};
  ws.weights = {tensor::from_values({2}, {1.0f, 2.0f})};
  return ws;
}

// A shard: answers a pull with `updates` as its count.
push_target_actor::behavior_type fake_shard(push_target_actor::pointer, std::int64_t updates) {
  auto answer = [=] { return weights_after(updates); };
  return {
    [=](push_atom, gradient_push&) -> weight_set { return answer(); },
    [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
      return caf::make_error(caf::sec::unexpected_message);
    },
    [=](pull_atom, deadline) -> weight_set { return answer(); },
  };
}

// A compute: answers a phase with a report of its epoch; records ended epochs.
compute_actor::behavior_type fake_compute(compute_actor::pointer,
                                          std::shared_ptr<std::vector<std::int64_t>> ended) {
  auto report = [](std::int64_t epoch, bool validation) {
    phase_report r;
    r.epoch = epoch;
    r.validation = validation;
    r.samples = 64;
    return r;
  };
  return {
    [=](train_atom, std::int64_t epoch, deadline) { return report(epoch, false); },
    [=](validate_atom, std::int64_t epoch, deadline) { return report(epoch, true); },
    [=](end_epoch_atom, std::int64_t epoch) { ended->push_back(epoch); },
  };
}

metrics_sink_actor::behavior_type fake_sink(metrics_sink_actor::pointer,
                                            std::shared_ptr<std::vector<batch_report>> got) {
  return {
    [=](batch_report& r) { got->push_back(r); },
    [=](phase_report&) {},
    [=](flush_atom) { return true; },
  };
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Skeletons, inside a real channel.

CAF_TEST_FIXTURE_SCOPE(skeleton_tests, channel_fixture)

CAF_TEST(push_target_skeleton_serves_the_registered_shard_and_refuses_an_unknown_one) {
  serving->set<remote_interface::push_target>(1, sys.spawn(fake_shard, std::int64_t{5}));
  arrive(pull_message{7, 1, 60000});
  auto answer = written();
  CAF_REQUIRE(std::holds_alternative<weights_message>(answer));
  CAF_CHECK_EQUAL(std::get<weights_message>(answer).request, 7u);
  CAF_CHECK_EQUAL(std::get<weights_message>(answer).shard, 1u);
  CAF_CHECK_EQUAL(std::get<weights_message>(answer).weights.updates, 5);
  // Shard 3 is served by nobody here: the peer's request fails naming it; the channel stays.
  arrive(pull_message{8, 3, 60000});
  auto refusal = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(refusal));
  const auto& failure = std::get<failure_message>(refusal);
  CAF_CHECK_EQUAL(failure.request, 8u);
  CAF_CHECK(failure.code == errc::bad_request);
  CAF_CHECK(contains(failure.text, "push target 3"));
  CAF_CHECK(logged("push target 3, which this node does not serve"));
  arrive(pull_message{9, 1, 60000});
  auto again = written();
  CAF_REQUIRE(std::holds_alternative<weights_message>(again));
  CAF_CHECK_EQUAL(std::get<weights_message>(again).request, 9u);
}

CAF_TEST(compute_driver_skeleton_serves_the_registered_compute_and_refuses_an_unknown_one) {
  auto ended = std::make_shared<std::vector<std::int64_t>>();
  serving->set<remote_interface::compute_driver>(0, sys.spawn(fake_compute, ended));
  arrive(control_message{11, 0, control_kind::validate, 4, 60000});
  auto answer = written();
  CAF_REQUIRE(std::holds_alternative<report_message>(answer));
  CAF_CHECK_EQUAL(std::get<report_message>(answer).request, 11u);
  CAF_CHECK_EQUAL(std::get<report_message>(answer).report.epoch, 4);
  CAF_CHECK(std::get<report_message>(answer).report.validation);
  arrive(control_message{0, 0, control_kind::end_epoch, 4, 0});
  CAF_CHECK_EQUAL(*ended, std::vector<std::int64_t>{4});
  arrive(control_message{12, 5, control_kind::train, 4, 60000});
  auto refusal = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(refusal));
  CAF_CHECK_EQUAL(std::get<failure_message>(refusal).request, 12u);
  CAF_CHECK(contains(std::get<failure_message>(refusal).text, "compute driver 5"));
}

CAF_TEST(metrics_sink_skeleton_hands_batch_reports_to_the_registered_sink) {
  auto got = std::make_shared<std::vector<batch_report>>();
  serving->set<remote_interface::metrics_sink>(0, sys.spawn(fake_sink, got));
  batch_report r;
  r.rank = 1;
  r.epoch = 2;
  r.index = 3;
  r.batches = 10;
  arrive(batch_report_message{r});
  CAF_REQUIRE_EQUAL(got->size(), 1u);
  CAF_CHECK_EQUAL(got->front().rank, 1);
  CAF_CHECK_EQUAL(got->front().index, 3);
}

CAF_TEST(reply_after_its_deadline_is_dropped) {
  // A deadline that passed longer ago than the grace the channel gives a far failure.
  const deadline passed{deadline::clock::now() - remote_failure_grace - 1ms};
  auto asked = self->request(channel, caf::infinite, call_atom::value,
                             wire_message{pull_message{0, 2}}, passed);
  consume_messages();
  auto request = written();
  CAF_REQUIRE(std::holds_alternative<pull_message>(request));
  const auto id = std::get<pull_message>(request).request;
  self->send(channel, tick_atom::value);
  consume_messages();
  bool failed = false;
  asked.receive([&](wire_message&) { CAF_FAIL("a request past its deadline was answered"); },
                [&](caf::error& err) {
                  failed = true;
                  CAF_CHECK(troupe_code(err) == errc::timeout);
                  CAF_CHECK(contains(text_of(err), "shard 2"));
                  CAF_CHECK(contains(text_of(err), "did not answer by its deadline"));
                });
  CAF_CHECK(failed);
  // The answer arrives late: read, counted, and dropped; the channel stays up.
  arrive(weights_message{id, 2, weights_after(1)});
  CAF_CHECK_EQUAL(frames_in(kind_of<weights_message>()), 1u);
  CAF_CHECK(!logged("refused"));
}

CAF_TEST(skips_of_the_fixed_push_order_are_logged_at_the_first_tenth_and_hundredth) {
  // What its socket's writer sends when the fixed push order stops waiting (frame_socket.hpp).
  const auto skips_logged = [&] {
    return std::count_if(lines->begin(), lines->end(),
                         [](auto& l) { return contains(l, "the fixed push order waited"); });
  };
  for (std::uint64_t skips = 1; skips <= 100; ++skips)
    self->send(channel, sequence_skip_atom::value, std::uint64_t{40 + skips}, skips);
  consume_messages();
  CAF_CHECK_EQUAL(skips_logged(), 3);
  CAF_CHECK(
    logged("for the push of rank 41 and went on without it (1 time on this channel so far)"));
  CAF_CHECK(
    logged("for the push of rank 50 and went on without it (10 times on this channel so far)"));
  CAF_CHECK(
    logged("for the push of rank 140 and went on without it (100 times on this channel so far)"));
  CAF_CHECK(!logged("refused")); // a note, not a fault: the channel stays up
  arrive(weights_message{7, 2, weights_after(1)});
  CAF_CHECK_EQUAL(frames_in(kind_of<weights_message>()), 1u);
}

CAF_TEST(a_kind_no_interface_takes_as_a_request_is_refused) {
  auto asked = self->request(channel, caf::infinite, call_atom::value, wire_message{join_message{}},
                             deadline::after(1min));
  consume_messages();
  bool refused = false;
  asked.receive([&](wire_message&) { CAF_FAIL("a join was taken as a request"); },
                [&](caf::error& err) {
                  refused = true;
                  CAF_CHECK(troupe_code(err) == errc::bad_request);
                  CAF_CHECK(contains(text_of(err), "no request of any interface"));
                });
  CAF_CHECK(refused);
}

CAF_TEST(an_answer_of_another_interface_is_refused) {
  auto asked = self->request(channel, caf::infinite, call_atom::value,
                             wire_message{pull_message{0, 2}}, deadline::after(1min));
  consume_messages();
  auto request = written();
  CAF_REQUIRE(std::holds_alternative<pull_message>(request));
  // A pull (push target) answered with a compute's report: the peer is refused.
  arrive(report_message{std::get<pull_message>(request).request, phase_report{}});
  auto goodbye = written();
  CAF_REQUIRE(std::holds_alternative<shutdown_message>(goodbye));
  CAF_CHECK(contains(std::get<shutdown_message>(goodbye).reason, "(push target) with a report"));
  bool failed = false;
  asked.receive([&](wire_message&) { CAF_FAIL("a report was taken as weights"); },
                [&](caf::error& err) {
                  failed = true;
                  CAF_CHECK(troupe_code(err) == errc::bad_request);
                });
  CAF_CHECK(failed);
}

CAF_TEST(node_control_for_a_node_that_takes_none_is_refused) {
  // This node registered no scheduler inbox: a join is not for it.
  arrive(join_message{});
  auto goodbye = written();
  CAF_REQUIRE(std::holds_alternative<shutdown_message>(goodbye));
  CAF_CHECK(contains(std::get<shutdown_message>(goodbye).reason,
                     "sent a join, which this node does not take"));
}

CAF_TEST_FIXTURE_SCOPE_END()

// ---------------------------------------------------------------------------------------------
// Proxies, over a fake channel.

CAF_TEST_FIXTURE_SCOPE(proxy_tests, proxy_fixture)

CAF_TEST(push_target_proxy_forwards_push_and_pull_and_delivers_the_answer) {
  auto proxy = spawn_push_target_proxy(sys, channel, 2);
  weight_set ws;
  ws.updates = 9;
  probe->answer = weights_message{0, 2, ws};
  gradient_push push;
  push.step = 3;
  push.due = deadline::after(1min);
  auto pushed = self->request(proxy, caf::infinite, push_atom::value, push);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 1u);
  CAF_REQUIRE(std::holds_alternative<push_message>(probe->calls[0]));
  CAF_CHECK_EQUAL(std::get<push_message>(probe->calls[0]).shard, 2u);
  CAF_CHECK_EQUAL(std::get<push_message>(probe->calls[0]).push.step, 3);
  CAF_CHECK(probe->deadlines[0].at == push.due.at); // the originator's deadline, no new clock
  pushed.receive([&](weight_set& got) { CAF_CHECK_EQUAL(got.updates, 9); },
                 [&](caf::error& err) { CAF_FAIL("push failed: " << text_of(err)); });
  const auto due = deadline::after(2min);
  auto pulled = self->request(proxy, caf::infinite, pull_atom::value, due);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 2u);
  CAF_CHECK(std::holds_alternative<pull_message>(probe->calls[1]));
  CAF_CHECK(probe->deadlines[1].at == due.at);
  pulled.receive([&](weight_set& got) { CAF_CHECK_EQUAL(got.updates, 9); },
                 [&](caf::error& err) { CAF_FAIL("pull failed: " << text_of(err)); });
  // Another shard's weights are no answer to this one.
  probe->answer = weights_message{0, 3, ws};
  auto wrong = self->request(proxy, caf::infinite, pull_atom::value, due);
  consume_messages();
  wrong.receive([&](weight_set&) { CAF_FAIL("another shard's weights were taken"); },
                [&](caf::error& err) { CAF_CHECK(troupe_code(err) == errc::bad_request); });
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(push_target_proxy_delivers_the_channels_failure) {
  auto proxy = spawn_push_target_proxy(sys, channel, 0);
  probe->failure = make_error(errc::peer_down, "server 0 shut down");
  auto pulled = self->request(proxy, caf::infinite, pull_atom::value, deadline::after(1min));
  consume_messages();
  bool failed = false;
  pulled.receive([&](weight_set&) { CAF_FAIL("a failed pull was answered"); },
                 [&](caf::error& err) {
                   failed = true;
                   CAF_CHECK(troupe_code(err) == errc::peer_down);
                   CAF_CHECK(contains(text_of(err), "server 0 shut down"));
                 });
  CAF_CHECK(failed);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(push_target_proxy_fails_everything_once_its_channel_ends) {
  auto proxy = spawn_push_target_proxy(sys, channel, 0);
  consume_messages();
  caf::anon_send_exit(channel, caf::exit_reason::kill);
  consume_messages();
  auto pulled = self->request(proxy, caf::infinite, pull_atom::value, deadline::after(1min));
  consume_messages();
  pulled.receive([&](weight_set&) { CAF_FAIL("a pull over an ended channel was answered"); },
                 [&](caf::error& err) {
                   CAF_CHECK(troupe_code(err) == errc::peer_down);
                   CAF_CHECK(contains(text_of(err), "shard 0"));
                 });
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(compute_proxy_forwards_phases_and_end_epoch) {
  auto proxy = spawn_compute_proxy(sys, channel, 1);
  phase_report report;
  report.epoch = 3;
  report.samples = 128;
  probe->answer = report_message{0, report};
  const auto due = deadline::after(1min);
  auto trained = self->request(proxy, caf::infinite, train_atom::value, std::int64_t{3}, due);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 1u);
  CAF_REQUIRE(std::holds_alternative<control_message>(probe->calls[0]));
  const auto& asked = std::get<control_message>(probe->calls[0]);
  CAF_CHECK_EQUAL(asked.rank, 1u);
  CAF_CHECK(asked.kind == control_kind::train);
  CAF_CHECK_EQUAL(asked.epoch, 3);
  CAF_CHECK(probe->deadlines[0].at == due.at);
  trained.receive([&](phase_report& got) { CAF_CHECK_EQUAL(got.samples, 128); },
                  [&](caf::error& err) { CAF_FAIL("train failed: " << text_of(err)); });
  probe->failure = make_error(errc::timeout, "compute 1 did not answer by its deadline");
  auto validated = self->request(proxy, caf::infinite, validate_atom::value, std::int64_t{3}, due);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 2u);
  CAF_CHECK(std::get<control_message>(probe->calls[1]).kind == control_kind::validate);
  validated.receive([&](phase_report&) { CAF_FAIL("a failed validation was answered"); },
                    [&](caf::error& err) { CAF_CHECK(troupe_code(err) == errc::timeout); });
  self->send(proxy, end_epoch_atom::value, std::int64_t{3});
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->sent.size(), 1u);
  CAF_REQUIRE(std::holds_alternative<control_message>(probe->sent[0]));
  CAF_CHECK(std::get<control_message>(probe->sent[0]).kind == control_kind::end_epoch);
  CAF_CHECK_EQUAL(std::get<control_message>(probe->sent[0]).rank, 1u);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(metrics_sink_proxy_sends_batch_reports_and_answers_flush) {
  auto position = std::make_shared<run_position>();
  auto proxy = spawn_metrics_sink_proxy(sys, channel, position);
  batch_report r;
  r.rank = 2;
  r.index = 5;
  r.batches = 10;
  self->send(proxy, r);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->sent.size(), 1u);
  CAF_REQUIRE(std::holds_alternative<batch_report_message>(probe->sent[0]));
  CAF_CHECK_EQUAL(std::get<batch_report_message>(probe->sent[0]).report.index, 5);
  CAF_CHECK_EQUAL(position->batch, 5);
  auto flushed = self->request(proxy, caf::infinite, flush_atom::value);
  consume_messages();
  flushed.receive([&](bool ok) { CAF_CHECK(ok); },
                  [&](caf::error& err) { CAF_FAIL("flush failed: " << text_of(err)); });
  CAF_CHECK(probe->calls.empty());
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(node_control_proxies_write_what_they_are_told_in_order_and_end_with_their_channel) {
  // The member's side: join, ready, the traffic answer and its goodbye, in the order said.
  auto to_scheduler = spawn_scheduler_control_proxy(sys, channel);
  self->send(to_scheduler, join_atom::value, join_message{node_kind::worker, "10.0.0.7", 0, 42});
  self->send(to_scheduler, ready_atom::value, ready_message{3, 0, 1});
  self->send(to_scheduler, traffic_atom::value, traffic_message{2, {}});
  self->send(to_scheduler, goodbye_atom::value, shutdown_message{"done", true});
  // The scheduler's side: an assignment, a traffic query, a goodbye.
  auto to_member = spawn_member_control_proxy(sys, channel);
  assignment_message a;
  a.rank = 1;
  a.node = 3;
  self->send(to_member, assignment_atom::value, a);
  self->send(to_member, traffic_query_atom::value, traffic_query_message{2});
  self->send(to_member, goodbye_atom::value, shutdown_message{"the run finished", true});
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->sent.size(), 7u);
  CAF_CHECK(probe->calls.empty()); // node control is one-way
  CAF_REQUIRE(std::holds_alternative<join_message>(probe->sent[0]));
  CAF_CHECK_EQUAL(std::get<join_message>(probe->sent[0]).pid, 42u);
  CAF_CHECK(std::holds_alternative<ready_message>(probe->sent[1]));
  CAF_CHECK(std::holds_alternative<traffic_message>(probe->sent[2]));
  CAF_CHECK(std::holds_alternative<shutdown_message>(probe->sent[3]));
  CAF_REQUIRE(std::holds_alternative<assignment_message>(probe->sent[4]));
  CAF_CHECK_EQUAL(std::get<assignment_message>(probe->sent[4]).node, 3u);
  CAF_CHECK(std::holds_alternative<traffic_query_message>(probe->sent[5]));
  CAF_CHECK(std::holds_alternative<shutdown_message>(probe->sent[6]));
  // Once the channel is gone there is nobody to write to: both proxies end with it.
  self->monitor(to_scheduler);
  self->monitor(to_member);
  caf::anon_send_exit(channel, caf::exit_reason::kill);
  consume_messages();
  int ended = 0;
  for (int i = 0; i < 2; ++i)
    self->receive([&](caf::down_msg&) { ++ended; }, caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK_EQUAL(ended, 2);
}

CAF_TEST_FIXTURE_SCOPE_END()
