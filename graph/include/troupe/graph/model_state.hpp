// What a model replica holds besides its parameters, as a value a checkpoint can keep
// (replica_state, troupe/io/checkpoint_file.hpp): the buffers (batch-norm running statistics)
// and the positions of the layers' random streams (dropout). The parameters are the shards'
// business; these are the replica's own and differ between workers.
//
// Thread-safety: as `model` (one user at a time).
#pragma once

#include <troupe/graph/model.hpp>
#include <troupe/io/checkpoint_file.hpp>

namespace troupe {

/// Copies of the buffers (in the model's order, with their names) and the stream positions.
/// Throws std::logic_error for a model on a GPU.
replica_state capture_replica_state(model& replica);

/// Puts `state` into the model: all of it or, on a mismatch, nothing. Throws
/// std::invalid_argument naming the first buffer whose name or shape differs (or a count that
/// differs) or a stream the model lacks; std::logic_error for a model on a GPU.
void restore_replica_state(model& replica, const replica_state& state);

} // namespace troupe
