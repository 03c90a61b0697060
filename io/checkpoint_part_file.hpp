// Private to io/: one cluster checkpoint part as a safetensors file and back
// (checkpoint_parts.hpp has the overview, docs/checkpoints.md the names):
//
//   tensors   "key/<slot>@<offset>"       a shard key's weights (flat, or the parameter's shape
//                                         when the key is the whole parameter)
//             "<state>/<slot>@<offset>"   its optimizer state tensors, the same shape
//                                         (optimizer_state_names: SGD's "momentum", ...)
//             "worker<w>/<buffer>"        worker w's buffers
//   metadata  troupe.format = "1", troupe.kind = "part", troupe.epoch,
//             troupe.part.shards (indices, comma-separated), troupe.shard.<r> (counters),
//             troupe.shard.<r>.keys ("<slot>@<offset>,..." in the shard's key order),
//             optimizers other than SGD: troupe.shard.<r>.optimizer (its name) and
//             troupe.shard.<r>.steps (each key's update count, comma-separated, key order),
//             so an SGD part is what it always was,
//             troupe.part.workers (indices), troupe.worker.<w>.buffers (names, one per line),
//             troupe.worker.<w>.streams, troupe.crc32 (as the one-process file)
//
// Parameters are named by slot: a server knows its keys, and the manifest names the slots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <troupe/io/checkpoint_parts.hpp>

namespace troupe {

/// A part's file bytes; std::invalid_argument for an inconsistent part (see
/// write_checkpoint_part).
std::vector<std::uint8_t> encode_checkpoint_part(const std::string& path, std::int64_t epoch,
                                                 const checkpoint_part& part);

struct decoded_part {
  std::int64_t epoch = 0;
  checkpoint_part part;
};

/// Checks the part's own checksum and layout; io_error starting with `path` otherwise.
decoded_part decode_checkpoint_part(const std::string& path,
                                    const std::vector<std::uint8_t>& bytes);

} // namespace troupe
