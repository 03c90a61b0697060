#include <troupe/actors/actor_errors.hpp>

#include <caf/all.hpp>

namespace troupe {

namespace {
constexpr auto troupe_category = caf::atom("troupe");
constexpr std::uint8_t troupe_failure = 1;
} // namespace

caf::error make_troupe_error(const std::string& text) {
  return caf::error(troupe_failure, troupe_category, caf::make_message(text));
}

std::string error_text(const caf::error& err) {
  if (!err)
    return "no error";
  if (err.category() == troupe_category && err.context().match_elements<std::string>())
    return err.context().get_as<std::string>(0);
  if (err.category() == caf::atom("system"))
    return "actor system error: " + caf::to_string(static_cast<caf::sec>(err.code()))
           + (err.context().empty() ? "" : " " + caf::to_string(err.context()));
  return caf::to_string(err);
}

} // namespace troupe
