// The server runs cpp-httplib's blocking loop on a thread of its own, with a small pool for
// requests: a page that polls every second and a Prometheus scrape need two at most. Each
// request renders a fresh snapshot, so no answer is older than its request.
#include <troupe/status/status_server.hpp>

#include <stdexcept>

#include <sys/socket.h>

#include <httplib.h>

#include <troupe/status/live_page.hpp>
#include <troupe/status/prometheus_text.hpp>
#include <troupe/status/status_json.hpp>

namespace troupe {

namespace {

constexpr std::size_t request_threads = 2;

void answer(httplib::Response& response, std::string body, const char* type) {
  response.set_header("Cache-Control", "no-store");
  response.set_content(std::move(body), type);
}

} // namespace

listen_address parse_listen_address(const std::string& text) {
  listen_address where;
  std::string port = text;
  if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    where.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (where.host.size() >= 2 && where.host.front() == '[' && where.host.back() == ']')
      where.host = where.host.substr(1, where.host.size() - 2);
    if (where.host.empty())
      throw std::invalid_argument("'" + text
                                  + "' names no host before its ':' (HOST:PORT, or "
                                    "PORT alone for 127.0.0.1)");
  }
  const bool digits =
    !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoul(port) > 65535)
    throw std::invalid_argument("'" + text + "': the port '" + port
                                + "' is not a number from 0 to 65535 (HOST:PORT or PORT)");
  where.port = static_cast<std::uint16_t>(std::stoul(port));
  return where;
}

status_server::status_server(std::shared_ptr<const run_status> status, const listen_address& where)
    : status_(std::move(status)), server_(std::make_unique<httplib::Server>()), host_(where.host) {
  auto& s = *server_;
  // SO_REUSEADDR only (httplib's default adds SO_REUSEPORT, with which a second server on the
  // same port binds and shares it, and the user is never told the port is taken).
  s.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.new_task_queue = [] { return new httplib::ThreadPool(request_threads); };
  auto status_ptr = status_;
  s.Get("/", [](const httplib::Request&, httplib::Response& r) {
    answer(r, live_page(), "text/html; charset=utf-8");
  });
  s.Get("/status", [status_ptr](const httplib::Request&, httplib::Response& r) {
    answer(r, status_json(status_ptr->snapshot()), "application/json");
  });
  s.Get("/metrics", [status_ptr](const httplib::Request&, httplib::Response& r) {
    answer(r, prometheus_text(status_ptr->snapshot()), "text/plain; version=0.0.4; charset=utf-8");
  });
  auto refuse = [](const httplib::Request&, httplib::Response& r) {
    r.status = 405;
    r.set_header("Allow", "GET, HEAD");
    r.set_content("only GET and HEAD\n", "text/plain");
  };
  s.Post(".*", refuse);
  s.Put(".*", refuse);
  s.Delete(".*", refuse);
  s.Patch(".*", refuse);
  s.set_error_handler([](const httplib::Request& q, httplib::Response& r) {
    if (r.status == 404)
      r.set_content("no " + q.path + " here: /, /status and /metrics\n", "text/plain");
  });
  const int port = where.port == 0 ? s.bind_to_any_port(where.host)
                                   : (s.bind_to_port(where.host, where.port) ? where.port : -1);
  if (port <= 0)
    throw std::runtime_error("the status server cannot listen on " + where.host + ":"
                             + std::to_string(where.port)
                             + " (in use, or not an address of this host)");
  port_ = static_cast<std::uint16_t>(port);
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    finished_ = true;
  });
}

status_server::~status_server() {
  // stop() reaches the loop only once it runs: a server stopped as it starts waits for that
  // (a few instructions), or for the loop to have ended by itself.
  while (!finished_ && !server_->is_running())
    std::this_thread::yield();
  server_->stop();
  if (thread_.joinable())
    thread_.join();
}

std::string status_server::url() const {
  const bool six = host_.find(':') != std::string::npos;
  return "http://" + (six ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_) + "/";
}

} // namespace troupe
