// The status server: what `--status-listen ADDR:PORT` serves while a run trains, on the one
// process of `troupe train` or a cluster's scheduler. HTTP through cpp-httplib (Debian's
// libcpp-httplib), on threads of its own: a slow or stuck client never holds an actor.
//
// Protocol (HTTP GET or HEAD; anything else is answered 405, an unknown path 404):
//   /         the live page (live_page.html, served whole: it loads nothing from elsewhere),
//             which reads /status every second
//   /status   the run's status as JSON, application/json (status_json.hpp; its schema is in
//             docs/operations.md, "The status server")
//   /metrics  the same figures in Prometheus' text exposition format 0.0.4 (prometheus_text.hpp)
//
// Thread-safety: construct and destroy on one thread; the server's threads only read the
// run_status, which is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <troupe/actors/run_status.hpp>

namespace httplib {
class Server;
}

namespace troupe {

/// Where the server listens: `--status-listen`'s value.
struct listen_address {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0; ///< 0: a free port the system picks
};

/// "PORT" (on loopback, 127.0.0.1), "HOST:PORT" or "[IPV6]:PORT"; throws std::invalid_argument
/// saying what is wrong with `text` (no port, a port out of 0-65535, an empty host).
listen_address parse_listen_address(const std::string& text);

class status_server {
public:
  /// Binds `where` and starts serving `status`. Throws std::runtime_error naming the address
  /// when it cannot be bound (in use, not this host's).
  status_server(std::shared_ptr<const run_status> status, const listen_address& where);
  /// Stops serving (a request in flight is finished first) and joins the server's thread.
  ~status_server();
  status_server(const status_server&) = delete;
  status_server& operator=(const status_server&) = delete;

  /// The port bound (the system's pick when asked for 0).
  std::uint16_t port() const { return port_; }
  /// "http://127.0.0.1:8080/".
  std::string url() const;

private:
  std::shared_ptr<const run_status> status_;
  std::unique_ptr<httplib::Server> server_;
  std::string host_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> finished_{false}; ///< the serving loop has returned
};

} // namespace troupe
