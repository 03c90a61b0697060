// The scheduler's shard changes to a server's shards across processes (cluster/remote/
// shard_change_remote.cpp), message by message on CAF's deterministic test coordinator: the
// skeleton inside a real channel (its peer the scheduler), the proxy over a fake one
// (remote_fixture.hpp). The server is a fake that records what it was asked, so each case
// checks what crossed the wire both ways.
#define CAF_SUITE remote

#include "tests/cluster/remote_fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace {

// What a fake server was asked, and how it answers: with `shards`, or `failure` when set.
struct server_probe {
  std::vector<shard_change> asks;
  std::vector<deadline> deadlines;
  std::uint32_t shards = 3;
  caf::error failure;
};

shard_change_actor::behavior_type fake_server(shard_change_actor::pointer,
                                              std::shared_ptr<server_probe> probe) {
  return {
    [=](change_atom, const shard_change& change, deadline due) -> caf::result<std::uint32_t> {
      probe->asks.push_back(change);
      probe->deadlines.push_back(due);
      if (probe->failure)
        return probe->failure;
      return probe->shards;
    },
  };
}

struct change_skeleton_fixture : channel_fixture {
  std::shared_ptr<server_probe> server = std::make_shared<server_probe>();

  void serve_server() {
    serving->set<remote_interface::shard_change>(0, sys.spawn(fake_server, server));
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(shard_change_skeleton_tests, change_skeleton_fixture)

CAF_TEST(shard_change_skeleton_passes_the_change_to_the_servers_shards) {
  serve_server();
  const auto earliest = deadline::after(1min);
  arrive(change_message{31, {shard_setting::momentum, 0.5, 938}, 60000});
  const auto latest = deadline::after(1min);
  CAF_REQUIRE_EQUAL(server->asks.size(), 1u);
  CAF_CHECK(server->asks[0].setting == shard_setting::momentum);
  CAF_CHECK_EQUAL(server->asks[0].value, 0.5);
  CAF_CHECK_EQUAL(server->asks[0].step, 938);
  CAF_CHECK(server->deadlines[0].at >= earliest.at);
  CAF_CHECK(server->deadlines[0].at <= latest.at);
  auto answer = written();
  CAF_REQUIRE(std::holds_alternative<changed_message>(answer));
  CAF_CHECK_EQUAL(std::get<changed_message>(answer).request, 31u);
  CAF_CHECK_EQUAL(std::get<changed_message>(answer).shards, 3u);
}

CAF_TEST(shard_change_skeleton_refuses_a_server_that_serves_none) {
  arrive(change_message{32, {shard_setting::lr, 0.1, 0}, 60000});
  auto refusal = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(refusal));
  CAF_CHECK_EQUAL(std::get<failure_message>(refusal).request, 32u);
  CAF_CHECK(std::get<failure_message>(refusal).code == errc::bad_request);
  CAF_CHECK(contains(std::get<failure_message>(refusal).text, "serves no shard change 0"));
}

CAF_TEST(shard_change_skeleton_passes_a_refusal_back) {
  serve_server();
  server->failure =
    make_error(errc::bad_request, "server_0: shard_1 refused the change: a push of step 940");
  arrive(change_message{33, {shard_setting::lr, 0.1, 938}, 60000});
  auto refusal = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(refusal));
  CAF_CHECK_EQUAL(std::get<failure_message>(refusal).request, 33u);
  CAF_CHECK(std::get<failure_message>(refusal).code == errc::bad_request);
  CAF_CHECK(contains(std::get<failure_message>(refusal).text, "shard_1 refused the change"));
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST_FIXTURE_SCOPE(shard_change_proxy_tests, proxy_fixture)

CAF_TEST(shard_change_proxy_forwards_and_delivers_the_count) {
  auto proxy = spawn_shard_change_proxy(sys, channel);
  probe->answer = changed_message{0, 4};
  const auto due = deadline::after(1min);
  auto asked = self->request(proxy, caf::infinite, change_atom::value,
                             shard_change{shard_setting::wd, 0.0005, 469}, due);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 1u);
  CAF_REQUIRE(std::holds_alternative<change_message>(probe->calls[0]));
  const auto& sent = std::get<change_message>(probe->calls[0]);
  CAF_CHECK(sent.change.setting == shard_setting::wd);
  CAF_CHECK_EQUAL(sent.change.value, 0.0005);
  CAF_CHECK_EQUAL(sent.change.step, 469);
  CAF_CHECK(probe->deadlines[0].at == due.at); // the originator's deadline, no new clock
  bool answered = false;
  asked.receive(
    [&](std::uint32_t shards) {
      answered = true;
      CAF_CHECK_EQUAL(shards, 4u);
    },
    [&](caf::error& err) { CAF_FAIL("the change failed: " << text_of(err)); });
  CAF_CHECK(answered);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(shard_change_proxy_refuses_an_answer_of_another_kind) {
  auto proxy = spawn_shard_change_proxy(sys, channel);
  probe->answer = replicated_message{0, 7};
  auto asked = self->request(proxy, caf::infinite, change_atom::value,
                             shard_change{shard_setting::lr, 0.1, 0}, deadline::after(1min));
  consume_messages();
  bool refused = false;
  asked.receive([&](std::uint32_t) { CAF_FAIL("another kind was taken as the change's answer"); },
                [&](caf::error& err) {
                  refused = true;
                  CAF_CHECK(troupe_code(err) == errc::bad_request);
                  CAF_CHECK(contains(text_of(err), "a shard change was answered with a "
                                                   "replicated"));
                });
  CAF_CHECK(refused);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST_FIXTURE_SCOPE_END()
