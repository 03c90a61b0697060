// A run's status in Prometheus' text exposition format (version 0.0.4), what the status
// server's /metrics answers: every family with its # HELP and # TYPE, counters ending in
// _total, units in the names (seconds, bytes), label values escaped. What it holds is listed
// in docs/operations.md ("The status server").
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <troupe/actors/run_status.hpp>

namespace troupe {

std::string prometheus_text(const status_snapshot& status);

/// A label value as the format writes it: backslash, double quote and line feed escaped.
std::string prometheus_label_value(const std::string& text);

} // namespace troupe
