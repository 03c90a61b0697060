// troupe ctl's client (ctl_client.cpp) and the run-control skeleton and proxy
// (remote/run_control_remote.cpp) over 127.0.0.1, between two actor systems in one process: a
// listener serving a stand-in scheduler's run control. A verb is answered, or refused with the
// scheduler's words; a wrong secret, nothing listening and a peer that is no ctl are refused,
// naming why, and nothing waits past the request's timeout.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/ctl_client.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/cluster/remote_proxies.hpp>

using namespace troupe;
using namespace std::chrono_literals;

namespace {

const cluster_secret test_secret("the secret of the test cluster!!");

// A scheduler's run control: status answers a fixed document, drain is refused as the scheduler
// refuses it; it counts what it was asked.
run_control_actor::behavior_type stand_in(run_control_actor::pointer self,
                                          std::shared_ptr<std::atomic<int>> asked) {
  return {
    [=](command_atom, command_message& c, deadline) -> caf::result<command_result_message> {
      ++*asked;
      if (c.verb == "status")
        return command_result_message{0, "", R"({"schema":1})"};
      return make_error(errc::bad_request, "drain " + (c.args.empty() ? "" : c.args[0])
                                             + ": no worker of this run is named so");
    },
  };
}

struct scheduler_side {
  local_node_config config{local_node_options{}};
  caf::actor_system system{config};
  std::shared_ptr<std::atomic<int>> asked = std::make_shared<std::atomic<int>>(0);
  run_control_actor control = system.spawn(stand_in, asked);
  listener_actor listener;
  std::uint16_t port = 0;

  scheduler_side() {
    channel_options options(test_secret);
    options.role = node_kind::scheduler;
    options.name = "scheduler";
    options.serving->set<remote_interface::run_control>(0, control);
    options.log = [](const std::string&) {};
    auto spawned = spawn_listener(system, "127.0.0.1", 0, options);
    REQUIRE(spawned);
    listener = *spawned;
    caf::scoped_actor self{system};
    self->request(listener, 10s, port_atom::value)
      .receive([&](std::uint16_t p) { port = p; }, [&](caf::error& e) { FAIL(error_text(e)); });
    REQUIRE(port != 0);
  }
  ~scheduler_side() {
    caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(control, caf::exit_reason::user_shutdown);
  }
};

struct ctl_side {
  local_node_config config{local_node_options{}};
  caf::actor_system system{config};
};

ctl_request request_to(std::uint16_t port, const std::string& verb,
                       std::vector<std::string> args = {},
                       const cluster_secret& secret = test_secret) {
  ctl_request r{secret};
  r.port = port;
  r.verb = verb;
  r.args = std::move(args);
  r.timeout = 10s;
  return r;
}

} // namespace

TEST_CASE("ctl's verb is answered by the scheduler's run control", "[cluster][ctl]") {
  scheduler_side scheduler;
  ctl_side ctl;
  auto answer = ask_scheduler(ctl.system, request_to(scheduler.port, "status"));
  REQUIRE(answer);
  CHECK(answer->json == R"({"schema":1})");
  CHECK(answer->text.empty());
  CHECK(*scheduler.asked == 1);
}

TEST_CASE("a verb the scheduler refuses comes back with its words", "[cluster][ctl]") {
  scheduler_side scheduler;
  ctl_side ctl;
  auto answer = ask_scheduler(ctl.system, request_to(scheduler.port, "drain", {"worker_9"}));
  REQUIRE_FALSE(answer);
  CHECK(troupe_code(answer.error()) == errc::bad_request);
  CHECK_THAT(error_text(answer.error()),
             Catch::Contains("drain worker_9: no worker of this run is named so"));
  // The channel names whom it asked.
  CHECK_THAT(error_text(answer.error()),
             Catch::Contains("scheduler at 127.0.0.1:" + std::to_string(scheduler.port)));
}

TEST_CASE("ctl with the wrong secret is refused before anything is asked", "[cluster][ctl]") {
  scheduler_side scheduler;
  ctl_side ctl;
  auto answer =
    ask_scheduler(ctl.system, request_to(scheduler.port, "status", {},
                                         cluster_secret("not the secret of the test cluster")));
  REQUIRE_FALSE(answer);
  CHECK_THAT(error_text(answer.error()), Catch::Contains("secret"));
  CHECK(*scheduler.asked == 0);
}

TEST_CASE("ctl with no scheduler at the address names the address", "[cluster][ctl]") {
  std::uint16_t port = 0;
  {
    scheduler_side gone; // a port that was just free, and is again
    port = gone.port;
  }
  ctl_side ctl;
  auto answer = ask_scheduler(ctl.system, request_to(port, "status"));
  REQUIRE_FALSE(answer);
  CHECK(troupe_code(answer.error()) == errc::peer_down);
  CHECK_THAT(error_text(answer.error()),
             Catch::Contains("no scheduler at 127.0.0.1:" + std::to_string(port)));
}

TEST_CASE("a command from a peer that said hello as a worker is refused", "[cluster][ctl]") {
  scheduler_side scheduler;
  ctl_side ctl;
  channel_options options(test_secret);
  options.role = node_kind::worker;
  options.name = "worker 0";
  options.log = [](const std::string&) {};
  auto channel = connect_channel(ctl.system, "127.0.0.1", scheduler.port, options);
  REQUIRE(channel);
  auto proxy = spawn_run_control_proxy(ctl.system, *channel);
  caf::scoped_actor self{ctl.system};
  bool failed = false;
  std::string why;
  self
    ->request(proxy, 20s, command_atom::value, command_message{0, "status", {}, 0},
              deadline::after(10s))
    .receive([&](command_result_message&) {},
             [&](caf::error& err) {
               failed = true;
               why = error_text(err);
             });
  CHECK(failed);
  CHECK_THAT(why, Catch::Contains("only troupe ctl sends"));
  CHECK(*scheduler.asked == 0);
  caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*channel, caf::exit_reason::user_shutdown);
}
