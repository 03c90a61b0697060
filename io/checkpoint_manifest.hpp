// Private to io/: a cluster checkpoint's manifest as JSON and back. The manifest is the only
// file that says which parts make the checkpoint, so it is read strictly (strict_json.hpp):
// every member named below must be there with its type, no other member may be, and a
// version other than 1 is refused rather than guessed at.
//
//   {"format": "troupe checkpoint manifest", "version": 1, "epoch": 3, "network": "mlp",
//    "steps_per_epoch": 32, "workers": 2, "shards": 2,
//    "parameters": [{"name": "fc1.weight", "shape": [128, 144]}, ...],
//    "parts": [{"file": "m-0003.server_0.safetensors", "bytes": 81920,
//               "checksum": "sha256:..."}, ...]}
#pragma once

#include <string>
#include <vector>

#include <troupe/io/checkpoint_parts.hpp>

namespace troupe {

struct checkpoint_manifest {
  checkpoint_header header;
  std::vector<part_record> parts;
};

/// The manifest's text; std::invalid_argument for no parts, a file name given twice or not a
/// plain name, names and shapes of different counts, or no worker or shard.
std::string encode_checkpoint_manifest(const checkpoint_header& header,
                                       const std::vector<part_record>& parts);

/// The manifest `text` (of the file `path`) says; io_error starting with `path` otherwise.
checkpoint_manifest decode_checkpoint_manifest(const std::string& path, const std::string& text);

} // namespace troupe
