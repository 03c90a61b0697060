// Errors that cross actor boundaries are values (caf::error), never exceptions. Each carries
// one of a few categories, so a caller can tell a request it got wrong from data that is bad,
// a peer that died, a peer that did not answer in time, and a bug, plus a text that names what
// and where ("param_shard: gradient for key 'fc1.weight' has shape ...").
//
// Every troupe error is a caf::error of category atom("troupe") whose code is an `errc` and
// whose context is the text; CAF's own errors (request_timeout, a dead receiver) are mapped to
// the same categories by `troupe_code`, so callers switch on one enum.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>

namespace troupe {

enum class errc : std::uint8_t {
  bad_request = 1, ///< a message that cannot be served (unknown key, wrong shape, bad wiring)
  bad_data = 2,    ///< input data or files that cannot be used (missing file, label range)
  peer_down = 3,   ///< an actor this one waited on terminated
  timeout = 4,     ///< a request was not answered within its deadline
  internal = 5,    ///< anything else: a bug or an exhausted resource
};

/// "bad_request", "bad_data", "peer_down", "timeout", "internal".
const char* to_string(errc code);

/// The category atom of troupe errors.
constexpr caf::atom_value error_category = caf::atom("troupe");

/// A caf::error in the "troupe" category with `code` whose context is `text`.
caf::error make_error(errc code, const std::string& text);

/// The category of any error: troupe's own code, or CAF's mapped onto it (request_timeout ->
/// timeout; a request to a dead or unreachable actor -> peer_down; other CAF system errors ->
/// internal). Undefined for an empty error (returns internal).
errc troupe_code(const caf::error& err);

/// The text of a troupe error, or a rendering of any other CAF error.
std::string error_text(const caf::error& err);

/// Teaches an actor system to render troupe errors ("troupe.peer_down: compute 0: ..."), e.g.
/// in CAF's logs and `system.render(err)`. local_node_config does this; a host may call it on
/// its own config.
void add_error_category(caf::actor_system_config& config);

/// Thrown by blocking wrappers (run_training): the first failure's category and text.
class troupe_error : public std::runtime_error {
public:
  troupe_error(errc code, const std::string& text) : std::runtime_error(text), code_(code) {}
  errc code() const noexcept { return code_; }

private:
  errc code_;
};

/// The errc an exception thrown by a lower layer stands for: io_error and
/// std::invalid_argument/out_of_range (bad input) -> bad_data, anything else -> internal.
errc classify_exception(const std::exception& e);

} // namespace troupe
