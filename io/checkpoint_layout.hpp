// Private to io/: the way back from a decoded safetensors file to a training_checkpoint
// (checkpoint_layout.cpp), apart from the writer so each side reads top-down.
#pragma once

#include <string>

#include <troupe/io/checkpoint_file.hpp>

namespace troupe {

/// The checkpoint the tensors and metadata describe; io_error starting with `path` for a
/// missing or malformed key, a missing or extra tensor, or shapes that disagree.
training_checkpoint checkpoint_of(const std::string& path, safetensors_content content);

} // namespace troupe
