#include <troupe/actors/actor_errors.hpp>

#include <caf/all.hpp>

#include <troupe/io/dataset.hpp>

namespace troupe {

const char* to_string(errc code) {
  switch (code) {
  case errc::bad_request:
    return "bad_request";
  case errc::bad_data:
    return "bad_data";
  case errc::peer_down:
    return "peer_down";
  case errc::timeout:
    return "timeout";
  case errc::internal:
    return "internal";
  }
  return "internal";
}

caf::error make_error(errc code, const std::string& text) {
  return caf::error(static_cast<std::uint8_t>(code), error_category, caf::make_message(text));
}

errc troupe_code(const caf::error& err) {
  if (err.category() == error_category && err.code() >= 1 && err.code() <= 5)
    return static_cast<errc>(err.code());
  if (err.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(err.code())) {
    case caf::sec::request_timeout:
      return errc::timeout;
    case caf::sec::request_receiver_down:
    case caf::sec::remote_linking_failed:
    case caf::sec::no_route_to_receiving_node:
    case caf::sec::cannot_connect_to_node:
      return errc::peer_down;
    default:
      return errc::internal;
    }
  }
  if (err.category() == caf::atom("exit"))
    return errc::peer_down;
  return errc::internal;
}

std::string error_text(const caf::error& err) {
  if (!err)
    return "no error";
  if (err.category() == error_category && err.context().match_elements<std::string>())
    return err.context().get_as<std::string>(0);
  if (err.category() == caf::atom("system"))
    return "actor system error: " + caf::to_string(static_cast<caf::sec>(err.code()))
           + (err.context().empty() ? "" : " " + caf::to_string(err.context()));
  return caf::to_string(err);
}

void add_error_category(caf::actor_system_config& config) {
  config.add_error_category(
    error_category, [](std::uint8_t code, caf::atom_value, const caf::message& context) {
      std::string text = "troupe.";
      text += code >= 1 && code <= 5 ? to_string(static_cast<errc>(code)) : "unknown";
      if (context.match_elements<std::string>())
        text += ": " + context.get_as<std::string>(0);
      return text;
    });
}

errc classify_exception(const std::exception& e) {
  if (dynamic_cast<const io_error*>(&e) || dynamic_cast<const std::invalid_argument*>(&e)
      || dynamic_cast<const std::out_of_range*>(&e))
    return errc::bad_data;
  return errc::internal;
}

} // namespace troupe
