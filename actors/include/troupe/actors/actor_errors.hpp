// Errors that cross actor boundaries are values (caf::error), never exceptions: an actor that
// catches an exception turns it into a `troupe` error carrying the text, so the requester can
// report exactly what went wrong and where.
#pragma once

#include <string>

#include <caf/error.hpp>

namespace troupe {

/// A caf::error in the "troupe" category whose context is `text`.
caf::error make_troupe_error(const std::string& text);
/// The text of a troupe error, or a rendering of any other CAF error.
std::string error_text(const caf::error& err);

} // namespace troupe
