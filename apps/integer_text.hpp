// The one reading of an integer from text in apps/: flag values, launcher variables
// (OMP_NUM_THREADS, DMLC_NUM_WORKER, OMPI_COMM_WORLD_RANK, ...), COLUMNS, list elements.
//
// Strict on purpose, as the config language is for its integer keys: an optional '-', then
// decimal digits, nothing else. No '+', spaces, fraction or exponent (`1e+09` and `1e30` are
// refused, not read as 1 or clamped), no trailing text (`12x`), nothing beyond 64 bits. strtol
// accepts most of those, and a mistyped value would slip through as another number.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

/// `text` as a decimal integer, or nothing when it is not one (or does not fit 64 bits).
std::optional<std::int64_t> parse_integer(std::string_view text);

/// The same for a flag's value, in [min, max]. Throws usage_error "--FLAG: 'TEXT' is not an
/// integer" or "--FLAG: TEXT is out of range (MIN to MAX)".
std::int64_t flag_integer(const std::string& flag, const std::string& text,
                          std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX);

} // namespace troupe
