// `troupe ctl status` for a person: the status server's /status document (status_json.hpp) as
// a few lines (where the run is, its nodes with their ranks and speeds, stragglers, faults).
#pragma once

#include <string>

namespace troupe {

/// The lines for `document`; std::invalid_argument when it is not such a document.
std::string status_text(const std::string& document);

} // namespace troupe
