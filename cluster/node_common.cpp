#include "node_common.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include <caf/actor_system.hpp>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

channel_options channel_options_of(const node_options& options, node_kind role,
                                   const std::string& name,
                                   std::shared_ptr<traffic_registry> traffic) {
  channel_options channel{options.secret};
  channel.traffic = std::move(traffic);
  channel.role = role;
  channel.name = name;
  channel.heartbeat_interval = options.heartbeat_interval;
  channel.connection_timeout = options.connection_timeout;
  channel.tcp_congestion = options.tcp_congestion;
  if (options.log)
    channel.log = options.log;
  return channel;
}

channel_options channel_options_of(const member_options& options, const std::string& name,
                                   std::shared_ptr<traffic_registry> traffic) {
  auto channel = channel_options_of(options, options.role, name, std::move(traffic));
  channel.position = options.position;
  return channel;
}

void log_node_line(const node_options& options, const std::string& line) {
  if (options.log)
    options.log(line);
  else
    std::cerr << (line + "\n") << std::flush; // one write: processes may share the stream
}

std::string advertised_host(const member_options& options) {
  return options.advertise_host.empty() ? options.listen_host : options.advertise_host;
}

std::string host_of_address(const std::string& address) {
  const auto colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0
         || host.rfind("::ffff:127.", 0) == 0;
}

bool is_wildcard_host(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

std::string clock_time_now() {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
    std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::snprintf(text, sizeof text, "%02d:%02d:%02d.%03d UTC", utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));
  return text;
}

std::string reason_text(caf::actor_system& system, const caf::error& reason) {
  if (!reason)
    return "it ended";
  if (reason.category() == error_category)
    return error_text(reason);
  return system.render(reason);
}

} // namespace troupe
