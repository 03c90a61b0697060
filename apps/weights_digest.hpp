// One line that identifies a run's final weights bit for bit: how many tensors and bytes,
// and a 64-bit FNV-1a digest over every parameter's name, shape and float32 bytes in slot
// order. `troupe train` and the scheduler of `troupe node` print it last, so runs of the same
// job in one process and across processes can be compared without writing the weights out.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <troupe/actors/messages.hpp>

namespace troupe {

/// The digest over names, shapes and values (the FNV offset basis for no weights).
std::uint64_t weights_digest(const training_result& result);

/// "Final weights: T tensors, B bytes, digest 0123456789abcdef".
std::string weights_digest_line(const training_result& result);

/// The exit status of a run that ended without an error: 0 when it has final weights, also
/// when it trained no epoch (a run resumed from the checkpoint of its last epoch, as `troupe
/// launch --max-restarts` does when a job failed after saving it); else 1, saying why on `err`.
int finished_run_status(const training_result& result, std::ostream& err);

} // namespace troupe
