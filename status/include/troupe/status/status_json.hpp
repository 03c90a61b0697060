// A run's status as the JSON of the status server's /status: one object, its schema listed in
// docs/operations.md ("The status server") and kept by a test that reads it back.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <troupe/actors/run_status.hpp>

namespace troupe {

/// The schema's version, the object's "schema" field: raised when a field changes meaning or
/// goes (a new field does not raise it).
constexpr int status_schema_version = 1;

std::string status_json(const status_snapshot& status);

} // namespace troupe
