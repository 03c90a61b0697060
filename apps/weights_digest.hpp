// One line that identifies a run's final weights bit for bit: how many tensors and bytes,
// and a 64-bit FNV-1a digest over every parameter's name, shape and float32 bytes in slot
// order. `troupe train` and the scheduler of `troupe node` print it last, so runs of the same
// job in one process and across processes can be compared without writing the weights out.
#pragma once

#include <cstdint>
#include <string>

#include <troupe/actors/messages.hpp>

namespace troupe {

/// The digest over names, shapes and values (the FNV offset basis for no weights).
std::uint64_t weights_digest(const training_result& result);

/// "Final weights: T tensors, B bytes, digest 0123456789abcdef".
std::string weights_digest_line(const training_result& result);

} // namespace troupe
