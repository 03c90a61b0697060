// Peer channels on 127.0.0.1 between two actor systems in one process (a "server" node holding a
// shard, a "worker" node reaching it through a remote-shard stand-in). Weights that come back
// over the channel equal, bit for bit, those of the same shard asked in-process; and every way a
// channel can fail ends in an error that names it, never in a wait: a wrong secret, another plan,
// garbage from a raw TCP client (the listener keeps serving), an unknown shard, a shard that
// does not answer in time, a peer that closes, and a peer that goes silent.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/cluster/channel.hpp>
#include <troupe/cluster/frame_codec.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/cluster/remote_proxies.hpp>
#include <troupe/cluster/tcp_congestion.hpp>

using namespace troupe;
using namespace std::chrono_literals;

namespace {

const cluster_secret test_secret("the secret of the test cluster!!");

std::vector<shard_key> two_keys() {
  return {shard_key{"fc.weight", tensor::from_values({2, 3}, {1, 2, 3, 4, 5, 6}), true},
          shard_key{"fc.bias", tensor::from_values({3}, {0.5f, -0.5f, 0.25f}), false}};
}

// The plan has two shards of the same shapes; the test server holds shard 0 only.
wire_keys two_key_shapes() {
  return wire_keys{{{{2, 3}, {3}}, {{2, 3}, {3}}}};
}

shard_options momentum_sgd() {
  shard_options o;
  o.optimizer.sgd = sgd_options{0.9f, 1e-4f, false};
  o.schedule.policy = lr_policy::constant;
  o.schedule.base_lr = 0.05f;
  return o;
}

gradient_push push_of_step(std::int64_t step) {
  gradient_push push;
  push.step = step;
  push.samples = 32;
  push.keys = {0, 1};
  const float s = static_cast<float>(step) + 1.0f;
  push.gradients = {tensor::from_values({2, 3}, {0.1f * s, -0.2f, 0.3f, 0.01f, 0.7f / s, -1.5f}),
                    tensor::from_values({3}, {0.25f, -0.125f * s, 1.0f})};
  return push;
}

// Lines the channels logged, for checking what a refusal said.
struct log_lines {
  std::mutex mutex;
  std::condition_variable added;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        lines.push_back(line);
      }
      added.notify_all();
    };
  }
  bool holds(const std::string& text) const {
    for (const auto& line : lines)
      if (line.find(text) != std::string::npos)
        return true;
    return false;
  }
  bool any_contains(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    return holds(text);
  }
  // The other node logs on its own threads: waits up to 10 s for the line to be logged.
  bool eventually_contains(const std::string& text) {
    std::unique_lock<std::mutex> lock(mutex);
    return added.wait_for(lock, 10s, [&] { return holds(text); });
  }
};

// A listening socket on a free loopback port that this test, not a node, owns (it never
// answers, or closes what it accepts); `port` gets the port.
int listen_on_loopback(std::uint16_t& port) {
  int server = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(server >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(server, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(server, 4) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(server, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  port = ntohs(address.sin_port);
  return server;
}

channel_options options_for(node_kind role, std::string name) {
  channel_options o(test_secret);
  o.role = role;
  o.name = std::move(name);
  o.plan_hash = 1234;
  o.keys = two_key_shapes();
  o.heartbeat_interval = 200ms;
  o.connection_timeout = 2000ms;
  return o;
}

local_node_config network_config() {
  return local_node_config(local_node_options{});
}

template <class Handle>
caf::expected<weight_set> ask(caf::scoped_actor& self, const Handle& to, caf::message message) {
  caf::expected<weight_set> out{caf::error{}};
  self->request(caf::actor_cast<caf::actor>(to), 20s, std::move(message))
    .receive([&](weight_set& ws) { out = std::move(ws); },
             [&](caf::error& e) { out = std::move(e); });
  return out;
}

bool bit_identical(const weight_set& a, const weight_set& b) {
  if (a.weights.size() != b.weights.size() || a.weights.empty() || a.keys != b.keys
      || a.updates != b.updates)
    return false;
  for (std::size_t i = 0; i < a.weights.size(); ++i)
    if (a.weights[i].shape() != b.weights[i].shape() || a.weights[i].numel() == 0
        || std::memcmp(a.weights[i].data(), b.weights[i].data(), a.weights[i].bytes()) != 0)
      return false;
  return true;
}

std::uint16_t port_of(caf::scoped_actor& self, const listener_actor& listener) {
  std::uint16_t port = 0;
  self->request(listener, 10s, port_atom::value)
    .receive([&](std::uint16_t p) { port = p; }, [&](caf::error& e) { FAIL(error_text(e)); });
  REQUIRE(port != 0);
  return port;
}

// A server node: one shard behind a listener on 127.0.0.1.
struct server_node {
  log_lines log; // before the system: its channels may log until the system has stopped them
  local_node_config config = network_config();
  caf::actor_system system{config};
  push_target_actor shard;
  listener_actor listener;
  std::uint16_t port = 0;
  std::shared_ptr<serving_registry> directory;
  std::shared_ptr<node_fences> fences;

  explicit server_node(push_target_actor serving = {}, std::uint64_t plan_hash = 1234,
                       std::string congestion = {}, bool same_host_shortcut = false) {
    shard =
      serving ? serving : push_target_actor{spawn_param_shard(system, two_keys(), momentum_sgd())};
    auto options = options_for(node_kind::server, "server 0");
    options.plan_hash = plan_hash;
    options.tcp_congestion = std::move(congestion);
    options.same_host_shortcut = same_host_shortcut;
    options.serving->set<remote_interface::push_target>(0, shard); // and none of shard 1
    directory = options.serving;
    fences = options.fences;
    options.log = log.sink();
    auto spawned = spawn_listener(system, "127.0.0.1", 0, options);
    REQUIRE(spawned);
    listener = *spawned;
    caf::scoped_actor self{system};
    port = port_of(self, listener);
  }
  ~server_node() {
    caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
  }
};

// A worker node's side: a channel to the server and a proxy for its shard 0.
struct worker_node {
  log_lines log; // before the system, as in server_node
  local_node_config config = network_config();
  caf::actor_system system{config};
  channel_actor channel;
  push_target_actor remote;

  explicit worker_node(std::uint16_t port,
                       channel_options options = options_for(node_kind::worker, "worker 0")) {
    options.log = log.sink();
    auto connected = connect_channel(system, "127.0.0.1", port, std::move(options));
    REQUIRE(connected);
    channel = *connected;
    remote = spawn_push_target_proxy(system, channel, 0);
  }
  ~worker_node() {
    caf::anon_send_exit(remote, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(channel, caf::exit_reason::user_shutdown);
  }
};

// The congestion control of every TCP socket of this process connected with port `port` on
// the given end (`peer`: the far end's port is `port`, else this end's), found in /proc/self/fd.
std::vector<std::string> congestion_of_sockets(std::uint16_t port, bool peer) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(entry.path().filename().string());
    sockaddr_in far{}, near{};
    socklen_t far_length = sizeof far, near_length = sizeof near;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&far), &far_length) != 0
        || far.sin_family != AF_INET
        || ::getsockname(fd, reinterpret_cast<sockaddr*>(&near), &near_length) != 0)
      continue;
    if (ntohs(peer ? far.sin_port : near.sin_port) == port)
      found.push_back(tcp_congestion_of(fd));
  }
  return found;
}

std::string host_default_congestion() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  in >> name;
  return name;
}

} // namespace

TEST_CASE("a channel runs the congestion control its options name, on both ends",
          "[cluster][channel]") {
  // reno: built into every Linux kernel and allowed to every user.
  server_node server({}, 1234, "reno");
  auto options = options_for(node_kind::worker, "worker 0");
  options.tcp_congestion = "reno";
  worker_node worker(server.port, options);
  caf::scoped_actor self{worker.system};
  REQUIRE(ask(self, worker.remote,
              caf::make_message(push_atom::value, push_of_step(0)))); // admitted, both started
  const auto workers_end = congestion_of_sockets(server.port, true);
  const auto servers_end = congestion_of_sockets(server.port, false);
  REQUIRE(workers_end.size() == 1);
  REQUIRE(servers_end.size() == 1);
  CHECK(workers_end[0] == "reno");
  CHECK(servers_end[0] == "reno");
}

TEST_CASE(
  "a channel without a congestion control keeps the host's default, and a refused one is logged",
  "[cluster][channel]") {
  server_node server; // none named
  auto options = options_for(node_kind::worker, "worker 0");
  options.tcp_congestion = "no-such-algorithm";
  worker_node worker(server.port, options);
  caf::scoped_actor self{worker.system};
  auto answer = ask(self, worker.remote, caf::make_message(push_atom::value, push_of_step(0)));
  REQUIRE(answer); // the channel works on with the host's default
  CHECK(answer->updates == 1);
  const auto servers_end = congestion_of_sockets(server.port, false);
  const auto workers_end = congestion_of_sockets(server.port, true);
  REQUIRE(servers_end.size() == 1);
  REQUIRE(workers_end.size() == 1);
  const auto host = host_default_congestion();
  REQUIRE(!host.empty());
  CHECK(servers_end[0] == host);
  CHECK(workers_end[0] == host);
  CHECK(worker.log.any_contains("TCP congestion control no-such-algorithm refused"));
}

TEST_CASE("a shard reached over a channel answers exactly as the same shard in-process",
          "[cluster][channel]") {
  server_node server;
  worker_node worker(server.port);
  caf::scoped_actor self{worker.system};
  auto local = spawn_param_shard(worker.system, two_keys(), momentum_sgd());

  for (std::int64_t step = 0; step < 4; ++step) {
    auto over_channel =
      ask(self, worker.remote, caf::make_message(push_atom::value, push_of_step(step)));
    auto in_process = ask(self, local, caf::make_message(push_atom::value, push_of_step(step)));
    REQUIRE(over_channel);
    REQUIRE(in_process);
    CHECK(over_channel->updates == step + 1);
    CHECK(over_channel->learning_rate == in_process->learning_rate);
    CHECK(bit_identical(*over_channel, *in_process));
  }
  auto pulled = ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{}));
  auto pulled_here = ask(self, local, caf::make_message(pull_atom::value, deadline{}));
  REQUIRE(pulled);
  REQUIRE(pulled_here);
  CHECK(bit_identical(*pulled, *pulled_here));

  // Traffic against the arithmetic: 4 pushes and 1 pull out, 5 weight sets in, each frame its
  // values (2 keys, 9 floats) plus at most frame_overhead_bound (docs/protocol.md).
  channel_traffic traffic;
  self->request(worker.channel, 10s, stats_atom::value)
    .receive([&](channel_traffic& t) { traffic = t; }, [&](caf::error& e) { FAIL(error_text(e)); });
  const std::size_t push_kind = 2, pull_kind = 3, weights_kind = 4;
  CHECK(traffic.frames_out[push_kind] == 4);
  CHECK(traffic.frames_out[pull_kind] == 1);
  CHECK(traffic.frames_in[weights_kind] == 5);
  const std::uint64_t values = 9 * sizeof(float);
  CHECK(traffic.bytes_out[push_kind] >= 4 * (values + frame_header_bytes));
  CHECK(traffic.bytes_out[push_kind] <= 4 * (values + frame_overhead_bound(2)));
  CHECK(traffic.bytes_in[weights_kind] >= 5 * (values + frame_header_bytes));
  CHECK(traffic.bytes_in[weights_kind] <= 5 * (values + frame_overhead_bound(2)));
  CHECK(traffic.bytes_out[pull_kind] <= frame_overhead_bound(0));
  CHECK(traffic.total_out() >= traffic.bytes_out[push_kind] + traffic.bytes_out[pull_kind]);
  self->send_exit(local, caf::exit_reason::user_shutdown);
}

// A fixed push order is for a paced TCP channel. Over a same-host socket a push goes as soon as it
// is queued: here the order names first a push that never comes, with an hour's patience, and
// the push that does come is answered all the same.
TEST_CASE("a same-host channel writes pushes as they come, whatever fixed order it is given",
          "[cluster][channel]") {
  server_node server({}, 1234, {}, true);
  local_node_config config = network_config();
  caf::actor_system system{config};
  auto options = options_for(node_kind::worker, "worker 0");
  options.same_host_shortcut = true;
  options.priority = true;
  options.order.position = {{1, 2}}; // shard 0's keys 0 and 1: a push of both ranks 2
  options.push_sequence = {7, 2};    // rank 7 first: no such push is ever sent
  options.sequence_patience = std::chrono::hours(1);
  bool local = false;
  auto connected = connect_channel(system, "127.0.0.1", server.port, options, &local);
  REQUIRE(connected);
  REQUIRE(local);
  auto remote = spawn_push_target_proxy(system, *connected, 0);
  caf::scoped_actor self{system};
  auto answer = ask(self, remote, caf::make_message(push_atom::value, push_of_step(0)));
  REQUIRE(answer);
  CHECK(answer->updates == 1);
  caf::anon_send_exit(remote, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*connected, caf::exit_reason::user_shutdown);
}

TEST_CASE("a peer with another secret or another plan is refused, naming why",
          "[cluster][channel]") {
  server_node server;
  SECTION("wrong secret") {
    channel_options options(cluster_secret("not the secret of the test cluster"));
    auto base = options_for(node_kind::worker, "intruder");
    options.role = base.role;
    options.name = base.name;
    options.plan_hash = base.plan_hash;
    options.keys = base.keys;
    worker_node worker(server.port, options);
    caf::scoped_actor self{worker.system};
    auto answer = ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{}));
    REQUIRE_FALSE(answer);
    CHECK(worker.log.any_contains("proof of the cluster secret is wrong"));
    CHECK(server.log.eventually_contains("proof of the cluster secret is wrong"));
  }
  SECTION("another plan") {
    auto options = options_for(node_kind::worker, "worker 0");
    options.plan_hash = 999;
    worker_node worker(server.port, options);
    caf::scoped_actor self{worker.system};
    auto answer = ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{}));
    REQUIRE_FALSE(answer);
    CHECK(troupe_code(answer.error()) == errc::bad_request);
    CHECK_THAT(error_text(answer.error()), Catch::Contains("runs plan"));
  }
  // Either way the server still serves a proper worker.
  worker_node good(server.port);
  caf::scoped_actor self{good.system};
  CHECK(ask(self, good.remote, caf::make_message(pull_atom::value, deadline{})));
}

TEST_CASE("garbage from a raw TCP client is refused and the listener keeps serving",
          "[cluster][channel]") {
  server_node server;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server.port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  const char garbage[] = "GET / HTTP/1.1\r\nHost: troupe\r\n\r\n";
  REQUIRE(::write(fd, garbage, sizeof garbage) == static_cast<ssize_t>(sizeof garbage));
  // The server closes the connection: read returns 0 (or an error) rather than blocking.
  timeval wait{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::read(fd, buffer, sizeof buffer)) > 0) {
  }
  CHECK(got == 0);
  ::close(fd);
  CHECK(server.log.eventually_contains("not a Troupe frame"));

  worker_node worker(server.port);
  caf::scoped_actor self{worker.system};
  CHECK(ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{})));
}

TEST_CASE("failures on the far side come back as errors that name them", "[cluster][channel]") {
  SECTION("a shard the server does not hold: the channel stays up") {
    server_node server;
    worker_node worker(server.port);
    caf::scoped_actor self{worker.system};
    auto stray = spawn_push_target_proxy(worker.system, worker.channel, 1);
    auto answer = ask(self, stray, caf::make_message(pull_atom::value, deadline{}));
    REQUIRE_FALSE(answer);
    CHECK(troupe_code(answer.error()) == errc::bad_request);
    CHECK_THAT(error_text(answer.error()), Catch::Contains("server 0 serves no push target 1"));
    CHECK(ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{})));
    self->send_exit(stray, caf::exit_reason::user_shutdown);
  }
  SECTION("a push of another plan's shapes: the server refuses the channel, saying why") {
    server_node server;
    worker_node worker(server.port);
    caf::scoped_actor self{worker.system};
    auto push = push_of_step(0);
    push.keys = {1}; // key 1 is [3]; the gradient is [2, 3]: refused by the codec on the server
    push.gradients = {push.gradients[0]};
    auto answer = ask(self, worker.remote, caf::make_message(push_atom::value, push));
    REQUIRE_FALSE(answer);
    CHECK(troupe_code(answer.error()) == errc::peer_down);
    CHECK_THAT(error_text(answer.error()), Catch::Contains("refused by server 0"));
    CHECK_THAT(error_text(answer.error()),
               Catch::Contains("value of key 1 has 24 bytes, expected 12"));
    CHECK(server.log.eventually_contains("value of key 1 has 24 bytes"));
  }
}

TEST_CASE("a shard that does not answer times the request out, naming it", "[cluster][channel]") {
  // Stands in for a stuck shard: takes requests and never answers them.
  local_node_config config = network_config();
  caf::actor_system system{config};
  auto pending = std::make_shared<std::vector<caf::typed_response_promise<weight_set>>>();
  push_target_actor stuck =
    system.spawn([pending](push_target_actor::pointer self) -> push_target_actor::behavior_type {
      return {
        [=](push_atom, gradient_push&) {
          pending->push_back(self->make_response_promise<weight_set>());
          return pending->back();
        },
        [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
          return caf::make_error(caf::sec::unexpected_message);
        },
        [=](pull_atom, deadline) {
          pending->push_back(self->make_response_promise<weight_set>());
          return pending->back();
        },
      };
    });
  server_node server(stuck);
  worker_node worker(server.port);
  caf::scoped_actor self{worker.system};
  auto answer =
    ask(self, worker.remote, caf::make_message(pull_atom::value, deadline::after(300ms)));
  REQUIRE_FALSE(answer);
  CHECK(troupe_code(answer.error()) == errc::timeout);
  // A node named after its role is named once (not "server 'server 0'"), with its address.
  // Whichever side's deadline check comes first names the shard and its node.
  CHECK_THAT(error_text(answer.error()), Catch::Contains("shard 0 on server 0"));
  CHECK_THAT(error_text(answer.error()), Catch::Contains("did not answer by its deadline"));
}

// Stands in for an aggregator in front of a shard: it gives up on every request at the
// request's deadline and says what it waited for; its failure leaves `late` after the deadline,
// as a real one's failure frame reaches the requester's node a trip after it.
push_target_actor spawn_named_giving_up(caf::actor_system& system, caf::timespan late) {
  using waiting_request = std::pair<caf::typed_response_promise<weight_set>, deadline>;
  auto waiting = std::make_shared<std::vector<waiting_request>>();
  return system.spawn([=](push_target_actor::pointer self) -> push_target_actor::behavior_type {
    // Fails each request whose deadline passed `late` ago, and only those.
    auto fail_due = [=] {
      const auto now = deadline::clock::now();
      auto& all = *waiting;
      for (auto it = all.begin(); it != all.end();) {
        if (it->second.at + late > now) {
          ++it;
          continue;
        }
        it->first.deliver(make_error(errc::timeout, "aggregator 0 waited for compute 3's push"));
        it = all.erase(it);
      }
    };
    return {
      [=](push_atom, gradient_push&) -> caf::result<weight_set> {
        return make_error(errc::bad_request, "no pushes here");
      },
      [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
        return caf::make_error(caf::sec::unexpected_message);
      },
      [=](pull_atom, deadline due) -> caf::result<weight_set> {
        if (!self->current_sender()) {
          fail_due(); // the timer below
          return make_error(errc::timeout, "the timer's own pull");
        }
        waiting->emplace_back(self->make_response_promise<weight_set>(), due);
        caf::delayed_anon_send(push_target_actor{self}, due.left() + late, pull_atom::value,
                               deadline{});
        return waiting->back().first;
      },
    };
  });
}

TEST_CASE("a far hop's failure that names its cause at the deadline reaches the requester",
          "[cluster][channel]") {
  local_node_config config = network_config();
  caf::actor_system system{config};
  server_node server(spawn_named_giving_up(system, 60ms));
  auto options = options_for(node_kind::worker, "worker 0");
  options.heartbeat_interval = 20ms; // ticks every 10 ms: well inside the failure's trip
  worker_node worker(server.port, options);
  caf::scoped_actor self{worker.system};
  for (int request = 0; request < 5; ++request) {
    INFO("request " << request);
    auto answer =
      ask(self, worker.remote, caf::make_message(pull_atom::value, deadline::after(100ms)));
    REQUIRE_FALSE(answer);
    CHECK(troupe_code(answer.error()) == errc::timeout);
    CHECK_THAT(error_text(answer.error()), Catch::Contains("waited for compute 3's push"));
  }
}

TEST_CASE("a server that goes away fails the channel's requests with peer_down",
          "[cluster][channel]") {
  auto server = std::make_unique<server_node>();
  worker_node worker(server->port);
  caf::scoped_actor self{worker.system};
  REQUIRE(ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{})));
  self->monitor(worker.channel);
  server.reset(); // its listener ends, and with it every channel it accepted
  bool down = false;
  self->receive([&](caf::down_msg& msg) { down = msg.source == worker.channel.address(); },
                caf::after(10s) >> [] {});
  CHECK(down);
  CHECK(worker.log.any_contains("closed"));
  auto answer = ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{}));
  REQUIRE_FALSE(answer);
  CHECK(troupe_code(answer.error()) == errc::peer_down);
}

TEST_CASE("a peer whose term is fenced is told so, and nothing more of it is taken",
          "[cluster][channel]") {
  server_node server;
  auto options = options_for(node_kind::worker, "worker 0");
  options.fences->set_own(7);
  const auto worker_fences = options.fences;
  worker_node worker(server.port, options);
  caf::scoped_actor self{worker.system};
  REQUIRE(ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{})));
  // The scheduler declared the worker's process lost: its next frame (a request, a heartbeat)
  // is refused, and it hears why.
  REQUIRE(server.fences->fence(7, "lost at 10:00: no frame for 3004 ms"));
  self->monitor(worker.channel);
  auto answer = ask(self, worker.remote, caf::make_message(push_atom::value, push_of_step(0)));
  REQUIRE_FALSE(answer);
  CHECK(troupe_code(answer.error()) == errc::peer_down);
  bool down = false;
  self->receive([&](caf::down_msg& msg) { down = msg.source == worker.channel.address(); },
                caf::after(10s) >> [] {});
  CHECK(down);
  CHECK(server.log.eventually_contains("fenced: lost at 10:00: no frame for 3004 ms"));
  REQUIRE(worker_fences->fenced_here());
  CHECK(*worker_fences->fenced_here() == "fenced by server 0: lost at 10:00: no frame for 3004 ms");
  // The push it sent after the fence came from a process the run has written off: the shard
  // never applied it.
  caf::scoped_actor here{server.system};
  auto direct = ask(here, server.shard, caf::make_message(pull_atom::value, deadline{}));
  REQUIRE(direct);
  CHECK(direct->updates == 0);
}

TEST_CASE("a peer that accepts and then stays silent is dropped after the connection timeout",
          "[cluster][channel]") {
  // A listening socket that never answers: like a frozen node (SIGSTOP) whose kernel still
  // accepts connections.
  std::uint16_t port = 0;
  int server = listen_on_loopback(port);

  auto options = options_for(node_kind::worker, "worker 0");
  options.connection_timeout = 600ms;
  worker_node worker(port, options);
  caf::scoped_actor self{worker.system};
  auto answer = ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{}));
  REQUIRE_FALSE(answer);
  CHECK(troupe_code(answer.error()) == errc::peer_down);
  CHECK_THAT(error_text(answer.error()), Catch::Contains("no frame from"));
  ::close(server);
}

namespace {

// The scheduler's side of the node-control protocol: passes every message on to `observer`,
// and answers a join with an assignment when `assign`.
scheduler_inbox::behavior_type scheduler_side(scheduler_inbox::pointer self, caf::actor observer,
                                              bool assign) {
  return {
    [=](join_atom, channel_actor channel, join_message& join) {
      if (!assign)
        return caf::anon_send(observer, join_atom::value, channel, std::move(join));
      assignment_message a;
      a.rank = 7;
      a.facts = data_facts{{1, 28, 28}, 10, 100, 10};
      caf::anon_send(channel, send_atom::value, wire_message{a});
      caf::anon_send(observer, join_atom::value, channel, std::move(join));
    },
    [=](ready_atom, channel_actor channel, ready_message& m) {
      caf::anon_send(observer, ready_atom::value, channel, m);
    },
    [=](traffic_atom, channel_actor channel, traffic_message& m) {
      caf::anon_send(observer, traffic_atom::value, channel, m);
    },
    [=](leave_atom, channel_actor channel, leave_message& m) {
      caf::anon_send(observer, leave_atom::value, channel, m);
    },
    [=](goodbye_atom, channel_actor channel, shutdown_message& m) {
      caf::anon_send(observer, goodbye_atom::value, channel, m);
    },
    [=](channel_lost_atom, channel_actor channel, caf::error& e) {
      caf::anon_send(observer, channel_lost_atom::value, channel, e);
    },
  };
}

// A member's side: passes every message on to `observer`.
member_inbox::behavior_type member_side(member_inbox::pointer self, caf::actor observer) {
  return {
    [=](assignment_atom, channel_actor channel, assignment_message& m) {
      caf::anon_send(observer, assignment_atom::value, channel, std::move(m));
    },
    [=](traffic_query_atom, channel_actor channel, traffic_query_message& m) {
      caf::anon_send(observer, traffic_query_atom::value, channel, m);
    },
    [=](adopt_atom, channel_actor channel, adopt_message& m) {
      caf::anon_send(observer, adopt_atom::value, channel, m);
    },
    [=](promote_atom, channel_actor channel, promote_message& m) {
      caf::anon_send(observer, promote_atom::value, channel, m);
    },
    [=](release_atom, channel_actor channel, release_message& m) {
      caf::anon_send(observer, release_atom::value, channel, m);
    },
    [=](drain_atom, channel_actor channel, drain_message& m) {
      caf::anon_send(observer, drain_atom::value, channel, m);
    },
    [=](fence_atom, channel_actor channel, fence_message& m) {
      caf::anon_send(observer, fence_atom::value, channel, m);
    },
    [=](cede_atom, channel_actor channel, cede_message& m) {
      caf::anon_send(observer, cede_atom::value, channel, m);
    },
    [=](goodbye_atom, channel_actor channel, shutdown_message& m) {
      caf::anon_send(observer, goodbye_atom::value, channel, m);
    },
    [=](channel_up_atom, channel_actor channel, std::string& peer) {
      caf::anon_send(observer, channel_up_atom::value, channel, peer);
    },
    [=](channel_lost_atom, channel_actor channel, caf::error& e) {
      caf::anon_send(observer, channel_lost_atom::value, channel, e);
    },
  };
}

} // namespace

TEST_CASE("node-level messages pass through channels to the node, typed", "[cluster][channel]") {
  log_lines log;
  local_node_config config = network_config();
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  auto scheduler_node = system.spawn(scheduler_side, caf::actor_cast<caf::actor>(self), true);
  auto options = options_for(node_kind::scheduler, "scheduler");
  options.serving->set<remote_interface::scheduler_control>(0, scheduler_node);
  options.log = log.sink();
  auto listener = spawn_listener(system, "127.0.0.1", 0, options);
  REQUIRE(listener);
  const auto port = port_of(self, *listener);

  auto worker_node = system.spawn(member_side, caf::actor_cast<caf::actor>(self));
  auto worker_options = options_for(node_kind::worker, "worker 0");
  worker_options.serving->set<remote_interface::member_control>(0, worker_node);
  worker_options.log = log.sink();
  auto channel = connect_channel(system, "127.0.0.1", port, worker_options);
  REQUIRE(channel);
  // Sent before admission completes: it waits, then goes.
  self->send(*channel, send_atom::value, wire_message{join_message{node_kind::worker, "", 0, 99}});

  bool joined = false, assigned = false;
  channel_actor accepted; // the scheduler's end
  for (int i = 0; i < 3 && !(joined && assigned); ++i)
    self->receive(
      [&](join_atom, channel_actor& from, join_message& j) {
        joined = j.pid == 99;
        accepted = from;
      },
      [&](assignment_atom, channel_actor, assignment_message& a) {
        assigned = a.rank == 7 && a.facts.classes == 10;
      },
      [&](channel_up_atom, channel_actor, std::string&) {}, caf::after(10s) >> [] {});
  CHECK(joined);
  CHECK(assigned);
  REQUIRE(accepted);
  // A worker's leave reaches the scheduler's node, the scheduler's release the worker's.
  self->send(*channel, send_atom::value, wire_message{leave_message{"SIGTERM"}});
  std::string left;
  self->receive([&](leave_atom, channel_actor, leave_message& m) { left = m.reason; },
                caf::after(10s) >> [] {});
  CHECK(left == "SIGTERM");
  self->send(accepted, send_atom::value, wire_message{release_message{false, "no other worker"}});
  std::optional<release_message> released;
  self->receive([&](release_atom, channel_actor, release_message& m) { released = m; },
                caf::after(10s) >> [] {});
  REQUIRE(released);
  CHECK_FALSE(released->granted);
  CHECK(released->reason == "no other worker");
  // The scheduler's fence reaches the member's node, and the member's channels refuse that term
  // from the moment the frame is read, before the node has taken it.
  self->send(accepted, send_atom::value, wire_message{fence_message{2, 11, "lost at 10:00"}});
  std::optional<fence_message> fence;
  self->receive([&](fence_atom, channel_actor, fence_message& m) { fence = m; },
                caf::after(10s) >> [] {});
  REQUIRE(fence);
  CHECK(fence->node == 2);
  CHECK(fence->term == 11);
  REQUIRE(worker_options.fences->fenced(11));
  CHECK(*worker_options.fences->fenced(11) == "lost at 10:00");
  for (auto& a :
       {caf::actor_cast<caf::actor>(scheduler_node), caf::actor_cast<caf::actor>(worker_node),
        caf::actor_cast<caf::actor>(*listener), caf::actor_cast<caf::actor>(*channel)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}

// Both ends of a channel say goodbye at once (a server ending a finished run while its worker
// does too): each drops what the peer sends after its own goodbye, but the peer's goodbye
// closes it at once; neither waits for the other to close first (here, an hour).
TEST_CASE("a channel whose two ends say goodbye at once closes at once", "[cluster][channel]") {
  log_lines log;
  local_node_config config = network_config();
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  auto scheduler_node = system.spawn(scheduler_side, caf::actor_cast<caf::actor>(self), false);
  auto options = options_for(node_kind::scheduler, "scheduler");
  options.connection_timeout = std::chrono::hours(1);
  options.serving->set<remote_interface::scheduler_control>(0, scheduler_node);
  options.log = log.sink();
  auto listener = spawn_listener(system, "127.0.0.1", 0, options);
  REQUIRE(listener);
  const auto port = port_of(self, *listener);
  auto worker_node = system.spawn(member_side, caf::actor_cast<caf::actor>(self));
  auto worker_options = options_for(node_kind::worker, "worker 0");
  worker_options.connection_timeout = std::chrono::hours(1);
  worker_options.serving->set<remote_interface::member_control>(0, worker_node);
  worker_options.log = log.sink();
  auto channel = connect_channel(system, "127.0.0.1", port, worker_options);
  REQUIRE(channel);
  self->send(*channel, send_atom::value, wire_message{join_message{node_kind::worker, "", 0, 99}});
  channel_actor accepted; // the scheduler's end, as its node knows it
  self->receive_while([&] { return !accepted; })(
    [&](join_atom, channel_actor& from, join_message&) { accepted = from; },
    [&](channel_up_atom, channel_actor, std::string&) {},
    caf::after(10s) >> [&] { FAIL("no join came through"); });
  const shutdown_message end{"the run finished", true};
  self->send(*channel, send_atom::value, wire_message{end});
  self->send(accepted, send_atom::value, wire_message{end});
  int closed = 0;
  bool timed_out = false;
  self->receive_while([&] { return closed < 2 && !timed_out; })(
    [&](channel_lost_atom, channel_actor, caf::error& why) {
      CHECK(!why); // a finished run's end: no error
      ++closed;
    },
    [&](goodbye_atom, channel_actor, shutdown_message&) {},
    [&](channel_up_atom, channel_actor, std::string&) {},
    caf::after(30s) >> [&] { timed_out = true; });
  CHECK(closed == 2);
  CHECK(!log.any_contains("the connection closed"));
  for (auto& a : {caf::actor_cast<caf::actor>(scheduler_node),
                  caf::actor_cast<caf::actor>(worker_node), caf::actor_cast<caf::actor>(*listener)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE("a channel without a node refuses node-level messages, and shards may be served later",
          "[cluster][channel]") {
  server_node server; // serves shard 0 only, and has no node
  worker_node worker(server.port);
  caf::scoped_actor self{worker.system};
  // Shard 1 is not served yet: a failure; once the directory has it, it answers.
  auto second = spawn_push_target_proxy(worker.system, worker.channel, 1);
  CHECK_FALSE(ask(self, second, caf::make_message(pull_atom::value, deadline{})));
  auto late = spawn_param_shard(server.system, two_keys(), momentum_sgd());
  // The listener's channels share its directory.
  caf::scoped_actor server_self{server.system};
  server.directory->set<remote_interface::push_target>(1, late);
  CHECK(ask(self, second, caf::make_message(pull_atom::value, deadline{})));

  self->send(worker.channel, send_atom::value, wire_message{ready_message{1}});
  CHECK(server.log.eventually_contains("sent a ready, which this node does not take"));
  self->send_exit(second, caf::exit_reason::user_shutdown);
  server_self->send_exit(late, caf::exit_reason::user_shutdown);
}

namespace {

// Stands in for a worker's compute actor: reports a batch to its metrics sink, then answers
// with a phase report; tells `probe` when an epoch is ended early.
compute_actor::behavior_type fake_compute(compute_actor::pointer self, metrics_sink_actor metrics,
                                          caf::actor probe) {
  return {
    [=](train_atom, std::int64_t epoch, deadline) {
      self->send(metrics, batch_report{2, epoch, 0, 1, 32, 30, 3.5, 0.1f});
      return phase_report{epoch, false, 32, 30, 3.5, 0.25, 0.2};
    },
    [=](validate_atom, std::int64_t epoch, deadline) {
      return phase_report{epoch, true, 100, 91, 20.0, 0.1, 0.0};
    },
    [=](end_epoch_atom, std::int64_t epoch) {
      caf::anon_send(probe, end_epoch_atom::value, epoch);
    },
  };
}

} // namespace

TEST_CASE("a coordinator drives a compute actor on another node through a stand-in",
          "[cluster][channel]") {
  log_lines log;
  local_node_config config = network_config();
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  // The scheduler listens; what reaches it through a channel goes to the test (handler, metrics).
  auto options = options_for(node_kind::scheduler, "scheduler");
  auto scheduler_node = system.spawn(scheduler_side, caf::actor_cast<caf::actor>(self), false);
  options.serving->set<remote_interface::scheduler_control>(0, scheduler_node);
  options.serving->set<remote_interface::metrics_sink>(
    0, metrics_sink_actor{caf::actor_cast<metrics_sink_actor>(self)});
  options.log = log.sink();
  auto listener = spawn_listener(system, "127.0.0.1", 0, options);
  REQUIRE(listener);
  const auto port = port_of(self, *listener);
  // The worker connects; its compute 2 is served to the scheduler and reports through the channel.
  auto worker_options = options_for(node_kind::worker, "worker 1");
  worker_options.log = log.sink();
  auto computes = worker_options.serving;
  auto worker_channel = connect_channel(system, "127.0.0.1", port, worker_options);
  REQUIRE(worker_channel);
  auto reports = spawn_metrics_sink_proxy(system, *worker_channel, nullptr);
  computes->set_report_path(reports);
  auto compute = system.spawn(fake_compute, reports, caf::actor_cast<caf::actor>(self));
  computes->set<remote_interface::compute_driver>(2, compute);
  self->send(*worker_channel, send_atom::value,
             wire_message{join_message{node_kind::worker, "", 0, 1}});
  channel_actor scheduler_channel;
  self->receive(
    [&](join_atom, channel_actor channel, join_message&) { scheduler_channel = channel; },
    caf::after(10s) >> [] {});
  REQUIRE(scheduler_channel);

  auto remote = spawn_compute_proxy(system, scheduler_channel, 2);
  phase_report trained;
  self->request(remote, 10s, train_atom::value, std::int64_t{4}, deadline{})
    .receive([&](phase_report& r) { trained = r; }, [&](caf::error& e) { FAIL(error_text(e)); });
  CHECK(trained.epoch == 4);
  CHECK(trained.samples == 32);
  CHECK(trained.correct == 30);
  CHECK(trained.loss_sum == 3.5);
  batch_report reported;
  self->receive([&](batch_report& r) { reported = r; }, caf::after(10s) >> [] {});
  CHECK(reported.rank == 2);
  CHECK(reported.epoch == 4);
  CHECK(reported.samples == 32);

  phase_report validated;
  self->request(remote, 10s, validate_atom::value, std::int64_t{4}, deadline{})
    .receive([&](phase_report& r) { validated = r; }, [&](caf::error& e) { FAIL(error_text(e)); });
  CHECK(validated.validation);
  CHECK(validated.correct == 91);

  self->send(remote, end_epoch_atom::value, std::int64_t{5});
  std::int64_t ended = -1;
  self->receive([&](end_epoch_atom, std::int64_t epoch) { ended = epoch; },
                caf::after(10s) >> [] {});
  CHECK(ended == 5);

  auto missing = spawn_compute_proxy(system, scheduler_channel, 7);
  caf::error err;
  self->request(missing, 10s, train_atom::value, std::int64_t{0}, deadline{})
    .receive([](phase_report&) {}, [&](caf::error& e) { err = e; });
  REQUIRE(err);
  CHECK_THAT(error_text(err), Catch::Contains("worker 1 serves no compute driver 7"));

  for (auto& a : {caf::actor_cast<caf::actor>(remote), caf::actor_cast<caf::actor>(missing),
                  caf::actor_cast<caf::actor>(compute), caf::actor_cast<caf::actor>(scheduler_node),
                  caf::actor_cast<caf::actor>(*listener), caf::actor_cast<caf::actor>(reports),
                  caf::actor_cast<caf::actor>(*worker_channel)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE("a request the encoder refuses fails alone, also when made before admission",
          "[cluster][channel]") {
  server_node server;
  worker_node worker(server.port);
  caf::scoped_actor self{worker.system};
  // Sent right after connecting, so most likely queued until the handshake is done: a push
  // whose key and tensor lists disagree cannot be encoded.
  auto bad = push_of_step(0);
  bad.gradients.pop_back();
  auto answer = ask(self, worker.remote, caf::make_message(push_atom::value, bad));
  REQUIRE_FALSE(answer);
  CHECK(troupe_code(answer.error()) == errc::bad_request);
  CHECK_THAT(error_text(answer.error()), Catch::Contains("cannot send a push"));
  CHECK_THAT(error_text(answer.error()), Catch::Contains("lists 2 keys and 1 tensors"));
  // The channel is still up and serving.
  CHECK(ask(self, worker.remote, caf::make_message(pull_atom::value, deadline{})));
}

namespace {

using go_atom = caf::atom_constant<caf::atom("testgo")>;
using recording_node = member_inbox::extend<caf::reacts_to<go_atom, channel_actor>>;

// A member node that, told its channel, asks it for shard 0's weights, and records in order what
// it hears: the channel's loss and the request's failure; tells `observer` once it has both.
recording_node::behavior_type recording_member(recording_node::pointer self, caf::actor observer,
                                               std::shared_ptr<std::vector<std::string>> heard) {
  auto done = [=] {
    if (heard->size() == 2)
      caf::anon_send(observer, std::string("heard both"));
  };
  return {
    [=](go_atom, channel_actor channel) {
      self
        ->request(channel, std::chrono::seconds(30), call_atom::value,
                  wire_message{pull_message{0, 0}}, deadline::after(std::chrono::seconds(30)))
        .then([=](wire_message&) { heard->push_back("weights"), done(); },
              [=](caf::error& err) { heard->push_back("failed: " + error_text(err)), done(); });
      caf::anon_send(observer, go_atom::value, channel); // the request is in the channel's mailbox
    },
    [=](assignment_atom, channel_actor, assignment_message&) {},
    [=](traffic_query_atom, channel_actor, traffic_query_message&) {},
    [=](adopt_atom, channel_actor, adopt_message&) {},
    [=](promote_atom, channel_actor, promote_message&) {},
    [=](release_atom, channel_actor, release_message&) {},
    [=](cede_atom, channel_actor, cede_message&) {},
    [=](drain_atom, channel_actor, drain_message&) {},
    [=](fence_atom, channel_actor, fence_message&) {},
    [=](goodbye_atom, channel_actor, shutdown_message&) {},
    [=](channel_up_atom, channel_actor, std::string&) {},
    [=](channel_lost_atom, channel_actor, caf::error& why) {
      heard->push_back("lost: " + error_text(why)), done();
    },
  };
}

} // namespace

TEST_CASE("a channel tells its node it is lost before it fails the requests waiting on it",
          "[cluster][channel]") {
  // A peer that accepts and closes at once: the request made meanwhile is waiting on the channel.
  std::uint16_t port = 0;
  int server = listen_on_loopback(port);

  log_lines log;
  local_node_config config = network_config();
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  auto heard = std::make_shared<std::vector<std::string>>();
  auto node = system.spawn(recording_member, caf::actor_cast<caf::actor>(self), heard);
  auto options = options_for(node_kind::worker, "worker 0");
  options.serving->set<remote_interface::member_control>(0, node);
  options.log = log.sink();
  auto channel = connect_channel(system, "127.0.0.1", port, options);
  REQUIRE(channel);
  self->send(node, go_atom::value, *channel);
  bool requested = false;
  self->receive([&](go_atom, channel_actor&) { requested = true; }, caf::after(30s) >> [] {});
  REQUIRE(requested);
  // The channel takes its mailbox in order: once it answers this, the pull waits on it.
  bool counted = false;
  self->request(*channel, 10s, stats_atom::value)
    .receive([&](channel_traffic&) { counted = true; }, [](caf::error&) {});
  REQUIRE(counted);
  const int accepted = ::accept(server, nullptr, nullptr);
  REQUIRE(accepted >= 0);
  ::close(accepted);
  bool both = false;
  self->receive([&](std::string&) { both = true; }, caf::after(30s) >> [] {});
  REQUIRE(both);
  REQUIRE(heard->size() == 2);
  CHECK_THAT((*heard)[0], Catch::StartsWith("lost: "));
  CHECK_THAT((*heard)[1], Catch::StartsWith("failed: "));
  self->send_exit(node, caf::exit_reason::user_shutdown);
  ::close(server);
}

namespace {

// A member node that counts what its channel tells it besides channel_up.
member_inbox::behavior_type counting_member(member_inbox::pointer,
                                            std::shared_ptr<std::atomic<int>> told) {
  return {
    [=](assignment_atom, channel_actor, assignment_message&) { ++*told; },
    [=](traffic_query_atom, channel_actor, traffic_query_message&) { ++*told; },
    [=](adopt_atom, channel_actor, adopt_message&) {},
    [=](promote_atom, channel_actor, promote_message&) {},
    [=](release_atom, channel_actor, release_message&) {},
    [=](cede_atom, channel_actor, cede_message&) {},
    [=](drain_atom, channel_actor, drain_message&) {},
    [=](fence_atom, channel_actor, fence_message&) {},
    [=](goodbye_atom, channel_actor, shutdown_message&) { ++*told; },
    [=](channel_up_atom, channel_actor, std::string&) {},
    [=](channel_lost_atom, channel_actor, caf::error&) { ++*told; },
  };
}

} // namespace

TEST_CASE(
  "a flood of heartbeats keeps no request alive past its deadline and never reaches the node",
  "[cluster][channel]") {
  local_node_config config = network_config();
  caf::actor_system system{config};
  auto pending = std::make_shared<std::vector<caf::typed_response_promise<weight_set>>>();
  push_target_actor stuck =
    system.spawn([pending](push_target_actor::pointer self) -> push_target_actor::behavior_type {
      return {
        [=](push_atom, gradient_push&) {
          pending->push_back(self->make_response_promise<weight_set>());
          return pending->back();
        },
        [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
          return caf::make_error(caf::sec::unexpected_message);
        },
        [=](pull_atom, deadline) {
          pending->push_back(self->make_response_promise<weight_set>());
          return pending->back();
        },
      };
    });
  // The server sends a heartbeat every millisecond it has sent nothing else.
  log_lines log;
  auto server_options = options_for(node_kind::server, "server 0");
  server_options.heartbeat_interval = 1ms;
  server_options.serving->set<remote_interface::push_target>(0, stuck);
  server_options.log = log.sink();
  auto listener = spawn_listener(system, "127.0.0.1", 0, server_options);
  REQUIRE(listener);
  caf::scoped_actor self{system};
  const auto port = port_of(self, *listener);
  auto told = std::make_shared<std::atomic<int>>(0);
  auto node = system.spawn(counting_member, told);
  auto options = options_for(node_kind::worker, "worker 0");
  options.serving->set<remote_interface::member_control>(0, node);
  options.log = log.sink();
  auto channel = connect_channel(system, "127.0.0.1", port, options);
  REQUIRE(channel);
  auto remote = spawn_push_target_proxy(system, *channel, 0);
  for (int i = 0; i < 2; ++i) { // the channel stays up: the second request times out as the first
    auto answer = ask(self, remote, caf::make_message(pull_atom::value, deadline::after(300ms)));
    REQUIRE_FALSE(answer);
    CHECK(troupe_code(answer.error()) == errc::timeout);
    CHECK_THAT(error_text(answer.error()), Catch::Contains("did not answer by its deadline"));
  }
  channel_traffic t;
  self->request(*channel, 10s, stats_atom::value)
    .receive([&](channel_traffic& x) { t = x; }, [](caf::error&) {});
  CHECK(t.frames_in[wire_message(heartbeat_message{}).index()] > 10);
  CHECK(told->load() == 0); // heartbeats are the channel's: the node heard nothing
  for (auto& a : {caf::actor_cast<caf::actor>(remote), caf::actor_cast<caf::actor>(stuck),
                  caf::actor_cast<caf::actor>(node), caf::actor_cast<caf::actor>(*listener),
                  caf::actor_cast<caf::actor>(*channel)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE(
  "a scheduler's channel refuses a node-level message of a kind the scheduler does not take",
  "[cluster][channel]") {
  log_lines log;
  local_node_config config = network_config();
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  auto scheduler_node = system.spawn(scheduler_side, caf::actor_cast<caf::actor>(self), false);
  auto options = options_for(node_kind::scheduler, "scheduler");
  options.serving->set<remote_interface::scheduler_control>(0, scheduler_node);
  options.log = log.sink();
  auto listener = spawn_listener(system, "127.0.0.1", 0, options);
  REQUIRE(listener);
  const auto port = port_of(self, *listener);
  auto worker_options = options_for(node_kind::worker, "worker 0");
  worker_options.log = log.sink();
  auto channel = connect_channel(system, "127.0.0.1", port, worker_options);
  REQUIRE(channel);
  // An assignment goes from the scheduler to its members, never the other way.
  self->send(*channel, send_atom::value, wire_message{assignment_message{}});
  CHECK(log.eventually_contains("sent a assignment, which this node does not take"));
  // The scheduler node heard of no assignment, only that the channel ended, and why.
  caf::error why;
  self->receive([&](channel_lost_atom, channel_actor&, caf::error& e) { why = e; },
                caf::after(10s) >> [] {});
  REQUIRE(why);
  CHECK_THAT(error_text(why), Catch::Contains("which this node does not take"));
  for (auto& a : {caf::actor_cast<caf::actor>(scheduler_node),
                  caf::actor_cast<caf::actor>(*listener), caf::actor_cast<caf::actor>(*channel)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}
